"""A translator reads a lean transport's dicts exactly as its generic readers do, as a law.

The translators read a chunk that is a plain ``dict`` (what the lean transports decode) straight
off its dicts, and anything else (the SDKs' model objects, other mappings) through the generic
field readers. Both ways must give the same events, or the same error, for any chunk: every
chunk of every bundled transcript of the provider, with a few values (in one chunk, or in every
chunk that has the field) replaced by any JSON value (the wrong type, ``null``, an empty string
or object, a list for an object), fed in the recorded order. The other side is the same data in
a ``dict`` subclass, which only the generic readers take. (That the generic readers read the
SDKs' objects as the lean transports' dicts is the parity test's part:
tests/providers/test_lean_transports.py.) Whatever the damage, the events keep their types.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream._events import OpaqueState, ReasoningDelta, TextDelta, ToolCall, UsageReport
from reasoning_stream._exceptions import ReasoningStreamError
from reasoning_stream.providers.anthropic.translate import AnthropicTranslator
from reasoning_stream.providers.gemini.translate import GeminiTranslator
from reasoning_stream.providers.ollama.translate import OllamaTranslator
from reasoning_stream.providers.openai_chat.translate import OpenAIChatTranslator
from reasoning_stream.providers.openai_responses.translate import OpenAIResponsesTranslator
from reasoning_stream.testing import Transcript
from tests.helpers import examples
from tests.reliability import paths, replaced


class Plain(dict[str, Any]):
    """A dict in all but its type: the translators' ``type(x) is dict`` short ways pass it by,
    and their generic readers (an SDK model's attribute, else a mapping's ``get``) read it."""

    __slots__ = ()


def _generic(value: Any) -> Any:
    """``value`` with every JSON object a :class:`Plain`: the same data, read the generic way."""
    if type(value) is dict:
        return Plain({key: _generic(item) for key, item in value.items()})
    if type(value) is list:
        return [_generic(item) for item in value]
    return value


def _streams(prefix: str) -> list[list[Any]]:
    """The JSON object chunks of each bundled streaming transcript named ``prefix*``."""
    streams: list[list[Any]] = []
    for name in Transcript.bundled():
        if not name.startswith(prefix) or "oneshot" in name:
            continue
        transcript = Transcript.load(name)
        if transcript.format == "ndjson":
            chunks = [event for event in transcript.events if isinstance(event, dict)]
        elif transcript.format == "sse":
            data = [event.get("data") for event in transcript.events if isinstance(event, dict)]
            chunks = [item for item in data if isinstance(item, dict)]
        else:
            continue
        if chunks:
            streams.append(chunks)
    return streams


def _still() -> float:
    """A clock that stands still: hidden reasoning's duration is the same in every reading."""
    return 0.0


PROVIDERS: dict[str, tuple[Callable[[], Any], list[list[Any]]]] = {
    "anthropic": (lambda: AnthropicTranslator(model="m", clock=_still), _streams("anthropic_")),
    "openai-responses": (
        lambda: OpenAIResponsesTranslator(model="m", clock=_still),
        _streams("openai_responses_"),
    ),
    "openai-chat": (
        lambda: OpenAIChatTranslator(provider="openai-chat", model="m"),
        _streams("openai_chat_") + _streams("openrouter_"),
    ),
    "ollama-chat": (lambda: OllamaTranslator(model="m"), _streams("ollama_chat_")),
    "ollama-generate": (
        lambda: OllamaTranslator(model="m", api="generate"),
        _streams("ollama_generate_"),
    ),
    "gemini": (lambda: GeminiTranslator(model="m"), _streams("gemini_")),
}

JSON = st.recursive(
    st.none()
    | st.just({})
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, width=16)
    | st.sampled_from(["", "x", "thinking_delta", "text_delta", "STOP", "<think>", "0"]),
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "text", "type"]), inner, max_size=2)
    ),
    max_leaves=4,
)


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _has(value: Any, path: tuple[Any, ...]) -> bool:
    """Whether ``path`` leads to a value inside ``value`` (through objects and arrays only)."""
    for step in path:
        if (isinstance(value, dict) and step in value) or (
            isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value)
        ):
            value = value[step]
        else:
            return False
    return bool(path)


def outcome(make: Callable[[], Any], chunks: list[Any]) -> list[Any]:
    """Each chunk's events then the end's, or where an error stopped the feed."""
    translator = make()
    steps: list[Any] = []
    try:
        for chunk in chunks:
            steps.append(translator.feed(chunk))
        steps.append(translator.finish())
    except (ReasoningStreamError, TypeError, ValueError, AttributeError, KeyError) as error:
        steps.append((type(error).__name__, getattr(error, "status_code", None)))
    return [repr(step) for step in steps]


def _count(value: Any) -> bool:
    return value is None or type(value) is int


def assert_well_typed(make: Callable[[], Any], chunks: list[Any]) -> None:
    """Whatever the damage, what comes out has the types the events promise: a delta is
    non-empty text (``null``, a number or an object in a text field is no text), a count is
    an int or unknown (a JSON ``true`` is no count), a tool call is named by strings."""
    translator = make()
    events: list[Any] = []
    try:
        for chunk in chunks:
            events += translator.feed(chunk)
        events += translator.finish()
    except ReasoningStreamError:
        pass
    for event in events:
        if isinstance(event, ReasoningDelta | TextDelta):
            assert type(event.text) is str and event.text, event
        elif isinstance(event, UsageReport):
            usage = event.usage
            assert all(map(_count, (usage.input_tokens, usage.output_tokens)))
            assert _count(usage.reasoning_tokens), event
        elif isinstance(event, ToolCall):
            assert all(type(v) is str for v in (event.id, event.name, event.arguments)), event
        elif isinstance(event, OpaqueState) and event.state.provider == "gemini":
            # "<candidate>:<part>", both numbers (a JSON true is no candidate index)
            assert re.fullmatch(r"-?\d+:\d+", str(event.state.block)), event


def check(make: Callable[[], Any], damaged: list[Any]) -> None:
    assert outcome(make, damaged) == outcome(make, [_generic(chunk) for chunk in damaged])
    assert_well_typed(make, damaged)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_a_dict_chunk_reads_as_the_same_chunk_read_generically(provider: str, data: Any) -> None:
    make, streams = PROVIDERS[provider]
    assert streams, f"no bundled transcript for {provider}"
    damaged = list(data.draw(st.sampled_from(streams)))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        every = list(paths(damaged[at]))
        leaves = [path for path in every if not isinstance(_at(damaged[at], path), dict | list)]
        # Mostly a field's value (a text, a type, an index), now and then a whole object; in
        # this chunk, or in every chunk that has the field.
        where = data.draw(
            st.sampled_from(leaves)
            if leaves and data.draw(st.integers(0, 3))
            else st.sampled_from(every)
        )
        value = data.draw(JSON)
        targets = range(len(damaged)) if data.draw(st.booleans()) else [at]
        for target in targets:
            if target == at or _has(damaged[target], where):
                damaged[target] = replaced(damaged[target], where, value)
    check(make, damaged)


WRONG = [None, True, 0, 2, 1.5, "", "x", [], ["x"], {}, {"type": "x"}]
"""A value of every JSON kind, each wrong somewhere."""


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_every_field_of_every_kind_of_chunk_with_every_kind_of_value(provider: str) -> None:
    """The same law, swept: in each transcript, the first chunk of each shape has each of its
    fields (objects and arrays included) replaced by each kind of value in turn."""
    make, streams = PROVIDERS[provider]
    for stream in streams:
        shapes = set()
        for at, chunk in enumerate(stream):
            shape = (chunk.get("type"), tuple(paths(chunk)))
            if shape in shapes:
                continue
            shapes.add(shape)
            for where in list(paths(chunk))[1:]:
                for value in WRONG:
                    damaged = list(stream)
                    damaged[at] = replaced(chunk, where, value)
                    check(make, damaged)
