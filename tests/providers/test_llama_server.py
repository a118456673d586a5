"""``run_tools`` against a real local model: llama.cpp's ``llama-server --jinja``.

Opt-in (``REASONING_STREAM_LLAMA=1``, with ``REASONING_STREAM_LLAMA_SERVER`` and
``REASONING_STREAM_LLAMA_MODEL`` as ``tests/llama_setup.sh`` prints them; see tests/llama.py).
Measured with Qwen2.5-Coder 0.5B Instruct (Q4_K_M), which docs/tools.md describes honestly.

Each exchange goes through a recording httpx transport (under the openai SDK as well), so the
test reads what was sent and the server's reply bytes; its oracle parses those bytes here (SSE
or JSON), without the pipe's readers. Measured: the 0.5B model writes its calls as bare JSON
text, without the ``<tool_call>`` tags its template asks for, so the server parses no call.
The tests hold it to what it does reliably at temperature 0 (that JSON names an offered tool
with arguments its schema accepts), hold a model that writes the tags to the whole loop, and
check what the library owes whatever the model writes: each step exactly what the server
sent, the channel balanced, a plain model's ``<think>`` quote kept as text, results that reach
the server as ``tool`` messages.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from reasoning_stream import Conversation, ReasoningStream, ToolCall, ToolResult, tool
from reasoning_stream.conversation import ToolLoopResult
from reasoning_stream.providers import OpenAIChatPipe
from tests.llama import LlamaServer, LlamaUnavailable, running_llama
from tests.test_docs import BLOCK, LOCAL_SERVER

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("REASONING_STREAM_LLAMA") != "1",
        reason="opt-in: set REASONING_STREAM_LLAMA=1 (see tests/llama.py)",
    ),
    pytest.mark.timeout(900),  # the first test waits for the model to load; CPU inference
]

MODEL = "qwen2.5-coder-0.5b-instruct"  # llama-server serves one model whatever the name says
REQUEST_SECONDS = 300.0


@tool
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18 °C and sunny in {city}"


def expected_content(name: str, arguments: str) -> str:
    """What the tools above answer, computed here from the call's JSON (not by the loop)."""
    values = json.loads(arguments)
    if name == "add":
        return str(values["a"] + values["b"])
    return f"18 °C and sunny in {values['city']}"


# ------------------------------------------------------------------- what crossed the wire


@dataclass
class Exchange:
    """One request body and the reply's bytes, as the transport saw them."""

    request: dict[str, Any]
    reply: bytearray = field(default_factory=bytearray)


@dataclass
class Reply:
    """A Chat Completions reply read from its bytes: content, reasoning fields, tool calls."""

    content: str
    reasoning: str
    calls: list[tuple[str, str, str]]  # (id, name, arguments)


def read_reply(raw: bytes) -> Reply:
    """The oracle's reading of one reply: SSE chunks or a JSON completion."""
    text = raw.decode("utf-8")
    if not text.lstrip().startswith("{"):
        deltas = [
            choice["delta"]
            for line in text.splitlines()
            if line.startswith("data:") and line[5:].strip() != "[DONE]"
            for choice in json.loads(line[5:])["choices"]
        ]
    else:
        deltas = [choice["message"] for choice in json.loads(text)["choices"]]
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or d.get("reasoning") or "" for d in deltas)
    calls: dict[int, list[str]] = {}
    for delta in deltas:
        for position, call in enumerate(delta.get("tool_calls") or []):
            slot = calls.setdefault(call.get("index", position), ["", "", ""])
            function = call.get("function") or {}
            slot[0] += call.get("id") or ""
            slot[1] += function.get("name") or ""
            slot[2] += function.get("arguments") or ""
    return Reply(content, reasoning, [(i, n, a) for i, n, a in (calls[k] for k in sorted(calls))])


def sdk_httpx() -> Any:
    """The httpx the openai SDK is built on (its own fork in recent releases), as a module."""
    base = openai.DefaultHttpxClient.__mro__[1]
    return sys.modules[base.__module__.split(".")[0]]


def recording_client(module: Any, exchanges: list[Exchange]) -> Any:
    """A ``module.Client`` (httpx or the SDK's fork) whose transport is ``module``'s own,
    keeping each request's JSON body and the reply's bytes in ``exchanges``."""

    class Tee(module.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, sink: bytearray) -> None:
            self.inner, self.sink = inner, sink

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                self.sink.extend(chunk)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class Recording(module.BaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            self.inner = module.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            exchange = Exchange(json.loads(request.read()))
            exchanges.append(exchange)
            response = self.inner.handle_request(request)
            return module.Response(
                response.status_code,
                headers=response.headers,
                stream=Tee(response.stream, exchange.reply),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self.inner.close()

    return module.Client(transport=Recording(), timeout=REQUEST_SECONDS)


def make_pipe(
    server: LlamaServer, transport: str, stream: bool, exchanges: list[Exchange], **options: Any
) -> OpenAIChatPipe:
    """An ``OpenAIChatPipe`` on ``server``'s ``/v1``, over the SDK or httpx, recording."""
    root = f"{server.url}/v1"
    model = options.pop("model", MODEL)
    if transport == "httpx":
        http = recording_client(httpx, exchanges)
        return OpenAIChatPipe(
            model, transport="httpx", http_client=http, base_url=root, api_key="none",
            stream=stream, timeout=REQUEST_SECONDS, **options,
        )  # fmt: skip
    http = recording_client(sdk_httpx(), exchanges)
    client = openai.OpenAI(base_url=root, api_key="none", http_client=http, max_retries=0)
    return OpenAIChatPipe(model, client=client, stream=stream, timeout=REQUEST_SECONDS, **options)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        with running_llama(tmp_path_factory.mktemp("llama")) as server:
            yield server
    except LlamaUnavailable as error:
        pytest.fail(f"REASONING_STREAM_LLAMA=1 but {error}")


# --------------------------------------------------------------------------------- the tests

WAYS = [("sdk", True), ("sdk", False), ("httpx", True), ("httpx", False)]
WAY_IDS = [f"{transport}-{'stream' if stream else 'json'}" for transport, stream in WAYS]
TOOLS = {"add": add, "get_weather": get_weather}


def check_steps(result: ToolLoopResult, exchanges: list[Exchange], chunks: list[str]) -> None:
    """Each step read what the server sent, no more and no less (the oracle reads the bytes),
    and the channel across the steps is balanced, with every answer in it."""
    assert len(exchanges) == len(result.steps) >= 1
    for step, exchange in zip(result.steps, exchanges, strict=True):
        reply = read_reply(bytes(exchange.reply))
        assert step.result.text == reply.content
        assert step.result.model_reasoning == reply.reasoning == ""
        assert [(c.id, c.name, c.arguments) for c in step.result.tool_calls] == reply.calls
    collected = "".join(chunks)
    assert ReasoningStream.OPEN_TAG not in collected  # a model that does not think
    assert collected.count(ReasoningStream.OPEN_TAG) == collected.count(ReasoningStream.CLOSE_TAG)
    assert ReasoningStream.split(collected, lossless=True).text == "".join(
        step.result.text for step in result.steps
    )


def tool_pipe(
    llama: LlamaServer, transport: str, stream: bool, *, max_tokens: int
) -> tuple[OpenAIChatPipe, list[Exchange], list[str]]:
    """A recording pipe offering both tools at temperature 0, and the channel's chunks."""
    exchanges: list[Exchange] = []
    chunks: list[str] = []
    pipe = make_pipe(
        llama, transport, stream, exchanges, tools=list(TOOLS.values()), temperature=0.0,
        max_tokens=max_tokens,
    )  # fmt: skip
    pipe.set_streaming_callback(chunks.append)
    return pipe, exchanges, chunks


@pytest.mark.parametrize(("transport", "stream"), WAYS, ids=WAY_IDS)
def test_run_tools_on_a_small_local_model(llama: LlamaServer, transport: str, stream: bool) -> None:
    """What the loop makes of whatever the model writes.

    Qwen2.5-Coder 0.5B writes its call as a bare JSON object, without the ``<tool_call>`` tags
    its template asks for, so llama-server hands it back as text: the loop ends after one
    step, and that text is a well-formed call of an offered tool. A model that writes the tags
    gets a parsed call, and the loop runs it and sends the result back.
    """
    pipe, exchanges, chunks = tool_pipe(llama, transport, stream, max_tokens=256)
    events: list[Any] = []
    pipe.set_event_callback(events.append)
    conversation = Conversation().add_user("What is 17 plus 25? Use the add tool.")

    result = conversation.run_tools(pipe, max_steps=4)

    check_steps(result, exchanges, chunks)
    assert all(exchange.request.get("stream", False) is stream for exchange in exchanges)
    assert result.status in ("completed", "max_steps")
    first = result.steps[0]
    calls = first.result.tool_calls
    if not calls:  # the call as text: one step, a call the schema accepts, nothing run
        assert result.status == "completed" and len(result.steps) == 1
        text = first.result.text
        written, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
        chosen = TOOLS[written["name"]]
        chosen.parse_arguments(json.dumps(written["arguments"]))
        assert not [e for e in events if isinstance(e, ToolCall | ToolResult)]
        return
    assert all(call.name in TOOLS for call in calls)
    assert not any(r.is_error for r in first.tool_results), first.tool_results
    sent = exchanges[1].request["messages"]
    results = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert results == [(c.id, expected_content(c.name, c.arguments)) for c in calls]
    kinds = [type(e).__name__ for e in events if isinstance(e, ToolCall | ToolResult)]
    assert kinds[: 2 * len(calls)] == ["ToolCall"] * len(calls) + ["ToolResult"] * len(calls)


@pytest.mark.parametrize(("transport", "stream"), WAYS, ids=WAY_IDS)
def test_tool_results_reach_the_local_model(
    llama: LlamaServer, transport: str, stream: bool
) -> None:
    """A conversation that already holds a call and its result: the next request carries the
    call back on the assistant turn and the result as a ``tool`` message, and the server's
    template renders both (it answers 200, and the loop ends as it must)."""
    pipe, exchanges, chunks = tool_pipe(llama, transport, stream, max_tokens=128)
    arguments = '{"a": 17, "b": 25}'
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": arguments}}
    conversation = Conversation().add_user("What is 17 plus 25? Use the add tool.")
    conversation.add_message({"role": "assistant", "content": "", "tool_calls": [call]})
    conversation.add_tool_result("call_1", expected_content("add", arguments))

    result = conversation.run_tools(pipe, max_steps=2)

    check_steps(result, exchanges, chunks)
    # The 0.5B model writes more calls as text, to the token limit ("length").
    assert result.status in ("completed", "max_steps", "length")
    sent = exchanges[0].request["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"] == [call] and "reasoning_content" not in sent[1]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


@pytest.mark.parametrize("transport", ["sdk", "httpx"])
def test_a_plain_model_quoting_think_tags_keeps_them_as_text(
    llama: LlamaServer, transport: str
) -> None:
    """``inline_tags="auto"`` on a model the library does not know ("qwen"): an answer that
    quotes ``<think>`` stays text, byte for byte as the server sent it."""
    exchanges: list[Exchange] = []
    chunks: list[str] = []
    pipe = make_pipe(llama, transport, True, exchanges, model="qwen", temperature=0.0,
                     max_tokens=96)  # fmt: skip
    assert pipe.inline_tags == "auto"
    pipe.set_streaming_callback(chunks.append)
    prompt = "In one sentence: what does the <think> tag mark in a reasoning model's output?"
    answer = Conversation().add_user(prompt).run(pipe)

    reply = read_reply(bytes(exchanges[0].reply))
    assert reply.reasoning == ""
    assert answer.text == reply.content and answer.model_reasoning == ""
    # Nothing opened a reasoning section: the channel carries the quoted tag escaped, and
    # reads back as the server's text.
    channel = ReasoningStream.split("".join(chunks), lossless=True)
    assert channel.text == reply.content and channel.reasoning == ""
    if not reply.content.lstrip().startswith("<"):  # a leading tag would be read as one
        assert "<think>" in reply.content, "the model did not quote the tag; ask differently"


def test_the_docs_recipe_runs_against_the_server(llama: LlamaServer) -> None:
    """The Python block of docs/tools.md's "Local model with llama.cpp", on this server."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text("utf-8")
    blocks = [b for b in BLOCK.findall(page) if b.startswith(LOCAL_SERVER)]
    assert len(blocks) == 1
    code = blocks[0].replace("http://127.0.0.1:8080", llama.url)
    namespace: dict[str, Any] = {"__name__": "docs"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "docs/tools.md llama.cpp snippet", "exec"), namespace)
    result = namespace["result"]
    assert result.status in ("completed", "max_steps")
    assert not any(r.is_error for r in result.tool_results)
