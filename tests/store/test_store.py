"""The store contract, on SQLite and on a real Redis: versions, conflicts, ids, prefixes."""

from __future__ import annotations

import pytest

import reasoning_stream
from reasoning_stream import (
    ConflictError,
    Conversation,
    ConversationNotFoundError,
    PipeResult,
    ReasoningState,
    ReasoningStreamError,
    ToolCall,
    UsageError,
)
from reasoning_stream.store import ConversationStore

from .conftest import StoreFactory

SIGNED = ReasoningState("anthropic", "claude", "signature", "sig-1", block=0)
RAW = ReasoningState("bedrock", "claude", "redacted", b"\x00\xff\xfe raw", block=1)


def answer(text: str = "Oslo is rainy.", **fields: object) -> PipeResult:
    """A run's result with reasoning, opaque state (bytes too) and a tool call."""
    defaults: dict[str, object] = {
        "text": text,
        "model_reasoning": "look it up",
        "reasoning_segments": ("look it up",),
        "reasoning_state": (SIGNED, RAW),
        "tool_calls": (ToolCall("call_1", "weather", '{"city": "Oslo"}'),),
        "provider": "anthropic",
        "model": "claude",
        "response_id": "msg_1",
        "finish_reason": "tool_calls",
    }
    defaults.update(fields)
    return PipeResult(**defaults)  # type: ignore[arg-type]


def history() -> Conversation:
    return Conversation(system="Be brief.").add_user("Weather in Oslo?").add(answer())


def test_conflict_error_is_exported_and_a_library_error() -> None:
    assert reasoning_stream.ConflictError is reasoning_stream.store.ConflictError
    assert issubclass(ConflictError, ReasoningStreamError)
    assert issubclass(ConversationNotFoundError, KeyError)


def test_save_then_load_gives_back_an_equal_conversation(store: ConversationStore) -> None:
    conversation = history()
    conversation.begin_generation(answer(), request_id="req-1")
    version = store.save("chat", conversation)
    loaded, loaded_version = store.load("chat")
    assert loaded == conversation
    assert loaded_version == version
    record = loaded.record(2)
    assert record is not None
    assert [type(state.payload) for state in record.states] == [str, bytes]
    assert record.states[1].payload == b"\x00\xff\xfe raw"
    assert loaded.pending_generation is not None
    assert loaded.pending_generation.request_id == "req-1"


def test_append_does_what_add_and_add_message_do(store: ConversationStore) -> None:
    conversation = Conversation().add_user("Hi")
    version = store.save("chat", conversation)
    conversation.begin_generation(answer())
    version = store.set_pending("chat", conversation.pending_generation, expected_version=version)
    version = store.append("chat", {"role": "user", "content": "more"}, expected_version=version)
    conversation.add_message({"role": "user", "content": "more"})
    assert store.load("chat") == (conversation, version)
    assert store.load("chat")[0].pending_generation is not None  # a message keeps it
    version = store.append("chat", answer(), expected_version=version)
    conversation.add(answer())
    assert store.load("chat") == (conversation, version)
    assert store.load("chat")[0].pending_generation is None  # a result finishes it


def test_every_write_returns_a_greater_version(store: ConversationStore) -> None:
    versions = [store.save("a", Conversation())]
    versions.append(store.append("a", {"role": "user", "content": "1"}))
    versions.append(store.save("b", Conversation()))
    versions.append(store.append("a", answer(), expected_version=versions[-2]))
    versions.append(store.set_pending("a", None))
    loaded_version = store.load("a")[1]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert loaded_version == versions[-1]


def test_a_stale_version_raises_conflict_and_changes_nothing(store: ConversationStore) -> None:
    first = store.save("chat", history())
    second = store.append("chat", {"role": "user", "content": "next"}, expected_version=first)
    before = store.load("chat")
    for write in (
        lambda: store.append("chat", answer(), expected_version=first),
        lambda: store.append("chat", {"role": "user", "content": "x"}, expected_version=first),
        lambda: store.save("chat", Conversation(), expected_version=first),
        lambda: store.save("chat", Conversation()),  # None: must be new
        lambda: store.set_pending("chat", None, expected_version=first),
        lambda: store.delete("chat", expected_version=first),
    ):
        with pytest.raises(ConflictError) as caught:
            write()
        assert caught.value.conversation_id == "chat"
        assert caught.value.actual_version == second
        assert "chat" in str(caught.value)
        assert store.load("chat") == before


def test_a_deleted_and_recreated_conversation_never_reuses_a_version(
    store: ConversationStore,
) -> None:
    old = store.save("chat", history())
    store.delete("chat")
    assert "chat" not in store
    new = store.save("chat", Conversation())
    assert new > old
    with pytest.raises(ConflictError):
        store.append("chat", {"role": "user", "content": "late"}, expected_version=old)
    with pytest.raises(ConflictError):
        store.save("gone", Conversation(), expected_version=old)


def test_a_missing_id_raises_key_error_naming_it(store: ConversationStore) -> None:
    for action in (
        lambda: store.load("nobody"),
        lambda: store.append("nobody", {"role": "user", "content": "x"}),
        lambda: store.set_pending("nobody", None),
        lambda: store.delete("nobody"),
    ):
        with pytest.raises(KeyError, match="nobody") as caught:
            action()
        assert isinstance(caught.value, ConversationNotFoundError)
        assert "nobody" in str(caught.value)
    assert store.list() == []


ODD_IDS = [
    "user/42:chat#1",
    "spaces and\ttabs\nand newlines",
    "quotes ' \" ` and ; -- DROP TABLE",
    "glob * ? [a-z] % _ \\",
    "日本語 🙂 \U0001d11e",
    "nul\x00byte",
    "{hash}:tag",
    "x" * 2000,
]


@pytest.mark.parametrize("conversation_id", ODD_IDS, ids=range(len(ODD_IDS)))
def test_odd_characters_in_ids_round_trip(store: ConversationStore, conversation_id: str) -> None:
    store.save(conversation_id, history())
    store.save(conversation_id + "-other", Conversation())
    assert store.load(conversation_id)[0] == history()
    assert store.list(conversation_id) == sorted([conversation_id, conversation_id + "-other"])
    store.append(conversation_id, {"role": "user", "content": "more"})
    store.delete(conversation_id)
    assert store.list(conversation_id) == [conversation_id + "-other"]


def test_list_matches_a_literal_case_sensitive_prefix(store: ConversationStore) -> None:
    ids = ["user-1", "user-10", "User-2", "user_3", "user%", "user%x", "usera", "u", "zzz", "日本"]
    for conversation_id in ids:
        store.save(conversation_id, Conversation())
    assert store.list() == sorted(ids)
    assert store.list("user") == ["user%", "user%x", "user-1", "user-10", "user_3", "usera"]
    assert store.list("user-1") == ["user-1", "user-10"]
    assert store.list("user%") == ["user%", "user%x"]
    assert store.list("user_") == ["user_3"]
    assert store.list("User") == ["User-2"]
    assert store.list("USER") == []
    assert store.list("日") == ["日本"]
    assert store.list("user-10-and-more") == []


def test_bad_arguments_are_usage_errors(store: ConversationStore) -> None:
    store.save("chat", Conversation())
    for action in (
        lambda: store.save("", Conversation()),
        lambda: store.save(7, Conversation()),  # type: ignore[arg-type]
        lambda: store.save("\ud800", Conversation()),
        lambda: store.save("x", [{"role": "user"}]),  # type: ignore[arg-type]
        lambda: store.append("chat", "hello"),  # type: ignore[arg-type]
        lambda: store.append("chat", {"role": "user"}, expected_version="3"),  # type: ignore[arg-type]
        lambda: store.append("chat", {"role": "user"}, expected_version=True),
        lambda: store.save("x", Conversation().add_user(b"bytes are not JSON")),
        lambda: store.save("x", Conversation().add_user(float("nan"))),
        lambda: store.append("chat", {"role": "user", "content": {1, 2}}),
    ):
        with pytest.raises(UsageError):
            action()
    assert store.list() == ["chat"]
    assert store.load("chat")[0] == Conversation()


def test_two_clients_see_each_others_writes(make_store: StoreFactory) -> None:
    first, second = make_store(), make_store()
    version = first.save("chat", history())
    assert second.load("chat") == (history(), version)
    version = second.append("chat", {"role": "user", "content": "and now?"})
    with pytest.raises(ConflictError):
        first.append("chat", answer(), expected_version=version - 1)
    assert first.load("chat")[1] == version
