"""``Pipe.arun`` and ``Pipe.run`` over a ScriptedPipe against bare loops calling the same callback.

Each round times the four contenders once, back to back, and takes the ratios within the round;
the table gives the median over the rounds and the spread (a shared machine drifts).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.testing import ScriptedPipe

from ._rounds import cpu_seconds, median, spread

EVENTS = 100_000
ROUNDS = 7


def script() -> list[ReasoningDelta | TextDelta]:
    half = EVENTS // 2
    return [ReasoningDelta(f"r{i % 10} ") for i in range(half)] + [
        TextDelta(f"t{i % 10} ") for i in range(EVENTS - half)
    ]


def workloads() -> dict[str, Callable[[], object]]:
    """The four contenders: async and sync, bare loop and pipe, over the same deltas."""
    items = script()
    strings = [item.text for item in items]
    sink: list[str] = []

    async def acallback(chunk: str) -> None:
        sink.append(chunk)

    def callback(chunk: str) -> None:
        sink.append(chunk)

    async def abare() -> None:
        for text in strings:
            await acallback(text)

    def bare() -> None:
        for text in strings:
            callback(text)

    apipe = ScriptedPipe(items).set_streaming_callback(acallback)
    pipe = ScriptedPipe(items).set_streaming_callback(callback)

    async def piped() -> None:
        await apipe.arun("p")

    def clearing(work: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            sink.clear()
            return work()

        return run

    return {
        "abare": clearing(lambda: anyio.run(abare)),
        "arun": clearing(lambda: anyio.run(piped)),
        "bare": clearing(bare),
        "run": clearing(lambda: pipe.run("p")),
    }


def main(rounds: int = ROUNDS) -> dict[str, float]:
    """Print the table; return the figures (medians over the rounds) for the README."""
    work = workloads()
    seconds: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(rounds):
        for name, run in work.items():
            seconds[name].append(cpu_seconds(run, repeat=2))
    print(f"Pipe drivers: {EVENTS:,} deltas into one callback, {rounds} interleaved rounds")
    print("| what | CPU/event | ratio, median [spread] |")
    print("|---|---|---|")
    figures: dict[str, float] = {}
    for label, name, floor in (
        ("bare loop awaiting an async callback", "abare", "abare"),
        ("ScriptedPipe.arun, the same async callback", "arun", "abare"),
        ("bare loop calling a sync callback", "bare", "bare"),
        ("ScriptedPipe.run, the same sync callback", "run", "bare"),
    ):
        ratios = [ours / base for ours, base in zip(seconds[name], seconds[floor], strict=True)]
        print(f"| {label} | {median(seconds[name]) / EVENTS * 1e9:.0f} ns | {spread(ratios)}x |")
        figures[f"{name}_ns"] = median(seconds[name]) / EVENTS * 1e9
        figures[f"{name}_ratio"] = median(ratios)
    figures["pipe_ratio"] = figures["arun_ratio"]
    print()
    return figures


if __name__ == "__main__":
    main()
