"""Store-backed runs: pending record before the call, the answer after, retried on conflict."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest

from reasoning_stream import (
    ConflictError,
    Conversation,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    UsageError,
)
from reasoning_stream.store import ConversationStore, arun_stored, run_stored
from reasoning_stream.testing import ScriptedPipe

from .conftest import StoreFactory


def contents(conversation: Conversation) -> list[Any]:
    return [message["content"] for message in conversation]


def test_store_run_records_the_answer_and_clears_the_pending_record(
    store: ConversationStore,
) -> None:
    store.save("chat", Conversation(system="Be brief.").add_user("2+2?"))
    seen: list[Any] = []

    def script(prompt: Any) -> list[Any]:
        seen.append(list(prompt))
        pending = store.load("chat")[0].pending_generation
        assert pending is not None and pending.status == "in_progress"  # stored before the call
        return [ReasoningDelta("add them"), TextDelta("4")]

    result = store.run("chat", ScriptedPipe(script))
    conversation, _ = store.load("chat")
    assert result.text == "4"
    assert contents(conversation) == ["Be brief.", "2+2?", "4"]
    assert conversation[-1]["thinking"] == "add them"
    assert conversation.pending_generation is None
    record = conversation.record(2)
    assert record is not None and record.provider == "scripted"
    assert seen == [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    ]


def test_conversation_run_with_a_store_saves_new_and_extended_histories(
    make_store: StoreFactory,
) -> None:
    store, other = make_store(), make_store()
    conversation = Conversation().add_user("first?")
    conversation.run(ScriptedPipe([TextDelta("one")]), store=store, conversation_id="chat")
    assert other.load("chat")[0] == conversation
    conversation.add_user("second?")
    conversation.run(ScriptedPipe([TextDelta("two")]), store=store, conversation_id="chat")
    assert contents(conversation) == ["first?", "one", "second?", "two"]
    assert other.load("chat")[0] == conversation


def test_a_stored_history_with_turns_the_local_one_lacks_is_a_conflict(
    store: ConversationStore,
) -> None:
    store.save("chat", Conversation().add_user("hi").add_user("someone else wrote this"))
    pipe = ScriptedPipe([TextDelta("never")])
    local = Conversation().add_user("hi").add_user("my own question")
    with pytest.raises(ConflictError, match="'chat'"):
        local.run(pipe, store=store, conversation_id="chat")
    assert pipe.prompts == []
    assert contents(store.load("chat")[0]) == ["hi", "someone else wrote this"]


def test_a_turn_written_during_the_run_is_kept_and_the_answer_goes_after_it(
    make_store: StoreFactory,
) -> None:
    store, other = make_store(), make_store()
    store.save("chat", Conversation().add_user("question"))

    def script(prompt: Any) -> list[Any]:
        other.append("chat", {"role": "user", "content": "written meanwhile"})
        return [TextDelta("answer")]

    local = store.load("chat")[0]
    result = local.run(ScriptedPipe(script), store=store, conversation_id="chat")
    assert result.text == "answer"
    stored = store.load("chat")[0]
    assert contents(stored) == ["question", "written meanwhile", "answer"]
    assert stored.pending_generation is None
    assert local == stored  # the local conversation follows the store


def test_another_run_begun_meanwhile_keeps_its_pending_record(make_store: StoreFactory) -> None:
    store, other = make_store(), make_store()
    store.save("chat", Conversation().add_user("question"))

    def script(prompt: Any) -> list[Any]:
        conversation, version = other.load("chat")
        record = conversation.begin_generation(ScriptedPipe([]), request_id="someone-else")
        other.set_pending("chat", record, expected_version=version)
        return [TextDelta("mine")]

    store.run("chat", ScriptedPipe(script))
    stored = store.load("chat")[0]
    assert contents(stored) == ["question", "mine"]
    assert stored.pending_generation is not None
    assert stored.pending_generation.request_id == "someone-else"


def test_a_failed_run_stores_what_it_captured(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("question"))
    pipe = ScriptedPipe(
        [ReasoningDelta("half a thought"), TextDelta("partial"), ProviderError("overloaded")]
    )
    with pytest.raises(ProviderError):
        store.run("chat", pipe)
    stored = store.load("chat")[0]
    assert contents(stored) == ["question"]
    pending = stored.pending_generation
    assert pending is not None
    assert pending.status == "error"
    assert (pending.partial_text, pending.partial_reasoning) == ("partial", "half a thought")
    assert pending.error is not None and "overloaded" in pending.error


def test_runs_from_four_threads_each_store_their_answer_once(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("go"))
    barrier = threading.Barrier(4)

    def run(index: int) -> str:
        barrier.wait()
        return store.run("chat", ScriptedPipe([0.01 * index, TextDelta(f"answer {index}")])).text

    with ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(run, range(4)))
    stored = store.load("chat")[0]
    assert sorted(contents(stored)[1:]) == sorted(texts) == [f"answer {i}" for i in range(4)]
    assert stored.pending_generation is None


@pytest.mark.anyio
async def test_arun_records_the_answer(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("hi"))
    result = await arun_stored(store, "chat", ScriptedPipe([0.01, TextDelta("hello")]))
    assert result.text == "hello"
    local = store.load("chat")[0].add_user("again")
    await local.arun(ScriptedPipe([TextDelta("twice")]), store=store, conversation_id="chat")
    assert contents(store.load("chat")[0]) == ["hi", "hello", "again", "twice"]
    assert store.load("chat")[0] == local


@pytest.mark.anyio
async def test_a_cancelled_arun_stores_its_status(store: ConversationStore) -> None:
    store.save("chat", Conversation().add_user("hi"))
    pipe = ScriptedPipe([ReasoningDelta("thinking"), 30.0, TextDelta("late")])
    with anyio.move_on_after(0.3):
        await store.arun("chat", pipe)
    stored = store.load("chat")[0]
    assert contents(stored) == ["hi"]
    pending = stored.pending_generation
    assert pending is not None
    assert pending.status == "cancelled_before_answer"
    assert pending.partial_reasoning == "thinking"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: Conversation().run(ScriptedPipe([]), store=s),
        lambda s: Conversation().run(ScriptedPipe([]), conversation_id="chat"),
        lambda s: Conversation().run(ScriptedPipe([]), store=object(), conversation_id="chat"),
        lambda s: run_stored(s, "", ScriptedPipe([])),
    ],
)
def test_misuse_is_a_usage_error(
    store: ConversationStore, call: Callable[[ConversationStore], object]
) -> None:
    with pytest.raises(UsageError):
        call(store)


def test_running_a_missing_id_from_the_store_is_a_key_error(store: ConversationStore) -> None:
    pipe = ScriptedPipe([TextDelta("x")])
    with pytest.raises(KeyError, match="nobody"):
        store.run("nobody", pipe)
    assert pipe.prompts == []


def test_repair_passes_through_a_stored_run(store: ConversationStore) -> None:
    local = Conversation().add_user("hi")
    pipe = ScriptedPipe([TextDelta("hello")])
    local.run(pipe, repair=True, store=store, conversation_id="chat")
    assert contents(store.load("chat")[0]) == ["hi", "hello"]
    assert store.run("chat", ScriptedPipe([TextDelta("again")]), repair=True).text == "again"
