"""The web app's safety defaults, over real HTTP (uvicorn on loopback).

A page on another site, or a DNS-rebinding name that points at loopback, must not start runs
that spend the user's API key nor read the streams; bad input is refused with a status and a
reason, before anything runs.
"""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reasoning_stream import ProviderError, ReasoningDelta, TextDelta, UsageError
from reasoning_stream.hub import Hub, MemoryHub, RedisHub
from reasoning_stream.testing import ScriptedPipe
from reasoning_stream.web import create_app
from tests.web.conftest import serve
from tests.web.sse import get, parse
from tests.web.test_protocols import AGUI

TIMEOUT = 10.0


def starter(prompts: list[object]) -> Any:
    def start(prompt: object) -> ScriptedPipe:
        prompts.append(prompt)
        return ScriptedPipe([0.5, ReasoningDelta("hmm "), TextDelta(f"{prompt}!")])

    return start


@pytest.fixture
def app_hub() -> MemoryHub:
    return MemoryHub()


@pytest.fixture
def prompts() -> list[object]:
    return []


@pytest.fixture
def base(app_hub: MemoryHub, prompts: list[object]) -> Iterator[str]:
    with serve(create_app(app_hub, timeout=1, start=starter(prompts))) as url:
        yield url


def post(url: str, body: Any = None, **kwargs: Any) -> httpx.Response:
    if body is not None:
        kwargs["content"] = json.dumps(body)
        kwargs.setdefault("headers", {}).setdefault("content-type", "application/json")
    return httpx.post(url, timeout=TIMEOUT, **kwargs)


def new_id() -> str:
    return f"safe-{uuid.uuid4().hex}"


# ----------------------------------------------------------------------------------- Host


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_host_that_is_not_allowed_is_400(
    base: str, app_hub: MemoryHub, prompts: list[object], method: str
) -> None:
    """A DNS-rebinding name (evil.example resolving to 127.0.0.1) neither reads nor starts."""
    stream_id = new_id()
    port = base.rsplit(":", 1)[1]
    response = httpx.request(
        method,
        f"{base}/streams/{stream_id}",
        headers={"host": f"evil.example:{port}", "content-type": "application/json"},
        content=b'{"prompt": "spend"}',
        timeout=TIMEOUT,
    )
    assert response.status_code == 400
    assert "evil.example" in response.text and "allowed_hosts" in response.text
    assert prompts == [] and app_hub.read(stream_id) == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LocalHost", "[::1]"])
def test_loopback_names_are_allowed_by_default(base: str, host: str) -> None:
    port = base.rsplit(":", 1)[1]
    response = post(
        f"{base}/streams/{new_id()}", {"prompt": "hi"}, headers={"host": f"{host}:{port}"}
    )
    assert response.status_code == 202, response.text


def test_allowed_hosts_name_a_deployment_and_star_opts_out() -> None:
    hub = MemoryHub()
    with serve(create_app(hub, start=starter([]), allowed_hosts=["app.example"])) as base:
        port = base.rsplit(":", 1)[1]
        ok = post(f"{base}/streams/{new_id()}", {"prompt": "hi"}, headers={"host": "app.example"})
        assert ok.status_code == 202
        refused = post(
            f"{base}/streams/{new_id()}", {"prompt": "hi"}, headers={"host": f"localhost:{port}"}
        )
        assert refused.status_code == 400
    with serve(create_app(hub, start=starter([]), allowed_hosts=["*"])) as base:
        anything = post(
            f"{base}/streams/{new_id()}", {"prompt": "hi"}, headers={"host": "evil.example"}
        )
        assert anything.status_code == 202


# --------------------------------------------------------------------------------- Origin


def test_a_cross_site_text_plain_post_starts_nothing(
    base: str, app_hub: MemoryHub, prompts: list[object]
) -> None:
    """The form-like POST a page on any site may send without asking: refused, nothing runs."""
    stream_id = new_id()
    response = httpx.post(
        f"{base}/streams/{stream_id}",
        content=b'{"prompt": "spend"}',
        headers={"content-type": "text/plain", "origin": "http://evil.example"},
        timeout=TIMEOUT,
    )
    assert response.status_code in (403, 415)
    no_origin = httpx.post(
        f"{base}/streams/{stream_id}",
        content=b'{"prompt": "spend"}',
        headers={"content-type": "text/plain"},
        timeout=TIMEOUT,
    )
    assert no_origin.status_code == 415 and "application/json" in no_origin.text
    assert prompts == [] and app_hub.read(stream_id) == []


def test_a_post_from_another_origin_is_403(
    base: str, app_hub: MemoryHub, prompts: list[object]
) -> None:
    stream_id = new_id()
    for origin in ("http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1"):
        response = post(f"{base}/streams/{stream_id}", {"prompt": "hi"}, headers={"origin": origin})
        assert response.status_code == 403, origin
        assert "allowed_origins" in response.text
    assert prompts == [] and app_hub.read(stream_id) == []
    # The app's own page may post (a browser sends Origin on every POST).
    own = post(f"{base}/streams/{stream_id}", {"prompt": "hi"}, headers={"origin": base})
    assert own.status_code == 202


def test_allowed_origins_may_post_and_get_cors_answers() -> None:
    hub = MemoryHub()
    app = create_app(hub, start=starter([]), allowed_origins=["https://ui.example"])
    with serve(app) as base:
        stream_id = new_id()
        preflight = httpx.options(
            f"{base}/streams/{stream_id}",
            headers={
                "origin": "https://ui.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
            timeout=TIMEOUT,
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://ui.example"
        started = post(
            f"{base}/streams/{stream_id}",
            {"prompt": "hi"},
            headers={"origin": "https://ui.example"},
        )
        assert started.status_code == 202
        assert started.headers["access-control-allow-origin"] == "https://ui.example"
        other = post(
            f"{base}/streams/{new_id()}", {"prompt": "hi"}, headers={"origin": "https://x.example"}
        )
        assert other.status_code == 403


# ---------------------------------------------------------------------------- Bodies


def test_a_body_over_max_body_is_413(app_hub: MemoryHub, prompts: list[object]) -> None:
    with serve(create_app(app_hub, start=starter(prompts), max_body=1000)) as base:
        stream_id = new_id()
        big = {"prompt": "x" * 2000}
        assert post(f"{base}/streams/{stream_id}", big).status_code == 413

        def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, counted as it comes
            yield b'{"prompt": "'
            for _ in range(100):
                yield b"x" * 100
            yield b'"}'

        chunked = httpx.post(
            f"{base}/streams/{stream_id}",
            content=chunks(),
            headers={"content-type": "application/json"},
            timeout=TIMEOUT,
        )
        assert chunked.status_code == 413 and "max_body" in chunked.text
        assert post(f"{base}/streams/{stream_id}", {"prompt": "x" * 900}).status_code == 202
    assert len(prompts) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"prompt": "hi"',
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"prompt": ' + b"[" * 200 + b"]" * 200 + b"}",
        b'["prompt"]',
        b'{"no prompt": 1}',
    ],
)
def test_malformed_or_too_deep_json_is_400(
    body: bytes, app_hub: MemoryHub, prompts: list[object]
) -> None:
    with serve(create_app(app_hub, start=starter(prompts), max_body=10_000_000)) as base:
        stream_id = new_id()
        response = httpx.post(
            f"{base}/streams/{stream_id}",
            content=body,
            headers={"content-type": "application/json"},
            timeout=TIMEOUT,
        )
        assert response.status_code == 400, response.text
        assert "prompt" in response.text or "JSON" in response.text
    assert prompts == [] and app_hub.read(stream_id) == []


@pytest.mark.parametrize(
    ("prompt", "reason"),
    [
        (42, "int"),
        (None, "NoneType"),
        ({"role": "user"}, "dict"),
        (["hi"], "message 0"),
        ([1], "message 0"),
    ],
)
def test_a_prompt_of_the_wrong_type_is_400_with_the_reason(
    base: str, prompts: list[object], prompt: object, reason: str
) -> None:
    response = post(f"{base}/streams/{new_id()}", {"prompt": prompt})
    assert response.status_code == 400 and reason in response.text
    assert prompts == []


@pytest.mark.parametrize("stream_id", ["a%20b", "x" * 201, "tab%09id"])
def test_an_id_the_hub_refuses_is_400_with_the_reason(
    base: str, prompts: list[object], stream_id: str
) -> None:
    response = post(f"{base}/streams/{stream_id}", {"prompt": "hi"})
    assert response.status_code == 400 and "stream_id" in response.text
    assert prompts == []


def test_a_second_start_of_a_running_id_is_409_before_it_published(
    base: str, app_hub: MemoryHub
) -> None:
    """The first run is silent for 0.5 s: the second POST must still see the id taken."""
    stream_id = new_id()
    assert post(f"{base}/streams/{stream_id}", {"prompt": "first"}).status_code == 202
    second = post(f"{base}/streams/{stream_id}", {"prompt": "second"})
    assert second.status_code == 409 and stream_id in second.text
    events = parse(get(f"{base}/streams/{stream_id}").text)
    assert "".join(event.json()["chunk"] for event in events) == "<think>hmm </think>first!"


# ------------------------------------------------------------------- A failed run's reason


SECRET = "hunter2-secret"


def failing(prompt: object) -> ScriptedPipe:
    return ScriptedPipe(
        [
            ReasoningDelta("thinking "),
            ProviderError(
                f"openai: insufficient credit (APIStatusError, HTTP 402) at "
                f"https://user:{SECRET}@proxy.example/v1",
                provider="openai",
                status_code=402,
            ),
        ]
    )


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_a_failed_runs_reason_reaches_every_protocol(
    kind: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    app_hub: Hub = (
        MemoryHub() if kind == "memory" else RedisHub(request.getfixturevalue("redis_url"))
    )
    caplog.set_level(logging.INFO)
    with serve(create_app(app_hub, timeout=2, start=failing)) as base:
        stream_id = new_id()
        assert post(f"{base}/streams/{stream_id}", {"prompt": "hi"}).status_code == 202
        channel = parse(get(f"{base}/streams/{stream_id}").text)
        agui = parse(get(f"{base}/streams/{stream_id}?protocol=ag-ui").text)
        vercel = parse(get(f"{base}/streams/{stream_id}?protocol=vercel-ui").text)
    end = channel[-1]
    assert end.event == "end" and end.json()["status"] == "error"
    reasons = [end.json()["error"], agui[-1].json()["message"], vercel[-2].json()["errorText"]]
    assert agui[-1].json()["type"] == "RUN_ERROR" and vercel[-2].json()["type"] == "error"
    for event in agui:
        AGUI.validate_python(event.json())
    for reason in reasons:
        assert "insufficient credit" in reason and "HTTP 402" in reason
        assert SECRET not in reason
    assert SECRET not in json.dumps([entry.error for entry in app_hub.read(stream_id)])
    assert stream_id in caplog.text and "insufficient credit" in caplog.text
    assert SECRET not in caplog.text
    if isinstance(app_hub, RedisHub):
        app_hub.close()


def test_host_check_covers_raw_sockets_without_a_host_header(base: str) -> None:
    """HTTP/1.0 without Host: refused too (no name to check)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(b"GET /streams/x HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400")


# -------------------------------------------------------- Resuming a trimmed stateful stream


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_resuming_ag_ui_or_vercel_ui_after_the_start_was_trimmed_is_410(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Part ids come from the entries that opened them: once ``maxlen`` dropped the stream's
    start, a continuation would use ids the client never saw. The channel resumes still."""
    hub: Hub = (
        MemoryHub(maxlen=20)
        if kind == "memory"
        else RedisHub(request.getfixturevalue("redis_url"), maxlen=20)
    )
    stream_id = new_id()
    hub.run(stream_id, ScriptedPipe([ReasoningDelta(f"r{n} ") for n in range(300)]), "go")
    kept = hub.read(stream_id)
    assert kept[0].id != hub.first_entry_id  # the start was trimmed
    resume_at = kept[len(kept) // 2].id
    with serve(create_app(hub, timeout=1)) as base:
        for protocol in ("ag-ui", "vercel-ui"):
            url = f"{base}/streams/{stream_id}?protocol={protocol}"
            response = get(url, last_event_id=resume_at)
            assert response.status_code == 410, protocol
            assert "trimmed" in response.text and "maxlen" in response.text
        channel = get(f"{base}/streams/{stream_id}", last_event_id=resume_at)
        assert channel.status_code == 200
        assert [event.id for event in parse(channel.text)] == [
            entry.id for entry in hub.read(stream_id, after=resume_at)
        ]
    if isinstance(hub, RedisHub):
        hub.close()


def test_create_app_refuses_settings_that_cannot_work() -> None:
    hub = MemoryHub()
    with pytest.raises(UsageError, match="max_body"):
        create_app(hub, max_body=0)
    with pytest.raises(UsageError, match="list of names"):
        create_app(hub, allowed_hosts="localhost")
