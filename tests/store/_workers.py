"""Code that runs in worker processes (spawned, so it must be importable)."""

from __future__ import annotations

import sys
import time

from reasoning_stream import ConflictError, ReasoningDelta, TextDelta
from reasoning_stream.store import ConversationStore, RedisStore, SQLiteStore
from reasoning_stream.testing import ScriptedPipe


def open_store(address: tuple[str, str, str]) -> ConversationStore:
    kind, where, namespace = address
    if kind == "sqlite":
        return SQLiteStore(where)
    return RedisStore(where, namespace=namespace, cluster=kind == "redis-cluster")


def append_turns(
    store: ConversationStore, conversation_id: str, writer: str, count: int
) -> list[int]:
    """Append ``count`` numbered turns the optimistic way: read, write, retry on conflict."""
    versions: list[int] = []
    for number in range(count):
        message = {"role": "user", "content": f"{writer}:{number}"}
        while True:
            _, version = store.load(conversation_id)
            try:
                versions.append(store.append(conversation_id, message, expected_version=version))
                break
            except ConflictError:
                continue
    return versions


def append_in_process(
    address: tuple[str, str, str], conversation_id: str, writer: str, count: int
) -> list[int]:
    with open_store(address) as store:
        return append_turns(store, conversation_id, writer, count)


def append_forever(address: tuple[str, str, str], conversation_id: str) -> None:
    """Append numbered turns until killed, printing each acknowledged one."""
    with open_store(address) as store:
        number = 0
        while True:
            store.append(conversation_id, {"role": "user", "content": f"k:{number}"})
            print(number, flush=True)
            number += 1


def run_slowly(address: tuple[str, str, str], conversation_id: str) -> None:
    """A stored run whose model reasons, then hangs until the process is killed."""
    pipe = ScriptedPipe([ReasoningDelta("thinking hard"), 600.0, TextDelta("never")])
    with open_store(address) as store:
        store.run(conversation_id, pipe)


if __name__ == "__main__":
    target = {"append_forever": append_forever, "run_slowly": run_slowly}[sys.argv[1]]
    address = (sys.argv[2], sys.argv[3], sys.argv[4])
    started = time.monotonic()
    target(address, sys.argv[5])
