"""``Pipe.arun`` over a ScriptedPipe against a bare loop calling the same callback."""

from __future__ import annotations

import anyio

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.testing import ScriptedPipe

from ._timing import HEADER, measure, row

EVENTS = 100_000


def script() -> list[ReasoningDelta | TextDelta]:
    half = EVENTS // 2
    return [ReasoningDelta(f"r{i % 10} ") for i in range(half)] + [
        TextDelta(f"t{i % 10} ") for i in range(EVENTS - half)
    ]


def main() -> dict[str, float]:
    """Print the table; return the figures for the README."""
    items = script()
    strings = [item.text for item in items]
    sink: list[str] = []

    async def callback(chunk: str) -> None:
        sink.append(chunk)

    async def bare() -> None:
        for text in strings:
            await callback(text)

    pipe = ScriptedPipe(items).set_streaming_callback(callback)

    async def piped() -> None:
        await pipe.arun("p")

    def run(coro: object) -> None:
        sink.clear()
        anyio.run(coro)  # type: ignore[arg-type]

    print(f"Pipe.arun: {EVENTS:,} events into one async callback")
    print(HEADER)
    floor = measure(lambda: run(bare))
    ours = measure(lambda: run(piped))
    print(row("bare loop awaiting the callback", floor, floor, EVENTS))
    print(row("ScriptedPipe.arun", ours, floor, EVENTS))
    print()
    return {"pipe_ratio": ours.cpu / floor.cpu}


if __name__ == "__main__":
    main()
