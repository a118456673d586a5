"""``reasoning-stream demo``: the whole contract, offline, through the real SDK clients.

The demo starts a :class:`~reasoning_stream.testing.WireServer` on 127.0.0.1 with bundled
transcripts and points the official clients at it, so every byte goes through the same parsing
a live run would. By default it runs a two-pipe Pipeline: a DeepSeek-style OpenAI-compatible
model writes a haiku, and an Anthropic model with signed extended thinking reviews it. One
channel carries both; ``split()`` then recovers each pipe's reasoning and the answers.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from typing import IO, Any

from ._cli import wrap_parts
from ._pipe import Pipe, PipeResult
from ._pipeline import Pipeline
from ._render import ChannelRenderer, color_wanted, is_terminal, paint
from ._stream import ReasoningStream
from .testing import Reply, Transcript, WireServer

__all__ = [  # noqa: F822 (DEMO_PROVIDERS comes from the registry, lazily)
    "DEMO_PROVIDERS",
    "build_demo_pipe",
    "run_demo",
]

DELAY = 0.02
"""Seconds between wire chunks, so the stream is watchable."""


def __getattr__(name: str) -> Any:
    if name == "DEMO_PROVIDERS":
        return _demo_providers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _demo_providers() -> dict[str, tuple[str, str]]:
    """What ``demo --provider NAME`` replays: a bundled transcript and the model it names."""
    from .providers._spec import specs

    return {
        spec.name: (spec.demo.transcript, spec.demo.model)
        for spec in specs()
        if spec.demo is not None
    }


def build_demo_pipe(provider: str, model: str, url: str, *, name: str | None = None) -> Pipe:
    """A provider pipe whose official client talks to the local server at ``url``."""
    from .providers._spec import by_name

    spec = by_name(provider)
    if spec is None or spec.demo is None:
        raise ValueError(f"unknown provider {provider!r}; choose from {sorted(_demo_providers())}")
    pipe: Pipe = spec.demo.build(model, url, name)
    return pipe


def run_demo(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    """Stream the demo into one channel, then show what ``split()`` and the results hold."""
    out = out or sys.stdout
    raw = bool(getattr(args, "raw", False))
    provider = getattr(args, "provider", None)
    chunks: list[str] = []
    renderer: ChannelRenderer | None = None

    def channel(chunk: str) -> None:
        chunks.append(chunk)
        if renderer is not None and not renderer.reader_gone:
            # The reader may leave (`| head`); the replay is short, so let it finish.
            with contextlib.suppress(BrokenPipeError):
                renderer(chunk)

    with WireServer() as server:
        runner: Callable[[], list[PipeResult]]
        if provider is None:
            server.add(Reply(Transcript.load("demo_deepseek"), delay=DELAY))
            server.add(Reply(Transcript.load("demo_anthropic"), delay=DELAY))
            writer = build_demo_pipe("openai", "deepseek-reasoner", server.url, name="writer")
            critic = build_demo_pipe("anthropic", "claude-sonnet-4-6", server.url, name="critic")
            pipeline = Pipeline(writer, critic).set_streaming_callback(channel)
            prompt = "Write a haiku about streaming a model's thoughts."

            def runner() -> list[PipeResult]:
                return list(pipeline.run(prompt).results)

        else:
            transcript, model = _demo_providers()[provider]
            server.add(Reply(Transcript.load(transcript), delay=DELAY))
            pipe = build_demo_pipe(provider, model, server.url, name=provider)
            pipe.set_streaming_callback(channel)

            def runner() -> list[PipeResult]:
                return [pipe.run("What is 2 + 2?")]

        if not raw:
            out.write(f"Replaying recorded wire bytes from {server.url} through the real SDKs.\n\n")
            out.flush()
        # Created after the line above: its live "Thinking…" line owns the cursor from here.
        renderer = ChannelRenderer(out, raw=raw)
        try:
            results = runner()
        finally:
            renderer.close()
    if raw:
        if is_terminal(out) and not renderer.at_line_start:
            out.write("\n")  # into a pipe the bytes stay exactly the channel
        return 0
    if not renderer.at_line_start:
        out.write("\n")
    _report(out, "".join(chunks), results)
    return 0


def _report(out: IO[str], collected: str, results: list[PipeResult]) -> None:
    split = ReasoningStream.split(collected, lossless=True)
    lossless_ok = split.segments == tuple(
        segment for result in results for segment in result.reasoning_segments
    ) and split.text == "".join(result.text for result in results)
    style = _Style(out)
    out.write("\n" + style.bold("What each pipe captured") + "\n")  # after a blank line
    for result in results:
        usage, timings = result.usage, result.timings
        states = ", ".join(sorted({state.kind for state in result.reasoning_state})) or "none"
        segments = len(result.reasoning_segments)
        lines: list[tuple[str, str | list[str]]] = [
            (
                "reasoning",
                f"{segments} segment{'s' * (segments != 1)}, "
                f"{len(result.model_reasoning)} chars; opaque state: {states}",
            ),
            ("answer", f"{len(result.text)} chars"),
            (
                "tokens",
                f"in {_n(usage.input_tokens)} · out {_n(usage.output_tokens)} · "
                f"reasoning {_n(usage.reasoning_tokens)}",
            ),
            (
                "timings",
                [
                    f"first reasoning {_s(timings.time_to_first_reasoning)}",
                    f"first text {_s(timings.time_to_first_text)}",
                    f"thinking {timings.reasoning_duration:.2f} s",
                    f"total {timings.total:.2f} s",
                ],
            ),
        ]
        out.write(
            f"{style.bold(result.source or '-')} ({result.provider or '-'}) "
            f"status {result.status}\n"
        )
        for label, value in lines:
            parts = [value] if isinstance(value, str) else value
            # Wrapped as if the 13-column label were there, so continuations line up under it.
            text = wrap_parts(" " * 13 + parts[0], parts[1:], indent=" " * 13)[13:]
            out.write(f"  {style.dim(label.ljust(11))}{text}\n")
    out.write(
        f"\nsplit() of the collected channel: {len(split.segments)} reasoning segment(s),\n"
        f"  {len(split.text)} characters of answer, truncated={split.truncated}\n"
        f"split(channel, lossless=True) equals every result's reasoning and text: {lossless_ok}\n"
    )


class _Style:
    """Bold and dim where colour is wanted (a terminal, ``NO_COLOR`` and ``FORCE_COLOR``)."""

    def __init__(self, out: IO[str]) -> None:
        self._on = color_wanted(out)

    def bold(self, text: str) -> str:
        return paint(text, "bold", self._on)

    def dim(self, text: str) -> str:
        return paint(text, "dim", self._on)


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
