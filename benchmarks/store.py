"""Conversation stores against a plain ``json.dumps`` + file write: appends/s and load latency.

``python -m benchmarks.store`` (starts a throwaway ``redis-server`` on a free loopback port
when one is installed; ``--redis-url`` uses yours instead).

For conversations of 10 and 1,000 turns (user questions and assistant answers with reasoning,
a signature and a tool call), it times:

- one append of an answer to a conversation of that size (median over rounds: ten appends
  one after the other on each fresh copy): ``store.append(id, result, expected_version=v)``
  against the baseline, which adds the turn in memory, ``json.dumps`` the whole conversation
  and writes the file (and against ``json.dumps`` alone, the CPU part of it);
- one load: ``store.load(id)`` against reading the file, ``json.loads`` and
  ``Conversation.from_json``.

The baseline has no concurrency control and no crash safety (a crash mid-write loses the
file); it is the floor a store must be compared with, not an alternative.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from reasoning_stream import Conversation, PipeResult, ReasoningState, ToolCall
from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore

SIZES = (10, 1_000)


def answer(number: int) -> PipeResult:
    """An assistant turn as a reasoning model produces it."""
    return PipeResult(
        text=f"Answer {number}: " + "the figures add up to forty-two. " * 6,
        model_reasoning="First add the two numbers, then check the units. " * 4,
        reasoning_segments=("First add the two numbers, then check the units. " * 4,),
        reasoning_state=(
            ReasoningState("anthropic", "claude", "signature", "EuYBCkQYAiJA" * 20, block=0),
        ),
        tool_calls=(ToolCall(f"call_{number}", "calculator", '{"expression": "40 + 2"}'),),
        provider="anthropic",
        model="claude",
        response_id=f"msg_{number}",
    )


def conversation_of(turns: int) -> Conversation:
    conversation = Conversation(system="You are a careful assistant.")
    while len(conversation) < turns:
        conversation.add_user(f"Question {len(conversation)}: what is 40 + 2, and why?")
        if len(conversation) < turns:
            conversation.add(answer(len(conversation)))
    return conversation


BATCH = 10
"""Appends timed one by one after each fresh copy: the conversation grows by at most 10."""


def median_append(
    rounds: int, fresh: Callable[[int], object], append: Callable[[int, object], object]
) -> float:
    """Median wall time of one append: ``rounds`` appends, ``BATCH`` per fresh copy."""
    samples = []
    for batch in range(max(1, rounds // BATCH)):
        state = fresh(batch)
        for _ in range(BATCH):
            start = time.perf_counter()
            state = append(batch, state)
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def median_load(rounds: int, load: Callable[[], object]) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        load()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure_store(store: ConversationStore, size: int, rounds: int) -> tuple[float, float]:
    """(seconds per append, seconds per load) for a conversation of ``size`` turns."""
    base = conversation_of(size)
    turn = answer(size)

    def fresh(batch: int) -> object:
        return store.save(f"bench/{size}/{batch}", base)

    def append(batch: int, version: object) -> object:
        assert isinstance(version, int)
        return store.append(f"bench/{size}/{batch}", turn, expected_version=version)

    seconds_append = median_append(rounds, fresh, append)
    store.save(f"bench/{size}/load", base)
    seconds_load = median_load(rounds, lambda: store.load(f"bench/{size}/load"))
    for conversation_id in store.list(f"bench/{size}/"):
        store.delete(conversation_id)
    return seconds_append, seconds_load


def measure_json_file(
    folder: Path, size: int, rounds: int, *, write: bool = True
) -> tuple[float, float]:
    """The floor: the whole conversation through ``json.dumps`` into a file (or a str)."""
    base = conversation_of(size)
    turn = answer(size)
    path = folder / f"bench-{size}.json"
    kept: list[str] = [json.dumps(base.to_json())]

    def fresh(batch: int) -> object:
        return base.copy()

    def append(batch: int, conversation: object) -> object:
        assert isinstance(conversation, Conversation)
        conversation.add(turn)
        text = json.dumps(conversation.to_json())
        if write:
            path.write_text(text, encoding="utf-8")
        else:
            kept[0] = text
        return conversation

    def load() -> Conversation:
        text = path.read_text(encoding="utf-8") if write else kept[0]
        return Conversation.from_json(json.loads(text))

    seconds_append = median_append(rounds, fresh, append)
    kept[0] = json.dumps(base.to_json())
    path.write_text(kept[0], encoding="utf-8")
    seconds_load = median_load(rounds, load)
    return seconds_append, seconds_load


@contextlib.contextmanager
def throwaway_redis(folder: Path) -> Iterator[str | None]:
    """A ``redis-server`` without persistence on a free loopback port, or ``None``."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait()


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print the table; return the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="use this Redis instead of starting one")
    parser.add_argument("--rounds", type=int, default=200, help="samples per figure")
    arguments = parser.parse_args(argv)
    figures: dict[str, float] = {}
    python = f"{platform.python_implementation()} {platform.python_version()}"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {python}\n")
    print(
        "| store | turns | append (median) | appends/s | vs json file | load (median) "
        "| vs json file |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        with throwaway_redis(folder) as started_url:
            redis_url = arguments.redis_url or started_url
            stores: list[tuple[str, Callable[[], ConversationStore]]] = [
                ("SQLiteStore", lambda: SQLiteStore(folder / "bench.db"))
            ]
            if redis_url:
                stores.append(("RedisStore", lambda: RedisStore(redis_url, namespace="bench")))
            for size in SIZES:
                rounds = arguments.rounds
                floor_append, floor_load = measure_json_file(folder, size, rounds)
                print(_row("json.dumps + file write", size, floor_append, 1.0, floor_load, 1.0))
                figures[f"json/{size}/append"] = floor_append
                figures[f"json/{size}/load"] = floor_load
                cpu_append, cpu_load = measure_json_file(folder, size, rounds, write=False)
                print(
                    _row(
                        "json.dumps alone (no file)",
                        size,
                        cpu_append,
                        cpu_append / floor_append,
                        cpu_load,
                        cpu_load / floor_load,
                    )
                )
                for name, make in stores:
                    with make() as store:
                        append, load = measure_store(store, size, rounds)
                    figures[f"{name}/{size}/append"] = append
                    figures[f"{name}/{size}/load"] = load
                    print(
                        _row(
                            name,
                            size,
                            append,
                            append / floor_append,
                            load,
                            load / floor_load,
                        )
                    )
            if not redis_url:
                print("\n(redis-server not found: RedisStore not measured)")
    return figures


def _row(
    name: str, size: int, append: float, append_ratio: float, load: float, load_ratio: float
) -> str:
    return (
        f"| {name} | {size:,} | {append * 1e3:.3f} ms | {1 / append:,.0f} | {append_ratio:.2f}x "
        f"| {load * 1e3:.3f} ms | {load_ratio:.2f}x |"
    )


if __name__ == "__main__":
    main()
