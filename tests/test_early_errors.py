"""Misuse fails where it happens: at construction, or when a run starts, before any request.

Every provider pipe is built with its real SDK client (or httpx), and every check that a run
makes "before any network call" is shown against a loopback ``WireServer`` that records each
request it receives: an empty record is the proof.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import anyio
import boto3
import httpx
import ollama
import openai
import pytest

from reasoning_stream import Pipeline, ProviderError, TextDelta, UsageError
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
from reasoning_stream.providers._spec import specs
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.testing._wire import WireServer

# One model each pipe accepts; the tests vary everything else.
MODELS: dict[type[ProviderPipe], str] = {
    OpenAIChatPipe: "o4-mini",
    OpenAIResponsesPipe: "o4-mini",
    OpenRouterPipe: "deepseek/deepseek-r1",
    AnthropicPipe: "claude-sonnet-4-5",
    BedrockPipe: "us.anthropic.claude-sonnet-4-5-v1:0",
    GeminiPipe: "gemini-2.5-flash",
    OllamaPipe: "qwen3",
}
PIPES = list(MODELS)

# Every environment variable any provider reads a key from.
KEY_VARIABLES = sorted(
    {name for found in specs() for name in found.key_env}
    | {name for pipe in PIPES for name in pipe.secret_env}
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key in the environment."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    """A loopback server that answers nothing (404) but records every request."""
    with WireServer() as wire:
        yield wire


def _pipe_id(pipe: type[ProviderPipe]) -> str:
    return pipe.__name__


# ------------------------------------------------------------------------------ model ids


@pytest.mark.parametrize("pipe", PIPES, ids=_pipe_id)
@pytest.mark.parametrize("model", [None, 42, "", "   ", b"o4-mini", ["o4-mini"]])
def test_a_model_that_is_not_a_non_empty_str_is_refused_at_construction(
    pipe: type[ProviderPipe], model: Any
) -> None:
    with pytest.raises(UsageError, match="needs a model id") as raised:
        pipe(model)
    assert isinstance(raised.value, TypeError)
    assert pipe.__name__ in str(raised.value)
    assert repr(model) in str(raised.value)


def test_gemini_still_takes_the_models_prefix() -> None:
    assert GeminiPipe("models/gemini-2.5-flash").model == "gemini-2.5-flash"


# -------------------------------------------------------------------------------- clients


def _clients() -> dict[str, Any]:
    """One client of each kind a user might hand a pipe (nothing is sent by building them)."""
    bedrock = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    return {
        "openai.OpenAI": openai.OpenAI(api_key="k"),
        "openai.AsyncOpenAI": openai.AsyncOpenAI(api_key="k"),
        "openai.AzureOpenAI": openai.AzureOpenAI(
            api_key="k", api_version="2024-10-21", azure_endpoint="https://example.invalid"
        ),
        "anthropic.Anthropic": anthropic.Anthropic(api_key="k"),
        "anthropic.AsyncAnthropic": anthropic.AsyncAnthropic(api_key="k"),
        "ollama.Client": ollama.Client(host="http://127.0.0.1:9"),
        "ollama.AsyncClient": ollama.AsyncClient(host="http://127.0.0.1:9"),
        "boto3 bedrock-runtime": bedrock,
        "boto3 s3": boto3.client(
            "s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
        ),
        "httpx.Client": httpx.Client(),
        "httpx.AsyncClient": httpx.AsyncClient(),
        "str": "x",
        "object": object(),
    }


CLIENTS = _clients()
OPENAI = {"openai.OpenAI", "openai.AsyncOpenAI", "openai.AzureOpenAI"}
HTTPX = {"httpx.Client", "httpx.AsyncClient"}
ACCEPTED: dict[type[ProviderPipe], set[str]] = {
    OpenAIChatPipe: OPENAI,
    OpenAIResponsesPipe: OPENAI,
    OpenRouterPipe: HTTPX,
    AnthropicPipe: {"anthropic.Anthropic", "anthropic.AsyncAnthropic"},
    BedrockPipe: {"boto3 bedrock-runtime"},
    GeminiPipe: HTTPX,
    OllamaPipe: {"ollama.Client", "ollama.AsyncClient"},
}


@pytest.mark.parametrize("pipe", PIPES, ids=_pipe_id)
@pytest.mark.parametrize("kind", list(CLIENTS))
def test_a_client_of_another_sdk_is_refused_at_construction(
    pipe: type[ProviderPipe], kind: str
) -> None:
    """Each pipe takes exactly its own SDK's clients; anything else is a UsageError."""
    client = CLIENTS[kind]
    if kind in ACCEPTED[pipe]:
        assert pipe(MODELS[pipe], client=client).client is client
        return
    with pytest.raises(UsageError, match=r"client= must be|needs an httpx\.Client") as raised:
        pipe(MODELS[pipe], client=client)
    assert isinstance(raised.value, TypeError)
    assert type(client).__qualname__ in str(raised.value)


def test_the_httpx_transport_takes_httpx_clients_only() -> None:
    pipe = OpenAIChatPipe("m", transport="httpx", client=CLIENTS["httpx.Client"])
    assert pipe.client is CLIENTS["httpx.Client"]
    with pytest.raises(UsageError, match=r"httpx\.Client"):
        OpenAIChatPipe("m", transport="httpx", client=CLIENTS["openai.OpenAI"])
    with pytest.raises(UsageError, match="client= must be"):
        OpenAIChatPipe("m", client=CLIENTS["httpx.Client"])  # the SDK transport


# -------------------------------------------------------------------------------- prompts


@pytest.mark.anyio
@pytest.mark.parametrize(
    "prompt", [42, None, b"hi", [{"role": "user", "content": "hi"}, "oops"], [42]]
)
async def test_a_prompt_of_the_wrong_type_is_a_usage_error_before_any_request(
    server: WireServer, prompt: Any
) -> None:
    before = len(server.requests)
    sync_pipe = OpenAIChatPipe("o4-mini", client=openai.OpenAI(base_url=server.url, api_key="k"))
    async_pipe = AnthropicPipe(
        "claude-sonnet-4-5", client=anthropic.AsyncAnthropic(base_url=server.url, api_key="k")
    )
    with pytest.raises(UsageError, match="prompt") as raised:
        await anyio.to_thread.run_sync(sync_pipe.run, prompt)
    assert isinstance(raised.value, TypeError)
    assert raised.value.result is sync_pipe.last_result is not None
    assert raised.value.result.status == "error"
    with pytest.raises(UsageError, match="prompt"):
        await async_pipe.arun(prompt)
    assert len(server.requests) == before


# ------------------------------------------------------------------------------ callbacks


@pytest.mark.parametrize("bad", ["nope", 42, None, b"x"])
def test_callbacks_that_cannot_be_called_are_refused(bad: Any) -> None:
    chunks: list[str] = []
    pipe = ScriptedPipe([TextDelta("ok")]).set_streaming_callback(chunks.append)
    with pytest.raises(UsageError, match="streaming callback must be callable"):
        pipe.set_streaming_callback(bad)
    with pytest.raises(UsageError, match="event callback must be callable"):
        pipe.set_event_callback(bad)
    with pytest.raises(UsageError, match="streaming callback must be callable"):
        Pipeline(pipe, ScriptedPipe([TextDelta("!")])).set_streaming_callback(bad)
    if bad is not None:  # None is the documented "no handler"
        with pytest.raises(UsageError, match="on_callback_error must be callable"):
            ScriptedPipe([], on_callback_error=bad)
    # Nothing was lost: the callback given before still gets the whole channel, and only it.
    assert pipe.run("p").text == "ok"
    assert chunks == ["ok"]


class _Collector:
    def __init__(self) -> None:
        self.chunks: list[str] = []

    def __call__(self, chunk: str) -> None:
        self.chunks.append(chunk)

    def method(self, chunk: str) -> None:
        self.chunks.append(chunk)


def test_every_kind_of_callable_is_still_accepted() -> None:
    collector = _Collector()
    seen: list[str] = []
    callbacks: list[Callable[[str], Any]] = [
        collector,
        collector.method,
        functools.partial(seen.append),
        lambda chunk: seen.append(chunk.upper()),
    ]
    pipe = ScriptedPipe([TextDelta("ok")])
    for callback in callbacks:
        pipe.set_streaming_callback(callback)
    pipe.run("p")
    assert collector.chunks == ["ok", "ok"]
    assert seen == ["ok", "OK"]


# -------------------------------------------------------------------------- missing keys

KEYED = [found for found in specs() if found.key_needed]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", KEYED, ids=lambda found: found.id)
async def test_a_missing_key_is_one_usage_error_naming_the_variable_before_any_request(
    server: WireServer, no_keys: None, provider: Any
) -> None:
    """Same sentence for every provider; OpenRouter no longer asks the network first."""
    cls = provider.pipe_class()
    model = MODELS[cls]
    before = len(server.requests)
    errors: list[UsageError] = []
    for run in ("run", "arun"):
        pipe = cls(model, base_url=f"{server.url}/root")
        with pytest.raises(UsageError) as raised:
            if run == "run":
                await anyio.to_thread.run_sync(pipe.run, "hi")
            else:
                await pipe.arun("hi")
        errors.append(raised.value)
        assert raised.value.result is not None and raised.value.result.status == "error"
    assert len(server.requests) == before
    names = " or ".join(provider.key_env)
    for error in errors:
        assert str(error).startswith(f"{cls.__name__} needs an API key: set {names}, or pass ")
        assert "api_key=" in str(error) and "client=" in str(error)


@pytest.mark.parametrize("provider", KEYED, ids=lambda found: found.id)
def test_a_key_in_the_environment_lets_the_request_go(
    server: WireServer, no_keys: None, monkeypatch: pytest.MonkeyPatch, provider: Any
) -> None:
    """The check does not stand in the way: with the variable set, the server is asked."""
    monkeypatch.setenv(provider.key_env[-1], "test-key-0123456789")
    cls = provider.pipe_class()
    before = len(server.requests)
    with pytest.raises(ProviderError):  # the server answers 404
        cls(MODELS[cls], base_url=f"{server.url}/root", timeout=5).run("hi")
    assert len(server.requests) == before + 1


def test_an_anthropic_auth_token_counts_as_a_key(
    server: WireServer, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "test-token-0123456789")
    before = len(server.requests)
    with pytest.raises(ProviderError):
        AnthropicPipe("claude-sonnet-4-5", base_url=f"{server.url}/root", timeout=5).run("hi")
    assert len(server.requests) == before + 1


def test_a_local_server_on_the_httpx_transport_needs_no_key(no_keys: None) -> None:
    """vLLM, llama.cpp and friends: no key, no Authorization header, a real answer."""
    with WireServer("openai_chat_reasoning_content") as local:
        pipe = OpenAIChatPipe("deepseek-reasoner", transport="httpx", base_url=f"{local.url}/v1")
        result = pipe.run("hi")
        assert result.text
        assert "authorization" not in local.requests[0].headers


@pytest.mark.parametrize(
    ("pipe", "module", "extra"),
    [
        (OpenAIChatPipe, "openai", "openai"),
        (OpenAIResponsesPipe, "openai", "openai"),
        (AnthropicPipe, "anthropic", "anthropic"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else value,
)
def test_a_missing_sdk_and_key_are_said_in_one_error(
    no_keys: None,
    monkeypatch: pytest.MonkeyPatch,
    pipe: type[ProviderPipe],
    module: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` meets when it is not installed
    with pytest.raises(UsageError) as raised:
        pipe(MODELS[pipe]).run("hi")
    message = str(raised.value)
    assert "needs an API key and the" in message
    assert f"pip install 'reasoning-stream[{extra}]'" in message
    for name in next(found for found in specs() if found.pipe == pipe.__name__).key_env:
        assert name in message


@pytest.mark.parametrize(
    ("pipe", "module", "extra", "options"),
    [
        (OpenAIChatPipe, "openai", "openai", {"api_key": "k"}),
        (AnthropicPipe, "anthropic", "anthropic", {"api_key": "k"}),
        (OllamaPipe, "ollama", "ollama", {}),
        (BedrockPipe, "boto3", "bedrock", {}),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_a_missing_sdk_alone_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
    pipe: type[ProviderPipe],
    module: str,
    extra: str,
    options: dict[str, Any],
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(UsageError) as raised:
        pipe(MODELS[pipe], **options).run("hi")
    assert str(raised.value) == (
        f"{pipe.__name__} needs the {module!r} package: pip install 'reasoning-stream[{extra}]'"
    )


# ------------------------------------------------------------------------------ reasoning


@pytest.mark.parametrize(
    ("pipe", "model"),
    [
        (OpenAIChatPipe, "o4-mini"),
        (OpenAIResponsesPipe, "gpt-5"),
        (OpenRouterPipe, "deepseek/deepseek-r1"),
        (AnthropicPipe, "claude-sonnet-4-5"),
        (BedrockPipe, "us.anthropic.claude-sonnet-4-5-v1:0"),
        (GeminiPipe, "gemini-3-pro-preview"),
        (OllamaPipe, "qwen3"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else value,
)
def test_reasoning_zero_is_refused_at_construction(pipe: type[ProviderPipe], model: str) -> None:
    with pytest.raises(ValueError, match="reasoning=0 means nothing"):
        pipe(model, reasoning=0)


def test_reasoning_zero_turns_gemini_budget_models_off() -> None:
    pipe = GeminiPipe("gemini-2.5-flash", reasoning=0)
    assert pipe.reasoning_plan().params == {
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}
    }


@pytest.mark.parametrize("pipe", [AnthropicPipe, BedrockPipe], ids=_pipe_id)
def test_a_claude_budget_below_its_minimum_is_refused_at_construction(
    pipe: type[ProviderPipe],
) -> None:
    with pytest.raises(ValueError, match="start at 1024 tokens"):
        pipe(MODELS[pipe], reasoning=1000)


def test_construction_plans_without_warning() -> None:
    """The one-time ReasoningWarning belongs to the run that sends the plan, not to __init__."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OpenAIChatPipe("gpt-4o-construction-only", reasoning="high")


@pytest.mark.parametrize("think", ["extreme", "HIGH", "", "on", 1, 0, 2.0, {"level": "high"}])
def test_ollama_think_is_checked_at_construction(think: Any) -> None:
    with pytest.raises(UsageError, match="think must be"):
        OllamaPipe("qwen3", think=think)


@pytest.mark.parametrize("think", [None, True, False, "low", "medium", "high"])
def test_ollama_think_values_are_sent_as_given(think: Any) -> None:
    request = OllamaPipe("gpt-oss:20b", think=think).build_request("hi")
    assert request.get("think") == think


# ----------------------------------------------------------------- run() inside a loop


def _record_run(pipe: ScriptedPipe) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.run("p")
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.anyio
async def test_a_sync_run_inside_a_running_loop_warns_once_naming_arun(
    anyio_backend: str,
) -> None:
    pipe = ScriptedPipe([TextDelta("ok")])
    first = _record_run(pipe)
    assert len(first) == 1
    message = str(first[0].message)
    assert "arun()" in message and anyio_backend in message and "ScriptedPipe.run()" in message
    assert first[0].filename == __file__  # points at the caller's line
    assert _record_run(pipe) == []  # once per pipe
    assert len(_record_run(ScriptedPipe([TextDelta("ok")]))) == 1


@pytest.mark.anyio
async def test_a_sync_pipeline_run_inside_a_running_loop_warns_once() -> None:
    pipeline = ScriptedPipe([TextDelta("a")]) | ScriptedPipe([TextDelta("b")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipeline.run("p")
        pipeline.run("p")
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and messages[0].startswith("Pipeline.run() was called inside")
    assert caught[0].filename == __file__


@pytest.mark.anyio
async def test_a_sync_run_in_a_worker_thread_does_not_warn() -> None:
    pipe = ScriptedPipe([TextDelta("ok")])
    caught = await anyio.to_thread.run_sync(_record_run, pipe)
    assert caught == []


def test_a_sync_run_without_a_loop_does_not_warn() -> None:
    pipe = ScriptedPipe([TextDelta("ok")])
    assert _record_run(pipe) == []
    assert pipe.last_result is not None and pipe.last_result.text == "ok"


# ------------------------------------------------------------------ first-hour slips


@pytest.mark.anyio
@pytest.mark.parametrize("pipe", PIPES, ids=_pipe_id)
@pytest.mark.parametrize(
    ("message", "said"),
    [({"content": "hi"}, "has no 'role'"), ({"role": "", "content": "hi"}, "has role ''"),
     ({"role": 3, "content": "hi"}, "has role 3")],
)  # fmt: skip
async def test_a_message_without_a_role_is_refused_naming_its_index(
    server: WireServer, pipe: type[ProviderPipe], message: dict[str, Any], said: str
) -> None:
    before = len(server.requests)
    made = pipe(MODELS[pipe], **_endpoint(pipe, server))
    prompt = [{"role": "user", "content": "first"}, message]
    with pytest.raises(UsageError, match=f"prompt message 1 {said}"):
        await anyio.to_thread.run_sync(made.run, prompt)
    with pytest.raises(UsageError, match="prompt message 1"):
        await made.arun(prompt)
    assert len(server.requests) == before


def _endpoint(pipe: type[ProviderPipe], server: WireServer) -> dict[str, Any]:
    if pipe is BedrockPipe:
        return {"base_url": server.url, "region_name": "us-east-1"}
    if pipe is OllamaPipe:
        return {"base_url": server.url}
    return {"base_url": server.url, "api_key": "k" * 12}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"attempts": "3"}, "attempts"), ({"attempts": 2.5}, "attempts"),
     ({"attempts": True}, "attempts"), ({"attempts": 2, "backoff": "1"}, "backoff"),
     ({"attempts": 2, "max_delay": None}, "max_delay")],
)  # fmt: skip
def test_set_retries_of_the_wrong_type_is_a_usage_error_naming_the_parameter(
    arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(UsageError, match=f"set_retries: {named} must be"):
        ScriptedPipe([TextDelta("x")]).set_retries(**arguments)
    assert ScriptedPipe([TextDelta("x")]).set_retries(3, backoff=0, max_delay=1.5)


@pytest.mark.anyio
async def test_bedrock_without_credentials_is_a_usage_error_naming_them_before_any_request(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata lookup
    before = len(server.requests)
    pipe = BedrockPipe(MODELS[BedrockPipe], base_url=server.url, region_name="us-east-1")
    for run in ("run", "arun"):
        with pytest.raises(UsageError) as raised:
            if run == "run":
                await anyio.to_thread.run_sync(pipe.run, "hi")
            else:
                await pipe.arun("hi")
        message = str(raised.value)
        assert "AWS_ACCESS_KEY_ID" in message and "AWS_SECRET_ACCESS_KEY" in message
        assert "AWS_PROFILE" in message
    assert len(server.requests) == before
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    with pytest.raises(ProviderError):  # now the request goes (the server answers 404)
        await anyio.to_thread.run_sync(pipe.run, "hi")
    assert len(server.requests) == before + 1
