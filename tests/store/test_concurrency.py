"""Many writers at once lose no turn and duplicate none; a killed writer leaves a readable store."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from reasoning_stream import Conversation
from reasoning_stream.store import ConversationStore

from ._workers import append_in_process, append_turns, open_store
from .conftest import StoreFactory, store_address

ROOT = Path(__file__).resolve().parent.parent.parent
TURNS = 25


def assert_every_turn_once_in_order(
    store: ConversationStore, conversation_id: str, writers: list[str], count: int
) -> None:
    conversation, _ = store.load(conversation_id)
    contents = [message["content"] for message in conversation]
    assert len(contents) == len(writers) * count
    assert sorted(contents) == sorted(f"{w}:{n}" for w in writers for n in range(count))
    for writer in writers:
        mine = [c for c in contents if c.split(":")[0] == writer]
        assert mine == [f"{writer}:{n}" for n in range(count)]


def test_eight_threads_sharing_one_store_lose_and_duplicate_nothing(
    store: ConversationStore,
) -> None:
    store.save("chat", Conversation())
    writers = [f"t{index}" for index in range(8)]
    barrier = threading.Barrier(len(writers))

    def write(writer: str) -> list[int]:
        barrier.wait()
        return append_turns(store, "chat", writer, TURNS)

    with ThreadPoolExecutor(len(writers)) as pool:
        versions = list(pool.map(write, writers))
    assert_every_turn_once_in_order(store, "chat", writers, TURNS)
    every = [version for mine in versions for version in mine]
    assert len(set(every)) == len(every)  # no two writes got the same version
    for mine in versions:
        assert mine == sorted(mine)
    assert store.load("chat")[1] == max(every)


def test_four_processes_lose_and_duplicate_nothing(store: ConversationStore) -> None:
    store.save("chat", Conversation())
    writers = [f"p{index}" for index in range(4)]
    address = store_address(store)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(writers), mp_context=context) as pool:
        futures = [
            pool.submit(append_in_process, address, "chat", writer, TURNS) for writer in writers
        ]
        # This process writes too, through its own store object, at the same time.
        append_turns(store, "chat", "main", TURNS)
        versions = [future.result(timeout=120) for future in futures]
    assert_every_turn_once_in_order(store, "chat", [*writers, "main"], TURNS)
    every = [version for mine in versions for version in mine]
    assert len(set(every)) == len(every)


def spawn_worker(
    task: str, store: ConversationStore, conversation_id: str
) -> subprocess.Popen[str]:
    kind, where, namespace = store_address(store)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.store._workers",
            task,
            kind,
            where,
            namespace,
            conversation_id,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_writer_killed_mid_write_leaves_the_store_readable(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.save("chat", Conversation())
    store.save("other", Conversation().add_user("untouched"))
    worker = spawn_worker("append_forever", store, "chat")
    assert worker.stdout is not None
    acknowledged = -1
    try:
        for line in worker.stdout:  # let it get well into its stride, then kill it mid-flight
            acknowledged = int(line)
            if acknowledged >= 200:
                break
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        for line in worker.stdout:  # acknowledgements still in the pipe when it died
            acknowledged = int(line)
    finally:
        worker.kill()
        worker.wait()
        worker.stdout.close()
    assert acknowledged >= 200
    reader = make_store()  # a fresh client, as after a restart
    conversation, _ = reader.load("chat")
    contents = [message["content"] for message in conversation]
    # Every acknowledged turn is there, in order; at most the one in flight beyond them.
    assert len(contents) - 1 in (acknowledged, acknowledged + 1)
    assert contents == [f"k:{number}" for number in range(len(contents))]
    assert reader.load("other")[0] == Conversation().add_user("untouched")
    reader.append("chat", {"role": "user", "content": "after the crash"})
    assert reader.load("chat")[0][-1]["content"] == "after the crash"


def test_a_run_killed_mid_generation_leaves_a_pending_record_others_see(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    store.save("chat", Conversation().add_user("Why is the sky blue?"))
    worker = spawn_worker("run_slowly", store, "chat")
    try:
        deadline = time.monotonic() + 60
        while store.load("chat")[0].pending_generation is None:
            assert time.monotonic() < deadline, "the worker never stored its pending record"
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait()
        assert worker.stdout is not None
        worker.stdout.close()
    conversation, _ = make_store().load("chat")
    pending = conversation.pending_generation
    assert pending is not None
    assert pending.status == "in_progress"
    assert (pending.provider, pending.model) == ("scripted", "scripted")
    assert pending.request_id
    assert len(conversation) == 1  # no answer was stored


def test_a_worker_process_can_open_the_same_store(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("hi"))
    with open_store(store_address(store)) as other:
        assert other.load("chat")[0] == store.load("chat")[0]


def _append_from_forked_child(store: ConversationStore) -> None:
    append_turns(store, "chat", "child", 5)


def test_a_store_inherited_through_fork_opens_its_own_connections(
    store: ConversationStore,
) -> None:
    """SQLite forbids using a connection across fork: the child must not touch the parent's."""
    store.save("chat", Conversation())
    append_turns(store, "chat", "parent", 2)  # the parent has connections open
    child = multiprocessing.get_context("fork").Process(
        target=_append_from_forked_child, args=(store,)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    append_turns(store, "chat", "after", 2)  # the parent's connections still work
    contents = [message["content"] for message in store.load("chat")[0]]
    assert contents == ["parent:0", "parent:1"] + [f"child:{n}" for n in range(5)] + [
        "after:0",
        "after:1",
    ]
