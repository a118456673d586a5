"""``conform()``: does a gateway between the user and a provider keep reasoning intact?

Offline, a :class:`~reasoning_stream.testing.WireServer` plays the provider behind the
gateway: it answers each request from the bundled transcripts (streamed when the request
asks for a stream, else the one-shot reply the stream adds up to) and records what the
gateway sent it. The probe drives multi-turn tool loops through the gateway with our own
provider pipes, streamed and one-shot, and checks each documented rule on what went
upstream and what came back (:mod:`._conform_rules`). ``live=True`` sends one small real
tool loop through the gateway to the real API instead, with the user's key.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from reasoning_stream import PassbackPolicy, UsageError
from reasoning_stream.testing._conform_loop import build_pipe, drive_loop
from reasoning_stream.testing._conform_report import ConformReport, ConformRow
from reasoning_stream.testing._conform_rules import (
    LoopRun,
    reasoning_as_reasoning,
    stream_equals_oneshot,
)
from reasoning_stream.testing._conform_shapes import SHAPES, Shape
from reasoning_stream.testing._conform_wire import oneshot
from reasoning_stream.testing._transcript import Transcript
from reasoning_stream.testing._wire import RecordedRequest, WireServer

if TYPE_CHECKING:
    from reasoning_stream.providers._spec import ProviderSpec

__all__ = ["ConformReport", "ConformRow", "conform", "conform_providers", "run_probe"]

_OFFLINE_KEY = "conform-offline-not-a-key"


def conform_providers() -> tuple[str, ...]:
    """The ``--provider`` names the probe can check, in the registry's order."""
    from reasoning_stream.providers._spec import specs

    return tuple(spec.name for spec in specs() if spec.name in SHAPES)


def conform(
    provider: str,
    base_url: str,
    *,
    model: str | None = None,
    upstream_port: int | None = None,
    live: bool = False,
) -> ConformReport:
    """Check that the gateway at ``base_url`` keeps ``provider``'s reasoning intact.

    Offline, the upstream's URL is printed (to standard error) once it listens, before any
    request, for the gateway's config.

    Args:
        provider: the wire shape the gateway speaks, as a ``--provider`` name
            (``"anthropic"``, ``"responses"``, ``"openai"``, ``"openrouter"``, ``"gemini"``,
            ``"ollama"``).
        base_url: the gateway's API root for that shape, as our pipe would take it
            (``http://localhost:4000`` for Anthropic Messages, ``.../v1`` for OpenAI).
        model: the model name the gateway routes (default: the transcripts' model).
        upstream_port: the port the offline upstream listens on, so the gateway's config
            can name it ahead (default: a free port).
        live: send one small real tool loop through the gateway to the real API instead,
            with the key from the provider's usual variable (never printed).

    Returns:
        a :class:`ConformReport`; ``report.passed`` only when every rule held.

    Raises:
        UsageError: an unknown provider, a bad base URL, a busy port, or (live) no key.
    """

    def announce(url: str) -> None:
        sys.stderr.write(f"reasoning-stream conform: upstream at {url} ({provider})\n")
        sys.stderr.flush()

    return run_probe(
        provider, base_url, model=model, upstream_port=upstream_port, live=live,
        on_upstream=announce,
    )  # fmt: skip


def run_probe(
    provider: str,
    base_url: str,
    *,
    model: str | None = None,
    upstream_port: int | None = None,
    live: bool = False,
    on_upstream: Callable[[str], None] | None = None,
) -> ConformReport:
    """:func:`conform`, telling ``on_upstream`` the upstream's URL instead of printing it."""
    shape, spec = _shape(provider)
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
    if live:
        from reasoning_stream.testing._conform_live import live_rows

        rows = live_rows(shape, spec, base_url, model or shape.model, _key(spec, live=True))
        return ConformReport(provider, base_url, tuple(rows), live=True)
    upstream = _Upstream(shape)
    server = WireServer(port=upstream_port or 0, responder=upstream.reply)
    try:
        server.start()
    except OSError as error:
        raise UsageError(f"conform: {error}; choose another --upstream-port") from error
    upstream_url = server.url
    try:
        if on_upstream is not None:
            on_upstream(upstream_url)
        runs = {
            (loop, stream): _run_loop(shape, spec, upstream, server, loop, stream, base_url, model)
            for loop in shape.loops
            for stream in (True, False)
        }
    finally:
        server.stop()
    rows = _rows(shape, PassbackPolicy.for_provider(spec.id, shape.model), runs)
    return ConformReport(
        provider, base_url, tuple(rows), upstream_url=upstream_url, requests=tuple(server.requests)
    )


def _shape(provider: str) -> tuple[Shape, ProviderSpec]:
    from reasoning_stream.providers._spec import by_name

    spec = by_name(provider)
    shape = SHAPES.get(provider)
    if spec is None or shape is None:
        known = ", ".join(conform_providers())
        raise UsageError(f"conform knows the wire shapes {known}; got --provider {provider!r}")
    return shape, spec


def _key(spec: ProviderSpec, *, live: bool) -> str:
    """The key the gateway wants: the provider's usual variable, else (offline) a stand-in."""
    for name in spec.key_env:
        if os.environ.get(name):
            return os.environ[name]
    if live:
        names = " or ".join(spec.key_env) or "a key variable"
        raise UsageError(f"conform --live sends a real request: set {names} first")
    return _OFFLINE_KEY


# --------------------------------------------------------------------------- the upstream


class _Upstream:
    """Chooses each reply from the request: the loop running now, the step, stream or not."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self._lock = threading.Lock()
        self._loop: tuple[Transcript, ...] = ()

    @contextlib.contextmanager
    def playing(self, transcripts: tuple[Transcript, ...]) -> Iterator[None]:
        with self._lock:
            self._loop = transcripts
        try:
            yield
        finally:
            with self._lock:
                self._loop = ()

    def reply(self, request: RecordedRequest) -> Transcript | None:
        if request.method != "POST":
            return None
        try:
            body = request.json()
        except ValueError:
            return None
        with self._lock:
            transcripts = self._loop
        if not transcripts:
            return None
        step = min(self.shape.step_of(body), len(transcripts) - 1)
        transcript = transcripts[step]
        if self.shape.streams(request, body):
            return transcript
        return oneshot(transcript, "chat" if self.shape.wire == "chat" else self.shape.wire)


def _run_loop(
    shape: Shape,
    spec: ProviderSpec,
    upstream: _Upstream,
    server: WireServer,
    loop: str,
    stream: bool,
    base_url: str,
    model: str | None,
) -> LoopRun:
    transcripts = shape.transcripts(loop)
    run = LoopRun(loop, stream, transcripts, step_of=shape.step_of)
    first = len(server.requests)
    pipe = build_pipe(
        shape, spec, base_url, model or shape.model, _key(spec, live=False), stream=stream
    )
    with upstream.playing(transcripts):
        drive_loop(pipe, run, steps=len(transcripts))
    run.requests = list(server.requests[first:])
    return run


def _rows(
    shape: Shape, policy: PassbackPolicy, runs: Mapping[tuple[str, bool], LoopRun]
) -> list[ConformRow]:
    rows: list[ConformRow] = []
    said = (
        f" (the registry's passback policy for {shape.model}: states {policy.states}, "
        f"readable reasoning {policy.reasoning})"
    )
    for rule in (rule for rule in shape.rules if rule.applies(policy)):
        (ok_streamed, streamed), (ok_oneshot, oneshot_detail) = (
            rule.check(runs[rule.loop, stream]) for stream in (True, False)
        )
        if streamed == oneshot_detail:
            detail = f"streamed and one-shot alike: {streamed}"
        else:
            detail = f"streamed: {streamed} | one-shot: {oneshot_detail}"
        rows.append(ConformRow(rule.name, ok_streamed and ok_oneshot, detail + said, rule.doc))
    equal = [stream_equals_oneshot(runs[loop, True], runs[loop, False]) for loop in shape.loops]
    rows.append(
        ConformRow(
            "stream_equals_oneshot",
            all(ok for ok, _ in equal),
            " | ".join(detail for _, detail in equal),
            shape.stream_doc,
        )
    )
    wire = _reference_shape(shape)
    seen = [(loop, reasoning_as_reasoning(wire, runs[loop, True])) for loop in shape.loops]
    rows.append(
        ConformRow(
            "reasoning_as_reasoning",
            all(ok for _, (ok, _) in seen),
            " | ".join(f"loop '{loop}': {detail}" for loop, (_, detail) in seen),
            shape.reasoning_doc,
        )
    )
    return rows


def _reference_shape(shape: Shape) -> str:
    return "openrouter" if shape.provider_id == "openrouter" else shape.wire
