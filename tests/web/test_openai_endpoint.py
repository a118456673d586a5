"""``POST /v1/chat/completions`` read by the ``openai`` SDK itself, over real provider pipes.

The app runs under uvicorn on a loopback port; its model factories build real provider pipes
(``AnthropicPipe``, ``OpenAIChatPipe`` for DeepSeek) pointed at a WireServer replaying bundled
transcripts. The client is ``openai.OpenAI`` / ``openai.AsyncOpenAI``. Expected values are
read from the transcripts here, independently of the pipes and of the endpoint.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from reasoning_stream.hub import MemoryHub, RedisHub
from reasoning_stream.providers import AnthropicPipe, OpenAIChatPipe
from reasoning_stream.store import RedisStore, SQLiteStore
from reasoning_stream.testing import Reply, Transcript, WireServer, conform
from reasoning_stream.web import create_app
from reasoning_stream.web._openai_passback import KEY_PREFIX
from tests.providers.test_anthropic import blocks_from_transcript
from tests.redis_server import free_port
from tests.web.conftest import serve

KEY = "test-key-not-a-secret"
CLAUDE = "claude-sonnet-4-6"  # keeps thinking blocks of earlier turns: passback "always"
THINKING = {"type": "enabled", "budget_tokens": 2048}
HEADER = "x-reasoning-stream-id"


# ----------------------------------------------------------------------------- helpers


def chat_deltas(name: str) -> tuple[str, list[dict[str, Any]]]:
    """The reasoning_content and the tool calls an OpenAI-style transcript streams."""
    reasoning = ""
    calls: dict[int, dict[str, Any]] = {}
    for event in Transcript.load(name).events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        for choice in data["choices"]:
            delta = choice["delta"]
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(call["index"], {"arguments": ""})
                function = call.get("function") or {}
                if call.get("id"):
                    slot["id"] = call["id"]
                if function.get("name"):
                    slot["name"] = function["name"]
                slot["arguments"] += function.get("arguments") or ""
    return reasoning, [calls[index] for index in sorted(calls)]


@contextmanager
def endpoint(
    tmp_path: Path,
    *replies: str | Reply,
    store_type: type[SQLiteStore] = SQLiteStore,
    remember: bool = True,
    **app_options: Any,
) -> Iterator[tuple[str, WireServer, SQLiteStore]]:
    """A WireServer with ``replies``, and the app serving Claude and DeepSeek over it."""
    with WireServer(*replies) as wire, store_type(str(tmp_path / "passback.db")) as store:
        models = {
            "claude": lambda: AnthropicPipe(
                CLAUDE, base_url=wire.url, api_key=KEY, thinking=THINKING
            ),
            "deepseek": lambda: OpenAIChatPipe(
                "deepseek-chat", base_url=wire.url + "/v1", api_key=KEY
            ),
            # A factory with a ``request`` parameter gets the request body.
            "tuned": lambda request: OpenAIChatPipe(
                "deepseek-chat",
                base_url=wire.url + "/v1",
                api_key=KEY,
                extra_body={"temperature": request.get("temperature", 1.0)},
            ),
            "broken": lambda: OpenAIChatPipe("", base_url=wire.url + "/v1", api_key=KEY),
        }
        kept = store if remember else None
        app = create_app(MemoryHub(), models=models, store=kept, timeout=5, **app_options)
        with serve(app) as base:
            yield base, wire, store


def client(base: str, api_key: str = "anything") -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=api_key, max_retries=0, timeout=20)


# ------------------------------------------------------------------ exact passback


def test_signed_thinking_goes_back_when_the_client_sends_role_and_content(
    tmp_path: Path,
) -> None:
    """Turn 1 streams to the SDK; turn 2 carries only role and content, and the upstream
    request still opens the assistant turn with the signed thinking block, byte for byte."""
    thinking, text = blocks_from_transcript("anthropic_thinking")
    with endpoint(tmp_path, "anthropic_thinking") as (base, wire, store), client(base) as sdk:
        question = {"role": "user", "content": "What is 17 * 23?"}
        stream = sdk.chat.completions.create(model="claude", messages=[question], stream=True)
        reasoning, content, reasons, ids, seen = "", "", [], set(), []
        for chunk in stream:
            seen.append(chunk.model_dump_json())
            ids.add(chunk.id)
            assert chunk.model == "claude"
            for choice in chunk.choices:
                reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                content += choice.delta.content or ""
                reasons.append(choice.finish_reason)
        assert reasoning == thinking["thinking"]
        assert content == text["text"]
        assert thinking["signature"] not in str(seen)
        assert [reason for reason in reasons if reason] == ["stop"]
        assert len(ids) == 1 and next(iter(ids)).startswith("chatcmpl-")
        assert len(store.list(KEY_PREFIX)) == 1

        follow_up = [
            question,
            {"role": "assistant", "content": content},
            {"role": "user", "content": "And 17 * 24?"},
        ]
        answer = sdk.chat.completions.create(model="claude", messages=follow_up)

    sent = wire.requests[1].json()["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0] == thinking
    assert json.dumps(thinking["signature"]) in wire.requests[1].body.decode()
    # Non-streaming: one chat.completion, reasoning as message.reasoning_content.
    message = answer.choices[0].message
    assert message.content == text["text"]
    assert (message.model_extra or {})["reasoning_content"] == thinking["thinking"]
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == "claude" and answer.object == "chat.completion"
    assert thinking["signature"] not in answer.model_dump_json()


@pytest.mark.anyio
async def test_a_deepseek_tool_turn_gets_its_reasoning_content_back(tmp_path: Path) -> None:
    """The async SDK streams a tool-call turn (usage included), sends it back without
    reasoning_content, and DeepSeek's next request carries it on that turn."""
    reasoning, calls = chat_deltas("openai_chat_tool_call")
    replies = ("openai_chat_tool_call", "openai_chat_no_reasoning")
    with endpoint(tmp_path, *replies) as (base, wire, _):
        async with openai.AsyncOpenAI(
            base_url=base + "/v1", api_key="anything", max_retries=0, timeout=20
        ) as sdk:
            history: list[dict[str, Any]] = [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Weather and time in Paris?"},
            ]
            stream = await sdk.chat.completions.create(
                model="deepseek",
                messages=history,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
            got_reasoning, got_calls, reasons, usage = "", [], [], None
            async for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    delta = choice.delta
                    got_reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
                    for call in delta.tool_calls or ():
                        assert call.index == len(got_calls)
                        assert call.type == "function" and call.function is not None
                        got_calls.append(
                            {
                                "id": call.id,
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            }
                        )
                    reasons.append(choice.finish_reason)
            assert got_reasoning == reasoning
            assert got_calls == calls
            assert [reason for reason in reasons if reason] == ["tool_calls"]
            assert usage is not None and usage.completion_tokens_details is not None
            assert usage.completion_tokens_details.reasoning_tokens == 12
            assert (usage.prompt_tokens, usage.completion_tokens) == (120, 60)

            history.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": call["arguments"]},
                        }
                        for call in got_calls
                    ],
                }
            )
            history += [
                {"role": "tool", "tool_call_id": call["id"], "content": "18 °C"}
                for call in got_calls
            ]
            await sdk.chat.completions.create(model="deepseek", messages=history)  # type: ignore[arg-type]

    sent = wire.requests[1].json()["messages"]
    assert [message["role"] for message in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[2]["reasoning_content"] == reasoning
    assert [call["id"] for call in sent[2]["tool_calls"]] == [call["id"] for call in calls]


def test_without_a_store_the_reasoning_content_a_client_echoes_goes_back(tmp_path: Path) -> None:
    """No store: a DeepSeek-aware client's own reasoning_content is what goes back; a client
    that drops it is refused with the preflight code before anything is sent upstream."""
    reasoning, calls = chat_deltas("openai_chat_tool_call")
    replies = ("openai_chat_tool_call", "openai_chat_no_reasoning")
    with (
        endpoint(tmp_path, *replies, remember=False) as (base, wire, store),
        client(base) as sdk,
    ):
        history: list[Any] = [{"role": "user", "content": "Weather and time in Paris?"}]
        first = sdk.chat.completions.create(model="deepseek", messages=history)
        made = first.choices[0].message
        assert (made.model_extra or {})["reasoning_content"] == reasoning
        turn = {
            "role": "assistant",
            "content": made.content,
            "tool_calls": [call.model_dump() for call in made.tool_calls or ()],
        }
        history += [turn] + [
            {"role": "tool", "tool_call_id": call["id"], "content": "18 °C"} for call in calls
        ]
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.chat.completions.create(model="deepseek", messages=history)
        assert len(wire.requests) == 1
        turn["reasoning_content"] = reasoning
        sdk.chat.completions.create(model="deepseek", messages=history)
        assert not store.list()
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "reasoning_content_missing"
    assert wire.requests[1].json()["messages"][1]["reasoning_content"] == reasoning


def test_an_assistant_turn_the_server_did_not_make_is_refused_with_the_preflight_code(
    tmp_path: Path,
) -> None:
    """A tool loop whose tool-use turn was edited: 400 naming thinking_missing; no upstream call."""
    tool_use = blocks_from_transcript("anthropic_interleaved_tool")[4]
    with endpoint(tmp_path, "anthropic_interleaved_tool") as (base, wire, _), client(base) as sdk:
        question = {"role": "user", "content": "Weather in Paris?"}
        first = sdk.chat.completions.create(model="claude", messages=[question])
        made = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls"
        assert made.tool_calls is not None
        call = made.tool_calls[0]
        assert call.id == tool_use["id"]
        assert json.loads(call.function.arguments) == tool_use["input"]
        edited = {
            "role": "assistant",
            "content": made.content,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": '{"location": "Rome"}'},
                }
            ],
        }
        result = {"role": "tool", "tool_call_id": call.id, "content": "18 °C"}
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.chat.completions.create(model="claude", messages=[question, edited, result])
        assert len(wire.requests) == 1

        # The same turn sent back as it was made goes through.
        kept = {**edited, "tool_calls": [call.model_dump()]}
        sdk.chat.completions.create(model="claude", messages=[question, kept, result])
        assert len(wire.requests) == 2
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["code"] == "thinking_missing"
    assert error["param"] == "messages[1]"
    assert error["type"] == "invalid_request_error"
    assert "thinking_missing" in error["message"]


# ------------------------------------------------------------------------ errors


def test_a_factory_that_takes_the_request_body_reads_it(tmp_path: Path) -> None:
    with endpoint(tmp_path, "openai_chat_no_reasoning") as (base, wire, _), client(base) as sdk:
        sdk.chat.completions.create(
            model="tuned", messages=[{"role": "user", "content": "hi"}], temperature=0.25
        )
    assert wire.requests[0].json()["temperature"] == 0.25


def test_an_unknown_model_is_a_404_in_openai_shape(tmp_path: Path) -> None:
    with endpoint(tmp_path) as (base, wire, _), client(base) as sdk:
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
        assert [model.id for model in sdk.models.list()] == [
            "claude",
            "deepseek",
            "tuned",
            "broken",
        ]
        with pytest.raises(openai.InternalServerError) as broken:
            sdk.chat.completions.create(
                model="broken", messages=[{"role": "user", "content": "hi"}]
            )
        assert isinstance(broken.value.body, dict) and broken.value.body["type"] == "server_error"
        assert "UsageError" in broken.value.body["message"]
    body = missing.value.body
    assert isinstance(body, dict)
    assert set(body) == {"message", "type", "param", "code"}
    assert (body["code"], body["param"]) == ("model_not_found", "model")
    assert "gpt-9" in body["message"] and not wire.requests


def test_bad_bodies_get_openai_errors_and_the_app_guards_hold(tmp_path: Path) -> None:
    with endpoint(tmp_path, max_body=2000) as (base, wire, _), client(base) as sdk:
        with pytest.raises(openai.BadRequestError) as empty:
            sdk.chat.completions.create(model="claude", messages=[])
        assert isinstance(empty.value.body, dict) and empty.value.body["param"] == "messages"
        with pytest.raises(openai.BadRequestError) as role:
            sdk.chat.completions.create(
                model="claude",
                messages=[{"role": "wizard", "content": "hi"}],  # type: ignore[list-item]
            )
        assert isinstance(role.value.body, dict) and role.value.body["param"] == "messages[0]"

        url = base + "/v1/chat/completions"
        ok = {"model": "claude", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client(timeout=10) as http:
            cases = {
                415: http.post(url, content=json.dumps(ok), headers={"content-type": "text/plain"}),
                413: http.post(url, json={**ok, "pad": "x" * 3000}),
                400: http.post(
                    url, content=b"{not json", headers={"content-type": "application/json"}
                ),
                403: http.post(url, json=ok, headers={"origin": "https://evil.example"}),
            }
            for status, response in cases.items():
                assert response.status_code == status, response.text
                assert set(response.json()["error"]) == {"message", "type", "param", "code"}
            rebound = http.post(url, json=ok, headers={"host": "evil.example"})
            assert rebound.status_code == 400
    assert not wire.requests


def test_an_upstream_failure_reaches_the_client_as_an_openai_error(tmp_path: Path) -> None:
    """Mid-stream: an ``error`` event the SDK raises; not streaming: a 502, the reason in it."""
    with endpoint(tmp_path, "openai_chat_stream_error") as (base, wire, store), client(base) as sdk:
        question = [{"role": "user", "content": "hi"}]
        stream = sdk.chat.completions.create(model="deepseek", messages=question, stream=True)
        with pytest.raises(openai.APIError) as streamed:
            list(stream)
        with pytest.raises(openai.InternalServerError) as whole:
            sdk.chat.completions.create(model="deepseek", messages=question)
        assert not store.list()  # a failed turn is not one a client can send back
    for error in (streamed.value, whole.value):
        assert isinstance(error.body, dict) and error.body["code"] == "upstream_error"
        assert "The engine died while generating." in error.body["message"]
        assert KEY not in error.body["message"]
    assert whole.value.status_code == 502 and len(wire.requests) == 2


def test_api_keys_are_checked_as_bearer_tokens(tmp_path: Path) -> None:
    with endpoint(tmp_path, "anthropic_thinking", api_keys=["sk-server-1", "sk-server-2"]) as (
        base,
        wire,
        _,
    ):
        with client(base, "sk-wrong") as sdk, pytest.raises(openai.AuthenticationError) as denied:
            sdk.chat.completions.create(
                model="claude", messages=[{"role": "user", "content": "hi"}]
            )
        with client(base, "sk-server-2") as sdk:
            answer = sdk.chat.completions.create(
                model="claude", messages=[{"role": "user", "content": "hi"}]
            )
    assert isinstance(denied.value.body, dict) and denied.value.body["code"] == "invalid_api_key"
    assert "sk-wrong" not in str(denied.value.body)
    assert answer.choices[0].message.content
    assert len(wire.requests) == 1


# ------------------------------------------------------------- the run in the hub


def test_the_stream_id_header_names_a_hub_stream_that_replays_the_run(tmp_path: Path) -> None:
    thinking, text = blocks_from_transcript("anthropic_thinking")
    with endpoint(tmp_path, "anthropic_thinking") as (base, _, _), client(base) as sdk:
        raw = sdk.chat.completions.with_raw_response.create(
            model="claude", messages=[{"role": "user", "content": "What is 17 * 23?"}]
        )
        stream_id = raw.headers[HEADER]
        assert raw.parse().id == stream_id
        with httpx.Client(timeout=10) as http:
            replay = http.get(f"{base}/streams/{stream_id}", params={"protocol": "ag-ui"})
    events = [
        json.loads(line[len("data: ") :])
        for line in replay.text.splitlines()
        if line.startswith("data: ")
    ]
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    thought = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert (thought, said) == (thinking["thinking"], text["text"])
    assert thinking["signature"] not in replay.text


def test_delete_stops_a_streaming_completion_which_ends_with_a_finish(tmp_path: Path) -> None:
    """The model goes silent mid-thought; DELETE /streams/{id} ends the SDK's stream cleanly."""
    hanging = Reply(Transcript.load("anthropic_thinking"), hang_after=4)
    with (
        endpoint(tmp_path, hanging) as (base, _, store),
        client(base) as sdk,
        httpx.Client(timeout=10) as http,
    ):
        with sdk.chat.completions.with_streaming_response.create(
            model="claude",
            messages=[{"role": "user", "content": "What is 17 * 23?"}],
            stream=True,
        ) as response:
            stream_id = response.headers[HEADER]
            chunks = iter(response.parse())
            first = next(chunks)
            assert (first.choices[0].delta.model_extra or {}).get("reasoning_content")
            stopped = threading.Event()

            def stop() -> None:
                assert http.delete(f"{base}/streams/{stream_id}").status_code == 200
                stopped.set()

            threading.Timer(0.3, stop).start()
            rest = list(chunks)  # ends: the SDK read [DONE]
            assert stopped.wait(5)
        again = http.delete(f"{base}/streams/{stream_id}")
        ending = http.get(f"{base}/streams/{stream_id}").text.split("event: end\n")[1]
        assert len(store.list(KEY_PREFIX)) == 1  # the turn as said until the stop
    assert '"status":"cancelled_before_answer"' in ending
    reasons = [choice.finish_reason for chunk in rest for choice in chunk.choices]
    assert reasons[-1] == "stop" and reasons.count("stop") == 1
    assert again.status_code == 404


class SlowStore(SQLiteStore):
    """A SQLite store whose writes take a while (a busy database)."""

    def save(self, *args: Any, **kwargs: Any) -> int:
        time.sleep(0.5)
        return super().save(*args, **kwargs)


def test_a_streamed_completion_ends_only_once_its_turn_is_stored(tmp_path: Path) -> None:
    """A client that sends its next request the moment the stream ends finds its turn."""
    with (
        endpoint(tmp_path, "anthropic_thinking", store_type=SlowStore) as (base, _, store),
        client(base) as sdk,
    ):
        stream = sdk.chat.completions.create(
            model="claude", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert [chunk for chunk in stream]
        assert len(store.list(KEY_PREFIX)) == 1


def test_the_conformance_probe_passes_through_the_endpoint(tmp_path: Path) -> None:
    """``reasoning_stream.testing.conform`` drives DeepSeek tool loops through the endpoint."""
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/v1"
    models = {
        "deepseek-reasoner": lambda: OpenAIChatPipe(
            "deepseek-reasoner", base_url=upstream, api_key=KEY
        )
    }
    with SQLiteStore(str(tmp_path / "passback.db")) as store:
        app = create_app(MemoryHub(), models=models, store=store, timeout=5)
        with serve(app) as base:
            report = conform("openai", base + "/v1", upstream_port=port)
    assert report.passed, [(row.name, row.detail) for row in report.rows if not row.passed]
    assert {row.name for row in report.rows} == {
        "reasoning_content_echoed",
        "stream_equals_oneshot",
        "reasoning_as_reasoning",
    }


def test_two_workers_on_redis_share_the_runs_and_the_passback(redis_url: str) -> None:
    """Turn 1 through worker A, turn 2 through worker B: B puts A's signed thinking back, and
    B replays A's run from the hub."""
    thinking, text = blocks_from_transcript("anthropic_thinking")
    namespace = f"openai-{uuid.uuid4().hex}"
    with WireServer("anthropic_thinking") as wire, contextlib.ExitStack() as stack:
        models = {
            "claude": lambda: AnthropicPipe(
                CLAUDE, base_url=wire.url, api_key=KEY, thinking=THINKING
            )
        }
        bases = []
        for _ in range(2):  # each worker has its own hub and store clients
            store = stack.enter_context(RedisStore(redis_url, namespace=namespace))
            hub = stack.enter_context(RedisHub(redis_url))
            app = create_app(hub, models=models, store=store, timeout=5)
            bases.append(stack.enter_context(serve(app)))
        first, second = (stack.enter_context(client(base)) for base in bases)
        question = {"role": "user", "content": "What is 17 * 23?"}
        raw = first.chat.completions.with_raw_response.create(model="claude", messages=[question])
        answer = raw.parse().choices[0].message.content
        second.chat.completions.create(
            model="claude",
            messages=[question, {"role": "assistant", "content": answer}, question],
        )
        with httpx.Client(timeout=10) as http:
            replay = http.get(f"{bases[1]}/streams/{raw.headers[HEADER]}")
    assert answer == text["text"]
    assert wire.requests[1].json()["messages"][1]["content"][0] == thinking
    assert "event: end" in replay.text and '"status":"completed"' in replay.text
