"""``reasoning-stream demo``: the whole contract, offline, with no API key."""

from __future__ import annotations

import argparse
import sys

from ._events import Finish, ReasoningDelta, TextDelta, Usage, UsageReport
from ._pipeline import Pipeline
from ._stream import ReasoningStream
from .testing import ScriptedPipe

__all__ = ["run_demo"]


def run_demo(args: argparse.Namespace) -> int:
    """Stream a two-pipe pipeline into one channel, then show what ``split()`` recovers."""
    out = sys.stdout
    chunks: list[str] = []
    writer = ScriptedPipe(
        [
            ReasoningDelta("The user wants a haiku about streams. "),
            0.05,
            ReasoningDelta("Five, seven, five syllables."),
            TextDelta("Bytes drift through the pipe,\n"),
            TextDelta("thoughts wrapped in <think> tags - escaped,\n"),
            TextDelta("answers find the shore."),
            UsageReport(Usage(input_tokens=12, output_tokens=40, reasoning_tokens=18)),
            Finish("stop"),
        ],
        name="writer",
    )
    critic = ScriptedPipe(
        lambda draft: [
            ReasoningDelta(f"Checking a {len(draft)}-character draft."),
            TextDelta("Verdict: a fine haiku."),
            Finish("stop"),
        ],
        name="critic",
    )
    pipeline = Pipeline(writer, critic)

    def show(chunk: str) -> None:
        chunks.append(chunk)
        out.write(chunk)
        out.flush()

    pipeline.set_streaming_callback(show)
    result = pipeline.run("Write a haiku about streaming.")
    out.write("\n\n")
    if args.raw:
        return 0
    split = ReasoningStream.split("".join(chunks))
    out.write("split() recovered:\n")
    for index, segment in enumerate(split.segments, 1):
        out.write(f"  reasoning segment {index}: {segment!r}\n")
    out.write(f"  text: {split.text!r}\n")
    for pipe_result in result.results:
        usage = pipe_result.usage
        out.write(
            f"  {pipe_result.source}: status={pipe_result.status} "
            f"reasoning_tokens={usage.reasoning_tokens} "
            f"total={pipe_result.timings.total:.3f}s\n"
        )
    return 0
