"""Each effort and display row of the model profiles, through the real SDK onto the wire.

Every case builds the provider's pipe with its official client aimed at the loopback
WireServer, runs one turn, and asserts the fields of the request body the server received
(and the fields it must not carry). The doc each row follows is cited beside the case; where
issue 23 is the only source, the profile row says so in its note.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest

from reasoning_stream import _effort, profiles
from reasoning_stream._effort import ReasoningWarning, rooted_examples, table_examples
from reasoning_stream.profiles import UnknownModelWarning
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.testing import Transcript, WireServer
from tests.providers.conftest import bedrock_client

DASHSCOPE = "https://dashscope.aliyuncs.com/compatible-mode/v1"
XAI = "https://api.x.ai/v1"
ARN = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/effort-rows-test"


def _routed(name: str, path: str | None = None) -> Transcript:
    transcript = Transcript.load(name)
    return transcript if path is None else dataclasses.replace(transcript, path=path)


@pytest.fixture(autouse=True)
def _fresh_warning_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its rows' warnings: one issued once per process may have been spent
    by an earlier test (a docs snippet planning the same model), whatever the order."""
    monkeypatch.setattr(_effort, "_warned", set())


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer(
        _routed("openai_chat_reasoning_content"),
        _routed("openai_responses_summary"),
        _routed("anthropic_thinking"),
        _routed("bedrock_converse_reasoning"),
        _routed("bedrock_invoke_anthropic_thinking"),
        _routed("gemini_reasoning", "/v1beta/models/{model}:streamGenerateContent"),
        _routed("ollama_chat_reasoning"),
        _routed("openrouter_reasoning"),
    ) as running:
        yield running


@dataclass(frozen=True)
class Case:
    """One row: the pipe, its model and settings, what the body holds and must not hold."""

    provider: str
    model: str
    options: dict[str, Any]
    sent: dict[str, Any]
    absent: tuple[str, ...] = ()
    warns: tuple[str, ...] = ()
    """Words a ReasoningWarning issued while planning must hold (all of them)."""
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _pipe(case: Case, server: WireServer) -> ProviderPipe:
    options = dict(case.options)
    if case.provider == "openai-chat":
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        return OpenAIChatPipe(case.model, client=client, **options)
    if case.provider == "openai-responses":
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        return OpenAIResponsesPipe(case.model, client=client, **options)
    if case.provider == "anthropic":
        messages = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        return AnthropicPipe(case.model, client=messages, **options)
    if case.provider == "bedrock":
        return BedrockPipe(case.model, client=bedrock_client(server), **options)
    if case.provider == "gemini":
        return GeminiPipe(
            case.model, client=httpx.Client(), base_url=server.url + "/v1beta", **options
        )
    if case.provider == "ollama":
        return OllamaPipe(case.model, client=ollama.Client(host=server.url), **options)
    assert case.provider == "openrouter"
    return OpenRouterPipe(
        case.model, client=httpx.Client(), base_url=server.url + "/api/v1", **options
    )


def _at(body: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(body, dict) or key not in body:
            return _MISSING
        body = body[key]
    return body


_MISSING = object()

CASES = [
    # ----------------------------------------------------------------------- Anthropic
    # output_config.effort takes low, medium, high, xhigh, max (anthropic SDK OutputConfigParam;
    # platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7).
    Case(
        "anthropic",
        "claude-opus-4-7",
        {"reasoning": "xhigh"},
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}},
    ),
    # The full ladder up to max on Opus 5 (platform.claude.com .../whats-new-opus-5).
    Case(
        "anthropic",
        "claude-opus-5",
        {"reasoning": "max"},
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}},
    ),
    # Opus 5 thinks by default; its documented off switch is {type: disabled}, accepted only at
    # effort high or below, so no effort goes with it (whats-new-opus-5).
    Case(
        "anthropic",
        "claude-opus-5",
        {"reasoning": False},
        {"thinking": {"type": "disabled"}},
        absent=("output_config",),
    ),
    Case("anthropic", "claude-sonnet-5", {"reasoning": False}, {"thinking": {"type": "disabled"}}),
    # Issue 23: Sonnet 5.5 thinks by default (its row's note).
    Case(
        "anthropic", "claude-sonnet-5-5", {"reasoning": False}, {"thinking": {"type": "disabled"}}
    ),
    # Issue 23: Opus 5.5, Fable and Mythos always think; "disabled" would be a 400.
    Case(
        "anthropic",
        "claude-opus-5-5",
        {"reasoning": False},
        {},
        absent=("thinking", "output_config"),
        warns=("always thinks",),
    ),
    Case(
        "anthropic",
        "claude-fable-5-1",
        {"reasoning": False},
        {},
        absent=("thinking",),
        warns=("always thinks",),
    ),
    Case(
        "anthropic",
        "claude-mythos-preview",
        {"reasoning": False},
        {},
        absent=("thinking",),
        warns=("always thinks",),
    ),
    # 4.6 documents low, medium, high, max: xhigh is as near to high as to max; the lower wins.
    Case(
        "anthropic",
        "claude-sonnet-4-6",
        {"reasoning": "xhigh"},
        {"output_config": {"effort": "high"}},
        warns=("'xhigh'", "'high'"),
    ),
    # No "none" level on Claude: the nearest documented one, low.
    Case(
        "anthropic",
        "claude-opus-5",
        {"reasoning": "none"},
        {"output_config": {"effort": "low"}},
        warns=("'none'", "'low'"),
    ),
    # Claude 4.7+ default to display omitted; summarized shows the thinking
    # (platform.claude.com/docs/en/build-with-claude/thinking#controlling-thinking-display).
    Case(
        "anthropic",
        "claude-opus-4-7",
        {"reasoning": "high", "reasoning_display": "summarized"},
        {"thinking": {"type": "adaptive", "display": "summarized"}},
    ),
    Case(
        "anthropic",
        "claude-opus-4-7",
        {"reasoning": "high", "reasoning_display": "full"},
        {"thinking": {"type": "adaptive", "display": "summarized"}},
        warns=("'full'", "'summarized'"),
    ),
    # A default-on model with only a display: its default thinking, shown as asked.
    Case(
        "anthropic",
        "claude-opus-5",
        {"reasoning_display": "summarized"},
        {"thinking": {"type": "adaptive", "display": "summarized"}},
        absent=("output_config",),
    ),
    # Sonnet 4.5 documents summarized thinking only: omitted is planned as summarized, its
    # default, so no display field is sent to a model that may not know it.
    Case(
        "anthropic",
        "claude-sonnet-4-5",
        {"reasoning": "low", "reasoning_display": "omitted"},
        {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        absent=("thinking.display",),
        warns=("'omitted'", "'summarized'"),
    ),
    # ------------------------------------------------------------------------- Bedrock
    Case(
        "bedrock",
        "global.anthropic.claude-opus-5-v1:0",
        {"reasoning": False},
        {"additionalModelRequestFields": {"thinking": {"type": "disabled"}}},
        absent=("additionalModelRequestFields.output_config",),
    ),
    Case(
        "bedrock",
        "us.anthropic.claude-opus-4-7-v1:0",
        {"reasoning": "max", "reasoning_display": "summarized"},
        {
            "additionalModelRequestFields": {
                "thinking": {"type": "adaptive", "display": "summarized"},
                "output_config": {"effort": "max"},
            }
        },
    ),
    # ---------------------------------------------------------------------- OpenAI chat
    # xhigh on GPT-5.2 and later; GPT-5.1 stops at high
    # (learn.microsoft.com .../ai-projects/reasoningeffort).
    Case("openai-chat", "gpt-5.2", {"reasoning": "xhigh"}, {"reasoning_effort": "xhigh"}),
    Case(
        "openai-chat",
        "gpt-5.1",
        {"reasoning": "xhigh"},
        {"reasoning_effort": "high"},
        warns=("'xhigh'", "'high'"),
    ),
    Case("openai-chat", "gpt-5.1", {"reasoning": "none"}, {"reasoning_effort": "none"}),
    # GPT-5 has minimal, not none (platform.openai.com/docs/guides/reasoning).
    Case(
        "openai-chat",
        "gpt-5",
        {"reasoning": "none"},
        {"reasoning_effort": "minimal"},
        warns=("'none'", "'minimal'"),
    ),
    Case("openai-chat", "gpt-5", {"reasoning": "minimal"}, {"reasoning_effort": "minimal"}),
    # DeepSeek: thinking {type} plus reasoning_effort low/high/max
    # (api-docs.deepseek.com/guides/thinking_mode).
    Case(
        "openai-chat",
        "deepseek-chat",
        {"reasoning": "max"},
        {"thinking": {"type": "enabled"}, "reasoning_effort": "max"},
    ),
    # Qwen on DashScope: a top-level enable_thinking (alibabacloud.com model-studio deep
    # thinking); the chat_template_kwargs form is vLLM's and SGLang's.
    Case(
        "openai-chat",
        "qwen3-32b",
        {"reasoning": False, "base_url": DASHSCOPE},
        {"enable_thinking": False},
        absent=("chat_template_kwargs",),
    ),
    Case(
        "openai-chat",
        "qwen-plus",
        {"reasoning": True, "base_url": DASHSCOPE},
        {"enable_thinking": True},
        absent=("chat_template_kwargs",),
    ),
    Case(
        "openai-chat",
        "qwen3-32b",
        {"reasoning": True},
        {"chat_template_kwargs": {"enable_thinking": True}},
        absent=("enable_thinking",),
    ),
    # xAI (docs.x.ai reasoning; issue 23): grok-4, grok-3 and grok-4-fast-reasoning reject
    # reasoning_effort; grok-3-mini takes low or high; grok-4.3 turns off with none.
    Case(
        "openai-chat",
        "grok-4",
        {"reasoning": "high", "base_url": XAI},
        {},
        absent=("reasoning_effort",),
        warns=("takes no effort setting",),
    ),
    Case(
        "openai-chat",
        "grok-4-fast-reasoning",
        {"reasoning": "low", "base_url": XAI},
        {},
        absent=("reasoning_effort",),
        warns=("takes no effort setting",),
    ),
    Case(
        "openai-chat",
        "grok-3",
        {"reasoning": "high", "base_url": XAI},
        {},
        absent=("reasoning_effort",),
        warns=("not a reasoning model",),
    ),
    Case(
        "openai-chat",
        "grok-3-mini",
        {"reasoning": "medium", "base_url": XAI},
        {"reasoning_effort": "low"},
        warns=("'medium'", "'low'"),
    ),
    Case(
        "openai-chat",
        "grok-3-mini",
        {"reasoning": "high", "base_url": XAI},
        {"reasoning_effort": "high"},
    ),
    Case(
        "openai-chat",
        "grok-4.3",
        {"reasoning": False, "base_url": XAI},
        {"reasoning_effort": "none"},
    ),
    # Issue 23: Kimi K3 always thinks.
    Case(
        "openai-chat",
        "kimi-k3",
        {"reasoning": False},
        {},
        absent=("thinking",),
        warns=("cannot turn it off",),
    ),
    # -------------------------------------------------------------------- OpenAI Responses
    Case(
        "openai-responses",
        "gpt-5.2",
        {"reasoning": "xhigh", "reasoning_display": "summarized"},
        {"reasoning": {"effort": "xhigh", "summary": "auto"}},
    ),
    # OpenAI shows summaries, not raw reasoning: full is the most detailed summary.
    Case(
        "openai-responses",
        "o4-mini",
        {"reasoning": "high", "reasoning_display": "full"},
        {"reasoning": {"effort": "high", "summary": "detailed"}},
        warns=("'full'", "'summarized'"),
    ),
    Case(
        "openai-responses",
        "o4-mini",
        {"reasoning": "low", "reasoning_display": "omitted"},
        {"reasoning": {"effort": "low"}},
        absent=("reasoning.summary",),
    ),
    # -------------------------------------------------------------------------- Gemini
    # Gemini 4 documents no "minimal" (issue 23): False sends its least documented level.
    Case(
        "gemini",
        "gemini-4-pro",
        {"reasoning": False},
        {"generationConfig": {"thinkingConfig": {"thinkingLevel": "low"}}},
    ),
    # Gemini 3 Flash has minimal as its least level (ai.google.dev/gemini-api/docs/thinking).
    Case(
        "gemini",
        "gemini-3-flash-preview",
        {"reasoning": "none"},
        {"generationConfig": {"thinkingConfig": {"thinkingLevel": "minimal"}}},
        warns=("'none'", "'minimal'"),
    ),
    # includeThoughts asks for thought summaries (ai.google.dev/gemini-api/docs/thinking).
    Case(
        "gemini",
        "gemini-2.5-flash",
        {"reasoning": "low", "reasoning_display": "omitted"},
        {
            "generationConfig": {
                "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": False}
            }
        },
    ),
    # ---------------------------------------------------------------------- OpenRouter
    # reasoning.effort up to xhigh, reasoning.exclude hides it
    # (openrouter.ai/docs/use-cases/reasoning-tokens).
    Case(
        "openrouter",
        "anthropic/claude-opus-4.7",
        {"reasoning": "max", "reasoning_display": "omitted"},
        {"reasoning": {"effort": "xhigh", "exclude": True}},
        warns=("'max'", "'xhigh'"),
    ),
    # ------------------------------------------------------------------------- Ollama
    # think takes the model's own levels (docs.ollama.com/capabilities/thinking).
    Case(
        "ollama",
        "gpt-oss:20b",
        {"reasoning": "max"},
        {"think": "high"},
        warns=("'max'", "'high'"),
    ),
    Case("ollama", "qwen3", {"reasoning": "none"}, {"think": False}),
]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.provider}-{c.model}-{sorted(c.options.items())}" for c in CASES]
)
def test_the_row_reaches_the_wire(case: Case, server: WireServer) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = _pipe(case, server)
        plan = pipe.reasoning_plan()
        pipe.run("hi")
    body = server.requests[-1].json()
    for path, value in _leaves(case.sent):
        assert _at(body, path) == value, (path, body)
    for path in case.absent:
        assert _at(body, path) is _MISSING, (path, body)
    raised = [str(w.message) for w in caught if issubclass(w.category, ReasoningWarning)]
    if case.warns:
        assert any(all(word in message for word in case.warns) for message in raised), raised
        assert any(all(word in note for word in case.warns) for note in plan.warnings)
    assert not [w for w in caught if issubclass(w.category, UnknownModelWarning)]
    if case.options.get("reasoning") is not None and not case.sent:
        assert not plan.params or plan.drops == ()  # nothing that would 400


def _leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, path + ".")
        else:
            yield path, value


def test_a_registered_application_inference_profile_plans_as_its_model(
    server: WireServer,
) -> None:
    """An application-inference-profile ARN names no model: unregistered, it gets the
    conservative profile, one UnknownModelWarning and no Claude field; registered with its
    model as base, the Bedrock planner sends Claude's fields."""
    with pytest.warns(UnknownModelWarning, match="profiles.register"):
        bare = BedrockPipe(ARN, client=bedrock_client(server), reasoning="max")
    assert "additionalModelRequestFields" not in bare.reasoning_plan().params
    profiles.register("bedrock", ARN, base="claude-opus-5")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnknownModelWarning)
            pipe = BedrockPipe(ARN, client=bedrock_client(server), reasoning=False)
            pipe.run("hi")
        fields = server.requests[-1].json()["additionalModelRequestFields"]
        assert fields == {"thinking": {"type": "disabled"}}
        pipe.reasoning = "max"
        pipe.run("hi")
        fields = server.requests[-1].json()["additionalModelRequestFields"]
        assert fields == {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}
    finally:
        profiles.unregister("bedrock", ARN)


def test_an_unknown_model_gets_the_conservative_plan_and_one_warning(server: WireServer) -> None:
    model = "effort-rows-unknown-model"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = _pipe(Case("openai-chat", model, {"reasoning": "high"}, {}), server)
        pipe.run("hi")
        pipe.run("hi")
        OpenAIChatPipe(model, reasoning="max").reasoning_plan()
    unknown = [w for w in caught if issubclass(w.category, UnknownModelWarning)]
    assert len(unknown) == 1 and "profiles.register" in str(unknown[0].message)
    assert server.requests[-1].json()["reasoning_effort"] == "high"


def test_switching_off_drops_an_effort_already_in_the_request() -> None:
    """Opus 5 takes {type: disabled} only at effort high or below (whats-new-opus-5): the
    plan removes an output_config.effort the request already had, and keeps the rest."""
    plan = AnthropicPipe("claude-opus-5", reasoning=False).reasoning_plan()
    request = {"model": "claude-opus-5", "output_config": {"effort": "max", "format": {"x": 1}}}
    assert plan.apply(request) == {
        "model": "claude-opus-5",
        "output_config": {"format": {"x": 1}},
        "thinking": {"type": "disabled"},
    }


@pytest.mark.parametrize("bad", ["hidden", "FULL", 1, True])
def test_a_display_that_is_none_of_the_three_is_refused(bad: Any) -> None:
    from reasoning_stream import UsageError

    with pytest.raises(UsageError, match="reasoning_display"):
        OpenAIChatPipe("o4-mini", reasoning_display=bad)


@pytest.mark.parametrize("api", ["converse", "invoke"])
def test_switching_opus_5_off_on_bedrock_drops_the_effort_on_the_wire(
    api: str, server: WireServer
) -> None:
    """Claude on Bedrock as on Anthropic (whats-new-opus-5): the off switch goes out and an
    effort above high that the model fields carried does not, on Converse and on Invoke."""
    pipe = BedrockPipe(
        "us.anthropic.claude-opus-5-v1:0",
        client=bedrock_client(server),
        api=api,  # type: ignore[arg-type]
        reasoning=False,
        additional_model_request_fields={"output_config": {"effort": "max"}, "top_k": 5},
    )
    pipe.run("hi")
    body = server.requests[-1].json()
    fields = body["additionalModelRequestFields"] if api == "converse" else body
    assert fields["thinking"] == {"type": "disabled"}
    assert "output_config" not in fields and fields["top_k"] == 5


def test_raw_thinking_and_a_display_conflict_on_anthropic() -> None:
    from reasoning_stream import UsageError

    with pytest.raises(UsageError, match="reasoning_display"):
        AnthropicPipe(
            "claude-opus-4-7", thinking={"type": "adaptive"}, reasoning_display="summarized"
        )


_PIPES: dict[str, tuple[type[ProviderPipe], dict[str, Any]]] = {
    "openai-chat": (OpenAIChatPipe, {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}),
    "openai-responses": (
        OpenAIResponsesPipe,
        {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"},
    ),
    "anthropic": (AnthropicPipe, {"base_url": "http://127.0.0.1:9", "api_key": "k"}),
    "bedrock": (BedrockPipe, {"region_name": "us-east-1"}),
    "gemini": (GeminiPipe, {"base_url": "http://127.0.0.1:9/v1beta", "api_key": "k"}),
    "ollama": (OllamaPipe, {}),
    "openrouter": (OpenRouterPipe, {"base_url": "http://127.0.0.1:9/api/v1", "api_key": "k"}),
}


ROW_EXAMPLES = [(provider, model, None) for provider, model in table_examples()]
ROW_EXAMPLES += rooted_examples()


@pytest.mark.parametrize(("provider", "model", "root"), ROW_EXAMPLES)
def test_every_profile_row_is_what_its_pipe_sends(
    provider: str, model: str, root: str | None
) -> None:
    """For every row of the profiles (at its API root, for the rows limited to one) and each
    setting (off, on, every documented level), the request the pipe builds carries exactly
    what its plan shows, and none of what it drops."""
    cls, options = _PIPES[provider]
    if root is not None:
        options = {**options, "base_url": root}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profiles.lookup(provider, model, base_url=root)
        assert profile.known and (root is None or profile.pattern is not None)
        for setting in (False, True, *profile.efforts):
            pipe = cls(model, reasoning=setting, **options)
            plan = pipe.reasoning_plan()
            body = pipe.build_request("hi")
            for path, value in _leaves(dict(plan.params)):
                assert _at(body, path) == value, (setting, path, body)
            for dropped in plan.drops:
                assert _at(body, ".".join(dropped)) is _MISSING, (setting, dropped)
