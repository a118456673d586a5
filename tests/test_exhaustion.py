"""A model that spent its whole budget thinking: ``reasoning_exhausted`` and the opt-in retry.

The exhausted streams are the recorded length stops (and, where none was recorded, the
recorded reasoning streams) with their answer events taken out and the stop reason set to the
provider's length stop: each provider's own wire format, read by its real SDK or httpx.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anthropic
import anyio
import boto3
import httpx
import ollama
import openai
import pytest
from botocore.config import Config

from reasoning_stream import (
    Event,
    Finish,
    PipeResult,
    ProviderError,
    ReasoningState,
    ReasoningStream,
    Timings,
    ToolCall,
    Usage,
)
from reasoning_stream._capture import merge_attempts
from reasoning_stream._effort import REASONING_LEVELS, Reasoning, _plan, lower_plan, table_examples
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
from reasoning_stream.testing._wire import Transcript, WireServer

Mode = Literal["run", "arun"]


@pytest.fixture(params=["run", "arun"])
def mode(request: pytest.FixtureRequest) -> Mode:
    """``run()`` with the sync client (in a worker thread) or ``arun()`` with the async one."""
    return request.param  # type: ignore[no-any-return]


# ------------------------------------------------------------------- the truth table


STATE = ReasoningState(provider="p", model="m", kind="encrypted", payload="x" * 16)
CALL = ToolCall(id="call_0", name="f", arguments="{}")


@pytest.mark.parametrize(
    ("result", "exhausted"),
    [
        (PipeResult(status="length", model_reasoning="r"), True),
        (PipeResult(status="length", model_reasoning="r", text=" \n"), True),
        (PipeResult(status="length", reasoning_state=(STATE,)), True),
        (PipeResult(status="length", usage=Usage(reasoning_tokens=64)), True),
        (PipeResult(status="length", model_reasoning="r", text="The answer"), False),
        (PipeResult(status="length", model_reasoning="r", tool_calls=(CALL,)), False),
        (PipeResult(status="length", usage=Usage(reasoning_tokens=0)), False),
        (PipeResult(status="length"), False),
        (PipeResult(status="completed", model_reasoning="r"), False),
        (PipeResult(status="error", model_reasoning="r"), False),
        (PipeResult(status="cancelled_before_answer", model_reasoning="r"), False),
    ],
)
def test_reasoning_exhausted_means_a_length_stop_with_reasoning_and_no_answer(
    result: PipeResult, exhausted: bool
) -> None:
    assert result.reasoning_exhausted is exhausted


# ------------------------------------------------------------------------ the ladder

RANK = {level: index for index, level in enumerate(REASONING_LEVELS)}
EXAMPLES = table_examples()
SETTINGS: list[Reasoning] = [None, True, False, *REASONING_LEVELS, 1, 1024, 5000, 20000]


def _is_lower(new: Reasoning, old: Reasoning) -> bool:
    if isinstance(new, bool) or new is None:
        return False
    if isinstance(new, int):
        return isinstance(old, int) and not isinstance(old, bool) and new < old
    if old is None or old is True:
        return True
    return isinstance(old, str) and RANK[new] < RANK[old]


@pytest.mark.parametrize(("provider", "model"), EXAMPLES)
def test_every_step_down_is_lower_and_changes_the_request(provider: str, model: str) -> None:
    """Down the ladder from any setting: each step asks for less, sends something different,
    and the walk ends."""
    for setting in SETTINGS:
        try:
            # warn=False: the one-time ReasoningWarning stays unspent for the tests of it.
            current = _plan(provider, model, setting, max_tokens=None, warn=False)
        except ValueError:
            continue  # a setting this model refuses (0-like budgets, Claude below 1024)
        steps = 0
        while (lower := lower_plan(provider, model, current.reasoning)) is not None:
            assert _is_lower(lower.reasoning, current.reasoning), (setting, lower.reasoning)
            assert lower.params != current.params
            assert lower.supported
            current, steps = lower, steps + 1
            assert steps <= 16


@pytest.mark.parametrize(
    ("provider", "model", "setting", "expected"),
    [
        ("openai-chat", "o4-mini", "high", "medium"),
        ("openai-chat", "o4-mini", "medium", "low"),
        ("openai-chat", "o4-mini", True, "low"),  # True already sends "medium"
        ("openai-chat", "o4-mini", None, "low"),
        ("openai-chat", "o4-mini", 20000, 10000),
        ("openai-chat", "o4-mini", 10000, 2500),  # 5000 would send "medium" again
        ("anthropic", "claude-sonnet-4-5", 4000, 2000),
        ("anthropic", "claude-sonnet-4-5", True, "low"),
        ("gemini", "gemini-2.5-flash", "high", "medium"),
        ("ollama", "gpt-oss:20b", "high", "medium"),
    ],
)
def test_the_next_lower_setting(
    provider: str, model: str, setting: Reasoning, expected: Reasoning
) -> None:
    lower = lower_plan(provider, model, setting)
    assert lower is not None and lower.reasoning == expected


@pytest.mark.parametrize(
    ("provider", "model", "setting"),
    [
        ("openai-chat", "o4-mini", "low"),
        ("openai-chat", "o4-mini", False),
        ("openai-chat", "o4-mini", 1),
        ("anthropic", "claude-sonnet-4-5", 2000),  # 1000 is below Claude's least budget
        ("openai-chat", "deepseek-reasoner", "high"),  # no effort control at all
        ("ollama", "qwen3", "high"),  # think=True for every level
    ],
)
def test_nothing_lower(provider: str, model: str, setting: Reasoning) -> None:
    assert lower_plan(provider, model, setting) is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_exhaustion_retry_attempts_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ValueError, match="attempts"):
        OpenAIChatPipe("o4-mini").set_exhaustion_retry(bad)


# ------------------------------------------------------------------ the wire stacks


def _without(events: list[Any], answer: Callable[[Any], bool]) -> list[Any]:
    return [event for event in events if not answer(event)]


def _chat_content(event: Any) -> bool:
    data = event.get("data")
    if not isinstance(data, dict) or not data.get("choices"):
        return False
    return bool(data["choices"][0].get("delta", {}).get("content"))


def _exhausted_chat(name: str) -> Transcript:
    data = copy.deepcopy(Transcript.load(name).to_dict())
    data["events"] = _without(data["events"], _chat_content)
    return Transcript.from_dict(data)


def _exhausted_anthropic() -> Transcript:
    data = copy.deepcopy(Transcript.load("anthropic_max_tokens").to_dict())
    data["events"] = _without(data["events"], lambda e: e["data"].get("index") == 1)
    return Transcript.from_dict(data)


def _exhausted_bedrock() -> Transcript:
    data = copy.deepcopy(Transcript.load("bedrock_converse_max_tokens").to_dict())
    data["events"] = _without(
        data["events"], lambda e: e.get("payload", {}).get("contentBlockIndex") == 1
    )
    return Transcript.from_dict(data)


def _exhausted_responses() -> Transcript:
    data = copy.deepcopy(Transcript.load("openai_responses_incomplete").to_dict())
    data["events"] = _without(data["events"], lambda e: e["data"].get("output_index") == 1)
    final = data["events"][-1]["data"]["response"]
    final["output"] = [item for item in final["output"] if item["type"] != "message"]
    return Transcript.from_dict(data)


def _exhausted_gemini() -> Transcript:
    data = copy.deepcopy(Transcript.load("gemini_reasoning").to_dict())

    def answer(event: Any) -> bool:
        parts = event["data"]["candidates"][0]["content"]["parts"]
        return any(part.get("text") and not part.get("thought") for part in parts)

    data["events"] = _without(data["events"], answer)
    data["events"][-1]["data"]["candidates"][0]["finishReason"] = "MAX_TOKENS"
    return Transcript.from_dict(data)


def _exhausted_ollama() -> Transcript:
    data = copy.deepcopy(Transcript.load("ollama_chat_reasoning").to_dict())
    data["events"] = _without(data["events"], lambda e: bool(e["message"].get("content")))
    data["events"][-1]["done_reason"] = "length"
    return Transcript.from_dict(data)


def _bedrock_client(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


@dataclass(frozen=True)
class Stack:
    """One provider pipe on its real client, an exhausted stream and a stream that answers."""

    pipe: type[ProviderPipe]
    model: str
    exhausted: Callable[[], Transcript]
    answers: str
    effort: Callable[[dict[str, Any]], Any]
    """The effort the request carried, read from its JSON body."""
    high_then_medium: tuple[Any, Any]
    options: Callable[[str, Mode], dict[str, Any]]
    """The pipe keywords reaching the server at a URL with ``mode``'s client."""


def _openai(root: str) -> Callable[[str, Mode], dict[str, Any]]:
    def options(url: str, mode: Mode) -> dict[str, Any]:
        cls = openai.OpenAI if mode == "run" else openai.AsyncOpenAI
        return {"client": cls(base_url=url + root, api_key="k", max_retries=0)}

    return options


def _anthropic(url: str, mode: Mode) -> dict[str, Any]:
    cls = anthropic.Anthropic if mode == "run" else anthropic.AsyncAnthropic
    return {"client": cls(base_url=url, api_key="k", max_retries=0)}


def _httpx(root: str) -> Callable[[str, Mode], dict[str, Any]]:
    def options(url: str, mode: Mode) -> dict[str, Any]:
        client = httpx.Client() if mode == "run" else httpx.AsyncClient()
        return {"client": client, "base_url": url + root, "api_key": "k"}

    return options


def _ollama(url: str, mode: Mode) -> dict[str, Any]:
    return {"client": ollama.Client(host=url) if mode == "run" else ollama.AsyncClient(host=url)}


def _bedrock(url: str, mode: Mode) -> dict[str, Any]:
    return {"client": _bedrock_client(url)}


STACKS = {
    "openai-chat": Stack(
        OpenAIChatPipe,
        "o4-mini",
        lambda: _exhausted_chat("openai_chat_length"),
        "openai_chat_reasoning_content",
        lambda body: body.get("reasoning_effort"),
        ("high", "medium"),
        _openai("/v1"),
    ),
    "openai-responses": Stack(
        OpenAIResponsesPipe,
        "o4-mini",
        _exhausted_responses,
        "openai_responses_summary",
        lambda body: body["reasoning"].get("effort"),
        ("high", "medium"),
        _openai("/v1"),
    ),
    "openrouter": Stack(
        OpenRouterPipe,
        "deepseek/deepseek-r1",
        lambda: _exhausted_chat("openrouter_length"),
        "openrouter_reasoning",
        lambda body: body.get("reasoning"),
        ({"effort": "high"}, {"effort": "medium"}),
        _httpx("/api/v1"),
    ),
    "anthropic": Stack(
        AnthropicPipe,
        "claude-sonnet-4-5",
        _exhausted_anthropic,
        "anthropic_thinking",
        lambda body: body["thinking"].get("budget_tokens"),
        (16000, 8000),
        _anthropic,
    ),
    "bedrock": Stack(
        BedrockPipe,
        "us.anthropic.claude-sonnet-4-5-v1:0",
        _exhausted_bedrock,
        "bedrock_converse_reasoning",
        lambda body: body["additionalModelRequestFields"]["thinking"].get("budget_tokens"),
        (16000, 8000),
        _bedrock,
    ),
    "gemini": Stack(
        GeminiPipe,
        "gemini-2.5-flash",
        _exhausted_gemini,
        "gemini_reasoning",
        lambda body: body["generationConfig"]["thinkingConfig"].get("thinkingBudget"),
        (16384, 4096),
        _httpx("/v1beta"),
    ),
    "ollama": Stack(
        OllamaPipe,
        "gpt-oss:20b",
        _exhausted_ollama,
        "ollama_chat_reasoning",
        lambda body: body.get("think"),
        ("high", "medium"),
        _ollama,
    ),
}


@dataclass
class Run:
    """What one run left behind: its result (or error), the channel, the events, the bodies."""

    result: PipeResult
    error: BaseException | None
    chunks: list[str]
    events: list[Event]
    bodies: list[dict[str, Any]]
    pipe: ProviderPipe


@asynccontextmanager
async def _server(*replies: Transcript | str) -> AsyncIterator[WireServer]:
    async with WireServer(*replies) as server:
        yield server


async def _close(client: Any) -> None:
    if isinstance(client, httpx.AsyncClient):
        await client.aclose()
    elif isinstance(client, openai.AsyncOpenAI | anthropic.AsyncAnthropic):
        await client.close()
    elif isinstance(client, httpx.Client | openai.OpenAI | anthropic.Anthropic):
        client.close()


async def drive(
    stack: Stack,
    mode: Mode,
    *replies: Transcript | str,
    retries: int = 0,
    reasoning: Reasoning = "high",
) -> Run:
    chunks: list[str] = []
    events: list[Event] = []
    async with _server(*replies) as server:
        options = stack.options(server.url, mode)
        pipe = stack.pipe(stack.model, reasoning=reasoning, **options)
        pipe.set_streaming_callback(chunks.append).set_event_callback(events.append)
        if retries:
            pipe.set_exhaustion_retry(retries)
        error: BaseException | None = None
        try:
            if mode == "run":
                await anyio.to_thread.run_sync(pipe.run, "Why?")
            else:
                await pipe.arun("Why?")
        except ProviderError as raised:
            error = raised
        finally:
            await _close(options["client"])
        bodies = [request.json() for request in server.requests]
    assert pipe.last_result is not None
    return Run(pipe.last_result, error, chunks, events, bodies, pipe)


def _split(chunks: list[str]) -> tuple[str, str]:
    split = ReasoningStream.split("".join(chunks), lossless=True)
    return split.reasoning, split.text


def _states(result: PipeResult) -> list[tuple[str, str | bytes, Any]]:
    """Opaque state apart from the endpoint (each test run has its own server port)."""
    return [(state.kind, state.payload, state.block) for state in result.reasoning_state]


def _usage_sum(*results: PipeResult) -> Usage:
    def add(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return Usage(
        add([r.usage.input_tokens for r in results]),
        add([r.usage.output_tokens for r in results]),
        add([r.usage.reasoning_tokens for r in results]),
        add([r.usage.cache_read_tokens for r in results]),
        add([r.usage.cache_write_tokens for r in results]),
    )


# --------------------------------------------------------------------------- the tests


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(STACKS))
async def test_a_length_stop_with_only_reasoning_is_marked(name: str, mode: Mode) -> None:
    stack = STACKS[name]
    run = await drive(stack, mode, stack.exhausted())
    result = run.result
    assert (result.status, result.text, result.tool_calls) == ("length", "", ())
    assert result.model_reasoning
    assert result.reasoning_exhausted
    assert _split(run.chunks) == (result.model_reasoning, result.text)
    assert len(run.bodies) == 1  # no retry unless asked


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "transcript"),
    [
        ("openai-chat", "openai_chat_length"),
        ("openrouter", "openrouter_length"),
        ("anthropic", "anthropic_max_tokens"),
        ("bedrock", "bedrock_converse_max_tokens"),
        ("openai-responses", "openai_responses_incomplete"),
    ],
)
async def test_a_length_stop_inside_the_answer_is_not_exhausted_and_never_retried(
    name: str, transcript: str, mode: Mode
) -> None:
    run = await drive(STACKS[name], mode, transcript, retries=3)
    assert run.result.status == "length"
    assert run.result.text
    assert not run.result.reasoning_exhausted
    assert len(run.bodies) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(STACKS))
async def test_the_retry_asks_again_with_the_next_lower_effort(name: str, mode: Mode) -> None:
    stack = STACKS[name]
    alone = await drive(stack, mode, stack.exhausted())
    answer = await drive(stack, mode, stack.answers, reasoning="medium")
    run = await drive(stack, mode, stack.exhausted(), stack.answers, retries=1)
    result = run.result

    assert [stack.effort(body) for body in run.bodies] == list(stack.high_then_medium)
    assert run.bodies[1] == answer.bodies[0]  # the very request `reasoning="medium"` sends
    assert run.pipe.reasoning == "high"  # the pipe's setting is the user's again
    assert run.error is None
    # The answer and everything that goes back to the provider are the second response's ...
    assert result.text == answer.result.text != ""
    assert _states(result) == _states(answer.result)
    assert (result.status, result.response_id) == (answer.result.status, answer.result.response_id)
    assert not result.reasoning_exhausted
    # ... while the reasoning both attempts streamed stays, as the channel shows it.
    segments = alone.result.reasoning_segments + answer.result.reasoning_segments
    assert result.reasoning_segments == segments
    assert _split(run.chunks) == (result.model_reasoning, result.text)
    assert run.chunks == alone.chunks + answer.chunks
    assert result.usage == _usage_sum(alone.result, answer.result)
    # Timings run from the first request: the answer came after both attempts' reasoning.
    timings = result.timings
    assert timings.time_to_first_reasoning is not None and timings.time_to_first_text is not None
    assert timings.time_to_first_reasoning < timings.time_to_first_text <= timings.total
    # Event subscribers see the first response end at its length stop, then the second.
    finishes = [event for event in run.events if isinstance(event, Finish)]
    assert [f.reason for f in finishes] == ["length", answer.result.finish_reason]


@pytest.mark.anyio
async def test_each_retry_steps_one_level_down_and_the_ladder_ends(mode: Mode) -> None:
    stack = STACKS["openai-chat"]
    run = await drive(stack, mode, stack.exhausted(), retries=5)  # exhausted every time
    assert [body["reasoning_effort"] for body in run.bodies] == ["high", "medium", "low"]
    assert run.result.reasoning_exhausted
    assert len(run.result.reasoning_segments) == 3
    assert _split(run.chunks) == (run.result.model_reasoning, "")
    assert run.pipe.reasoning == "high"


@pytest.mark.anyio
async def test_the_number_of_retries_is_bounded(mode: Mode) -> None:
    stack = STACKS["anthropic"]
    run = await drive(stack, mode, stack.exhausted(), retries=1)
    assert [body["thinking"]["budget_tokens"] for body in run.bodies] == [16000, 8000]
    assert run.result.reasoning_exhausted


@pytest.mark.anyio
async def test_hidden_reasoning_counts_and_is_retried(mode: Mode) -> None:
    """o-series models think without showing it: only usage says where the budget went."""
    data = _exhausted_chat("openai_chat_length").to_dict()
    data["events"] = [
        event
        for event in data["events"]
        if not (
            isinstance(event["data"], dict)
            and event["data"]["choices"]
            and event["data"]["choices"][0]["delta"].get("reasoning_content")
        )
    ]
    hidden = Transcript.from_dict(data)
    stack = STACKS["openai-chat"]
    run = await drive(stack, mode, hidden, "openai_chat_no_reasoning", retries=1)
    assert [body["reasoning_effort"] for body in run.bodies] == ["high", "medium"]
    assert run.result.text and run.result.model_reasoning == ""
    assert "".join(run.chunks) == run.result.text  # nothing was shown of the first attempt


@pytest.mark.anyio
async def test_whitespace_that_reached_a_callback_is_an_answer_byte(mode: Mode) -> None:
    """Reasoning then "\\n\\n" then the length stop: the reply is empty to the eye, but a retry
    would put a second answer after what subscribers already got, so there is none."""
    data = _exhausted_chat("openai_chat_length").to_dict()
    finish = next(
        i
        for i, event in enumerate(data["events"])
        if isinstance(event["data"], dict)
        and event["data"]["choices"]
        and event["data"]["choices"][0]["finish_reason"]
    )
    blank = copy.deepcopy(data["events"][finish])
    blank["data"]["choices"][0].update(delta={"content": "\n\n"}, finish_reason=None)
    data["events"].insert(finish, blank)
    run = await drive(STACKS["openai-chat"], mode, Transcript.from_dict(data), retries=3)
    assert run.result.reasoning_exhausted
    assert run.result.text == "\n\n"
    assert len(run.bodies) == 1


@pytest.mark.anyio
async def test_a_failed_retry_keeps_the_reasoning_already_streamed(mode: Mode) -> None:
    stack = STACKS["openai-chat"]
    alone = await drive(stack, mode, stack.exhausted())
    run = await drive(stack, mode, stack.exhausted(), "openai_chat_rate_limit", retries=1)
    assert isinstance(run.error, ProviderError) and run.error.status_code == 429
    assert run.error.result is run.result is run.pipe.last_result
    assert run.result.status == "error"
    assert run.result.reasoning_segments == alone.result.reasoning_segments
    assert _split(run.chunks) == (run.result.model_reasoning, run.result.text)
    assert run.pipe.reasoning == "high"
    assert len(run.bodies) == 2


@pytest.mark.anyio
async def test_a_model_without_a_lower_plan_is_not_asked_again(mode: Mode) -> None:
    stack = STACKS["openai-chat"]
    run = await drive(stack, mode, stack.exhausted(), stack.answers, retries=3, reasoning="low")
    assert len(run.bodies) == 1
    assert run.result.reasoning_exhausted


def test_the_next_plan_is_shown_without_calling_anything() -> None:
    pipe = OpenAIChatPipe("o4-mini", reasoning="high")
    lower = pipe.lower_reasoning_plan()
    assert lower is not None
    assert (lower.reasoning, dict(lower.params)) == ("medium", {"reasoning_effort": "medium"})
    assert OpenAIChatPipe("o4-mini", reasoning="low").lower_reasoning_plan() is None


def test_merged_attempts_add_up_from_the_first_request() -> None:
    """Explicit numbers: offsets, sums, and ``None`` where no attempt reported a count."""
    first = PipeResult(
        status="length",
        model_reasoning="a",
        reasoning_segments=("a",),
        usage=Usage(input_tokens=10, output_tokens=100, reasoning_tokens=None),
        timings=Timings(time_to_first_reasoning=0.5, reasoning_duration=1.25, total=2.0),
        response_id="first",
    )
    second = PipeResult(
        status="length",
        reasoning_segments=("",),
        usage=Usage(input_tokens=10, output_tokens=50, reasoning_tokens=None),
        timings=Timings(total=1.0),
        response_id="second",
    )
    final = PipeResult(
        text="answer",
        model_reasoning="b",
        reasoning_segments=("b",),
        reasoning_state=(STATE,),
        usage=Usage(input_tokens=10, output_tokens=30, reasoning_tokens=None),
        timings=Timings(
            time_to_first_reasoning=0.25, time_to_first_text=0.75, reasoning_duration=0.5, total=1.5
        ),
        response_id="final",
    )
    merged = merge_attempts([first, second], final)
    assert merged.reasoning_segments == ("a", "", "b")
    assert merged.model_reasoning == "a\nb"
    assert (merged.text, merged.reasoning_state, merged.response_id) == (
        "answer",
        (STATE,),
        "final",
    )
    assert merged.usage == Usage(input_tokens=30, output_tokens=180, reasoning_tokens=None)
    assert merged.timings == Timings(
        time_to_first_reasoning=0.5, time_to_first_text=3.75, reasoning_duration=1.75, total=4.5
    )
    assert merge_attempts([], final) is final
