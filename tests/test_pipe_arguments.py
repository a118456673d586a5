"""A bad constructor keyword is a ``UsageError`` naming the keyword and what it got, for every pipe.

Every provider pipe (from the registry, so a new one is covered), the base ``Pipe`` and
``StrategyPipe``, each given every bad value of every keyword it takes. Which pipe takes which
keyword, and whether it takes ``None``, is read from its signature: a keyword whose default is
``None`` takes ``None``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import pytest

from reasoning_stream import Pipe, UsageError
from reasoning_stream.prompting import ChainOfThought, StrategyPipe
from reasoning_stream.providers._spec import pipe_class, pipe_names
from reasoning_stream.testing import ScriptedPipe

# One model each provider pipe accepts without a warning; the tests vary the keywords.
MODELS = {
    "OpenAIChatPipe": "o4-mini",
    "OpenAIResponsesPipe": "o4-mini",
    "OpenRouterPipe": "deepseek/deepseek-r1",
    "AnthropicPipe": "claude-sonnet-4-5",
    "BedrockPipe": "us.anthropic.claude-sonnet-4-5-v1:0",
    "GeminiPipe": "gemini-2.5-flash",
    "OllamaPipe": "qwen3",
}


def _provider(name: str) -> Callable[..., Pipe]:
    kind = pipe_class(name)
    return lambda **keywords: kind(MODELS[name], **keywords)


def _strategy(**keywords: Any) -> Pipe:
    return StrategyPipe(ScriptedPipe([]), ChainOfThought(), **keywords)


BUILDERS: dict[str, tuple[Callable[..., Pipe], Any]] = {
    "Pipe": (Pipe, Pipe),
    "StrategyPipe": (_strategy, StrategyPipe),
    **{name: (_provider(name), pipe_class(name)) for name in pipe_names()},
}

BAD: dict[str, list[Any]] = {
    "name": [42, b"pipe", ["pipe"]],
    "escape_markers": ["yes", 1, 0, None],
    "stream_model_reasoning": ["no", 1, None],
    "timeout": [0, -1, -0.5, "30", True, math.nan, None],
    "start_in_reasoning": ["yes", 1, 0, None],
    "extra_body": [[("a", 1)], "x", 42],
}


def _cases() -> list[Any]:
    cases = []
    for pipe, (_, kind) in BUILDERS.items():
        parameters = inspect.signature(kind).parameters
        for keyword, values in BAD.items():
            if keyword not in parameters:
                continue
            for value in values:
                if value is None and parameters[keyword].default is None:
                    continue  # None is this keyword's default here: taken.
                cases.append(pytest.param(pipe, keyword, value, id=f"{pipe}-{keyword}={value!r}"))
    return cases


CASES = _cases()


def test_every_pipe_and_keyword_is_covered() -> None:
    """The table names every provider pipe, and each keyword is tried on the pipes taking it."""
    assert set(MODELS) == set(pipe_names())
    tried = {(pipe, keyword) for pipe, keyword, _ in (case.values for case in CASES)}
    for pipe in pipe_names():
        assert {keyword for name, keyword in tried if name == pipe} == set(BAD), pipe
    assert {keyword for name, keyword in tried if name == "Pipe"} >= {"name", "escape_markers"}
    assert {keyword for name, keyword in tried if name == "StrategyPipe"} >= {"name"}


@pytest.mark.parametrize(("pipe", "keyword", "value"), CASES)
def test_a_bad_keyword_is_a_usage_error_naming_it(pipe: str, keyword: str, value: Any) -> None:
    build, _ = BUILDERS[pipe]
    with pytest.raises(UsageError) as raised:
        build(**{keyword: value})
    message = str(raised.value)
    assert f"{keyword}=" in message or f"{keyword} " in message, message
    assert repr(value) in message, message


@pytest.mark.parametrize("pipe", list(BUILDERS))
def test_good_keywords_are_kept(pipe: str) -> None:
    build, kind = BUILDERS[pipe]
    parameters = inspect.signature(kind).parameters
    good: dict[str, Any] = {"name": "mine", "escape_markers": False}
    good.update(
        (keyword, value)
        for keyword, value in (
            ("timeout", 2.5),
            ("start_in_reasoning", True),
            ("extra_body", {"grammar": "root ::= x"}),
        )
        if keyword in parameters
    )
    built = build(**good)
    for keyword, value in good.items():
        assert getattr(built, keyword) == value, keyword


# --------------------------------------------------------------------------- reasoning=


@pytest.mark.parametrize("pipe", pipe_names())
@pytest.mark.parametrize("reasoning", ["extreme", 1.5, -1, b"high"])
def test_a_bad_reasoning_setting_is_both_a_usage_error_and_a_value_error(
    pipe: str, reasoning: Any
) -> None:
    build, _ = BUILDERS[pipe]
    with pytest.raises(UsageError, match="reasoning=") as raised:
        build(reasoning=reasoning)
    assert isinstance(raised.value, ValueError)
    with pytest.raises(ValueError, match="reasoning="):
        build(reasoning=reasoning)


def test_a_setting_the_model_cannot_take_is_both_too() -> None:
    """reasoning=0 means nothing for Claude: refused by the model's plan, at construction."""
    build, _ = BUILDERS["AnthropicPipe"]
    with pytest.raises(UsageError, match="reasoning=0") as raised:
        build(reasoning=0)
    assert isinstance(raised.value, ValueError)
    try:
        build(reasoning=0)
    except UsageError as caught:  # what a user catching this library's misuse writes
        assert "reasoning=0" in str(caught)
