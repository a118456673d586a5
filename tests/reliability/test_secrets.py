"""Secrets stay put: opaque reasoning state and API keys never leave where they belong.

Signatures, encrypted and redacted reasoning live on ``result.reasoning_state`` only: never in a
streaming or event callback, a log line (everything logged at DEBUG, SDKs included), an error
message or a ``repr()``. API keys go into the auth header only: never into the URL, an error
(an HTTP 401, a refused connection, a cut stream) or a ``repr()``.
"""

from __future__ import annotations

import base64
import copy
import logging
import traceback
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import anyio
import pytest

from reasoning_stream._exceptions import ProviderError, ReasoningStreamError, UsageError
from reasoning_stream._pipe import Pipe, PipeResult
from reasoning_stream.testing import Reply, Transcript, WireServer

from . import (
    API_KEY,
    FLAVOURS,
    RESOURCE_CHECKS,
    TARGETS,
    Flavour,
    Outcome,
    Target,
    collected_garbage,  # noqa: F401 - the fixture RESOURCE_CHECKS names
    fresh_prefix,
    frozen_survivors,  # noqa: F401 - the fixture collected_garbage needs
    opaque_payloads,
    play,
    release,
    transcript,
    under,
)

pytestmark = RESOURCE_CHECKS

TARGET_NAMES = sorted(TARGETS)
WITH_OPAQUE_STATE = [
    (target_name, name)
    for target_name in TARGET_NAMES
    for name in TARGETS[target_name].transcripts
    if opaque_payloads(transcript(name))
]


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture(autouse=True)
def aws_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 signs with these; the secret half is the distinctive key the tests look for."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", API_KEY)
    for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


BOTOCORE_FRAME_LOG = "botocore.parsers"
"""botocore logs every event-stream frame's body at DEBUG, signatures included: boto3's own
debug output, which this library cannot silence (production should not run botocore at DEBUG)."""


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every record logged at DEBUG and above, formatted with its traceback."""
    return "\n".join(
        caplog.handler.format(record)
        for record in caplog.records
        if record.name != BOTOCORE_FRAME_LOG
    )


def error_chain(error: BaseException | None) -> list[BaseException]:
    """The error and every cause and context behind it."""
    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def places(outcome: Outcome, log: str) -> dict[str, str]:
    """Everywhere a secret must never be, as text."""
    result = outcome.result
    found = {
        "streaming callback": "".join(outcome.chunks),
        "event callback": repr(outcome.events)
        + "".join(str(getattr(event, "text", "")) for event in outcome.events),
        "log": log,
        "repr(result)": repr(result),
        "repr(pipe)": repr(outcome.pipe),
        "repr(states)": repr(result.reasoning_state),
        "result.message": repr(result.message),
    }
    for index, error in enumerate(error_chain(outcome.error)):
        found[f"error {index}"] = f"{error}\n{error!r}\n{getattr(error, 'body', '')!r}"
    return found


def state_text(result: PipeResult) -> str:
    """Every payload on the result, as text (bytes both as base64 and decoded)."""
    parts: list[str] = []
    for state in result.reasoning_state:
        if isinstance(state.payload, bytes):
            parts.append(base64.b64encode(state.payload).decode("ascii"))
            parts.append(state.payload.decode("utf-8", "ignore"))
        else:
            parts.append(state.payload)
    return "\n".join(parts)


def raise_in_a_callback(pipe: Pipe) -> None:
    """A failing callback, so the logging path (with its traceback) runs too."""

    def broken(chunk: str) -> None:
        raise RuntimeError(f"cannot render {chunk!r}")

    pipe.set_streaming_callback(broken)


# ------------------------------------------------------------------------- opaque state


@pytest.mark.parametrize("stream_reasoning", [True, False])
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("target_name", "name"), WITH_OPAQUE_STATE)
def test_opaque_state_reaches_only_the_result(
    wire: WireServer,
    target_name: str,
    name: str,
    flavour: Flavour,
    stream_reasoning: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = TARGETS[target_name]
    original = transcript(name)
    secrets = opaque_payloads(original)

    def prepare(pipe: Pipe) -> None:
        raise_in_a_callback(pipe)
        pipe.set_stream_model_reasoning(stream_reasoning)

    caplog.set_level(logging.DEBUG)
    outcome = play(wire, target, name, Reply(original), flavour, prepare=prepare)
    if outcome.error is None:
        # Kept, byte for byte, where it belongs.
        kept = state_text(outcome.result)
        for secret in secrets:
            assert secret in kept
    for where, text in places(outcome, logged(caplog)).items():
        for secret in secrets:
            assert secret not in text, f"an opaque payload leaked into the {where}"


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(("target_name", "name"), WITH_OPAQUE_STATE)
def test_opaque_state_stays_out_of_errors(
    wire: WireServer,
    target_name: str,
    name: str,
    flavour: Flavour,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Cut just before the end and mid-way: the error and its chain hold no payload."""
    target = TARGETS[target_name]
    original = transcript(name)
    secrets = opaque_payloads(original)
    caplog.set_level(logging.DEBUG)
    for keep in (len(original.events) - 1, len(original.events) // 2):
        outcome = play(wire, target, name, Reply(original, disconnect_after=keep), flavour)
        assert isinstance(outcome.error, ProviderError)
        for where, text in places(outcome, logged(caplog)).items():
            for secret in secrets:
                assert secret not in text, f"an opaque payload leaked into the {where}"


# ------------------------------------------------------------------------------ API keys


def unauthorized(target: Target, *, echo: bool) -> tuple[str, Transcript]:
    """The target's recorded error reply as an HTTP 401; with ``echo``, quoting the key back."""
    name = target.error_transcripts[0]
    original = transcript(name)
    events = copy.deepcopy(original.events)
    if echo:
        events = [_echo_key(events[0])]
    # No retry hints: a refused key is final, and the SDKs would otherwise try again.
    headers = {
        k: v
        for k, v in original.headers.items()
        if k.lower() not in ("retry-after", "x-should-retry", "x-amzn-errortype")
    }
    if target.name == "bedrock":
        headers["x-amzn-ErrorType"] = "UnrecognizedClientException"
    return name, replace(original, status=401, headers=headers, events=events)


def _echo_key(body: Any) -> Any:
    """The error body with its message saying which key was refused, as Google's API does."""
    said = f"API key not valid: {API_KEY}. Please pass a valid API key."
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return {**body, "error": {**error, "message": said}}
        if isinstance(error, str):
            return {**body, "error": said}
        return {**body, "message": said}
    return {"error": {"message": said}}


async def run_own(target: Target, url: str, name: str, flavour: Flavour) -> tuple[Pipe, Any]:
    """Run a pipe that builds its own client from ``base_url`` and ``api_key``."""
    pipe = target.own(url, 2.0, name)
    error: ReasoningStreamError | None = None
    try:
        if flavour == "sync":
            await anyio.to_thread.run_sync(pipe.run, "hi")
        else:
            await pipe.arun("hi")
    except ReasoningStreamError as raised:
        error = raised
    finally:
        await release(pipe)
    return pipe, error


def key_places(pipe: Pipe, error: Any, log: str) -> dict[str, str]:
    found = {"repr(pipe)": repr(pipe), "log": log}
    if pipe.last_result is not None:
        found["repr(result)"] = repr(pipe.last_result)
    for index, link in enumerate(error_chain(error)):
        found[f"error {index}"] = f"{link}\n{link!r}\n{getattr(link, 'body', '')!r}"
    return found


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_api_key_stays_out_of_errors_urls_and_reprs(
    wire: WireServer, target_name: str, flavour: Flavour, caplog: pytest.LogCaptureFixture
) -> None:
    """An HTTP 401, a refused connection, a cut stream and a good one: the key is nowhere."""
    target = TARGETS[target_name]
    caplog.set_level(logging.DEBUG)
    showcase = transcript(target.showcase)
    error_name, refused_reply = unauthorized(target, echo=False)
    cases = {
        "HTTP 401": (error_name, Reply(refused_reply)),
        "cut stream": (showcase.name, Reply(showcase, disconnect_after=3)),
        "complete stream": (showcase.name, Reply(showcase)),
    }
    backend = "trio" if flavour == "trio" else "asyncio"
    for case, (name, reply) in cases.items():
        prefix = fresh_prefix()
        wire.add(under(prefix, reply))
        pipe, error = anyio.run(run_own, target, wire.url + prefix, name, flavour, backend=backend)
        if case != "complete stream":
            assert isinstance(error, ProviderError), (case, error)
        if case == "HTTP 401":
            assert error.status_code == 401
        for where, text in key_places(pipe, error, logged(caplog)).items():
            assert API_KEY not in text, f"{case}: the API key leaked into the {where}"
    for request in wire.requests:
        assert API_KEY not in request.path, "the API key was put in the URL"


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_api_key_stays_out_of_a_refused_connection(
    target_name: str, flavour: Flavour, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens: the transport error names the URL, never the key.

    The client is given (with the key and no retries): the pipes that build their own SDK
    client would retry a refused connection with backoff first, which only costs time here.
    """
    target = TARGETS[target_name]
    caplog.set_level(logging.DEBUG)
    with WireServer() as server:
        url = server.url
    # The server has stopped: nothing listens on its port any more.

    async def attempt() -> tuple[Pipe, ReasoningStreamError | None]:
        built = target.build(url, flavour, 2.0, target.showcase)
        try:
            if flavour == "sync":
                await anyio.to_thread.run_sync(built.pipe.run, "hi")
            else:
                await built.pipe.arun("hi")
        except ReasoningStreamError as raised:
            return built.pipe, raised
        finally:
            closed = built.close()
            if closed is not None:
                await closed
        return built.pipe, None

    pipe, error = anyio.run(attempt, backend="trio" if flavour == "trio" else "asyncio")
    assert isinstance(error, ProviderError)
    for where, text in key_places(pipe, error, logged(caplog)).items():
        assert API_KEY not in text, f"the API key leaked into the {where}"


@pytest.mark.parametrize(
    "target_name",
    # boto3 signs requests with the secret key and never sends it: nothing to echo.
    [name for name in TARGET_NAMES if name != "bedrock"],
)
def test_api_key_echoed_by_the_server_is_scrubbed(wire: WireServer, target_name: str) -> None:
    """A server that quotes the refused key back (Google's APIs do) must not leak it."""
    target = TARGETS[target_name]
    name, reply = unauthorized(target, echo=True)
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(reply)))
    pipe, error = anyio.run(run_own, target, wire.url + prefix, name, "sync")
    assert isinstance(error, ProviderError)
    for where, text in key_places(pipe, error, "").items():
        assert API_KEY not in text, f"the echoed API key leaked into the {where}"


# ----------------------------------------------------------------- passwords in base_url

URL_PASSWORD = "pw-Zq8x@Kv3!unique"
"""A proxy password in ``base_url`` (with an ``@`` in it, as real ones have)."""


def with_password(url: str) -> str:
    """``url`` with ``user:URL_PASSWORD@`` in its authority (the ``@`` percent-encoded)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://proxy-user:{URL_PASSWORD.replace('@', '%40')}@{rest}"


def whole_chain(error: BaseException | None) -> list[BaseException]:
    """The error and every ``__cause__`` and ``__context__`` behind it, however they branch
    (an SDK's ``raise ... from None`` hides its context, which a debugger still shows)."""
    found: list[BaseException] = []
    pending = [error]
    while pending:
        link = pending.pop()
        if link is None or any(link is seen for seen in found):
            continue
        found.append(link)
        pending += [link.__cause__, link.__context__]
    return found


def password_places(pipe: Pipe, error: BaseException | None, log: str) -> dict[str, str]:
    found = {"repr(pipe)": repr(pipe), "log": log}
    if error is not None:
        found["traceback"] = "".join(traceback.format_exception(error))
    for index, link in enumerate(whole_chain(error)):
        found[f"error {index} ({type(link).__name__})"] = (
            f"{link}\n{link!r}\n{link.args!r}\n{getattr(link, 'body', '')!r}"
        )
    return found


def failing_runs(wire: WireServer, target: Target) -> Iterator[tuple[str, Pipe, Any]]:
    """The target's pipe, given ``base_url`` with a password, failing three ways (sync)."""
    error_name, refused_reply = unauthorized(target, echo=False)
    cases: dict[str, str] = {}
    for case, reply in (
        ("HTTP 401", refused_reply),
        ("HTTP 500", replace(refused_reply, status=500, headers={})),
    ):
        prefix = fresh_prefix()
        wire.add(under(prefix, Reply(reply)))
        cases[case] = wire.url + prefix
    with WireServer() as server:
        cases["refused connection"] = server.url  # nothing listens there any more
    for case, url in cases.items():
        if target.provider == "bedrock":
            # boto3 signs with AWS keys and would never send a URL's password: refused,
            # before any client (whose logs would print the URL) is built.
            with pytest.raises(UsageError, match="user:password") as refused:
                target.own(with_password(url), 2.0, error_name)
            assert_no_password(case, {"error": str(refused.value)})
            continue
        pipe, error = anyio.run(run_own, target, with_password(url), error_name, "sync")
        assert isinstance(error, ProviderError), (case, error)
        yield case, pipe, error


def assert_no_password(case: str, places: dict[str, str]) -> None:
    for where, text in places.items():
        assert URL_PASSWORD not in text and URL_PASSWORD.replace("@", "%40") not in text, (
            f"{case}: the base_url password leaked into the {where}"
        )


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_a_password_in_base_url_stays_out_of_errors_and_their_chains(
    wire: WireServer, target_name: str
) -> None:
    """HTTP 401, HTTP 500 and a refused connection, on the SDK and the lean transports: the
    error, every cause and context behind it, and the traceback a program would print."""
    for case, pipe, error in failing_runs(wire, TARGETS[target_name]):
        assert_no_password(case, password_places(pipe, error, ""))


@pytest.mark.parametrize("target_name", TARGET_NAMES)
def test_a_password_in_base_url_stays_out_of_logs(
    wire: WireServer, target_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Everything logged at DEBUG, httpx's and the SDKs' request lines included: the pipe
    never puts the password in a URL; it goes out as the Basic auth it stood for."""
    caplog.set_level(logging.DEBUG)
    before = len(wire.requests)
    for case, pipe, _ in failing_runs(wire, TARGETS[target_name]):
        assert_no_password(case, {"log": logged(caplog), "repr(pipe)": repr(pipe)})
    basic = "Basic " + base64.b64encode(f"proxy-user:{URL_PASSWORD}".encode()).decode()
    for request in wire.requests[before:]:
        assert "@" not in request.path
        if TARGETS[target_name].name != "ollama":  # its SDK sends the key as a bearer
            assert request.headers.get("authorization") == basic


ENV_TARGETS: dict[str, tuple[str, str]] = {
    # target: (the SDK's variable's path under the server, the model)
    "openai-chat-sdk": ("/v1", "o4-mini"),
    "openai-chat-httpx": ("/v1", "o4-mini"),
    "openai-responses": ("/v1", "o4-mini"),
    "openai-responses-httpx": ("/v1", "o4-mini"),
    "anthropic": ("", "claude-sonnet-4-6"),
    "anthropic-httpx": ("", "claude-sonnet-4-6"),
}


@pytest.mark.parametrize("target_name", sorted(ENV_TARGETS))
def test_a_password_in_the_sdk_base_url_variable_stays_out_of_logs_and_errors(
    wire: WireServer,
    target_name: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` with a password, no ``base_url=``: the SDK
    would read the variable itself and log the URL; the pipe reads it first (on both
    transports: the lean one posts there too) and sends the password as Basic auth."""
    from reasoning_stream.providers import AnthropicPipe, OpenAIChatPipe, OpenAIResponsesPipe
    from reasoning_stream.providers._spec import spec

    target = TARGETS[target_name]
    found = spec(target.provider)
    assert found is not None and found.base_url_env is not None
    _, refused_reply = unauthorized(target, echo=False)
    prefix = fresh_prefix()
    wire.add(under(prefix, Reply(refused_reply)))
    path, model = ENV_TARGETS[target_name]
    monkeypatch.setenv(found.base_url_env, with_password(wire.url + prefix + path))
    caplog.set_level(logging.DEBUG)
    before = len(wire.requests)
    cls = {"openai-chat": OpenAIChatPipe, "openai-responses": OpenAIResponsesPipe}.get(
        target.provider, AnthropicPipe
    )
    transport = "httpx" if target_name.endswith("httpx") else "sdk"
    pipe = cls(model, api_key=API_KEY, timeout=2.0, transport=transport)
    try:
        with pytest.raises(ProviderError) as raised:
            pipe.run("hi")
    finally:
        anyio.run(release, pipe)
    assert_no_password("env", password_places(pipe, raised.value, logged(caplog)))
    sent = wire.requests[before:]
    assert sent, "the request did not go to the URL in the variable"
    basic = "Basic " + base64.b64encode(f"proxy-user:{URL_PASSWORD}".encode()).decode()
    assert all(request.headers.get("authorization") == basic for request in sent)
