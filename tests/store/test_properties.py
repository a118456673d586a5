"""Law: any sequence of saves, appends, pending records, edits and branches round-trips.

Each example drives the store and an in-memory ``Conversation`` (the model) through the same
steps; after every step ``store.load`` must give back exactly the model and the version the
last write returned. Budget: 60 examples of up to 12 steps per backend (a few seconds each).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning_stream import Conversation, GenerationRecord, PipeResult, ReasoningState, ToolCall
from reasoning_stream.store import ConversationStore
from tests.helpers import examples

from .conftest import StoreFactory

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
PROVIDERS = st.sampled_from(["anthropic", "openai-responses", "gemini", "bedrock", None])
states = st.builds(
    ReasoningState,
    provider=st.sampled_from(["anthropic", "gemini", "bedrock"]),
    model=st.sampled_from(["m1", "m2"]),
    kind=st.sampled_from(["signature", "redacted", "encrypted", "thought"]),
    payload=st.text(max_size=12) | st.binary(max_size=12),
    block=st.none() | st.integers(-3, 50) | st.text(max_size=5),
    endpoint=st.none() | st.just("https://a.example/v1"),
    extra=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=2),
)
results = st.builds(
    PipeResult,
    text=st.text(max_size=12),
    model_reasoning=st.text(max_size=12),
    reasoning_state=st.lists(states, max_size=3).map(tuple),
    tool_calls=st.lists(
        st.builds(ToolCall, id=st.text(min_size=1, max_size=5), name=st.text(max_size=5)),
        max_size=2,
    ).map(tuple),
    status=st.sampled_from(["completed", "length", "cancelled_after_partial_answer", "error"]),
    finish_reason=st.none() | st.sampled_from(["stop", "tool_calls", "length"]),
    provider=PROVIDERS,
    model=st.none() | st.sampled_from(["m1", "m2"]),
    response_id=st.none() | st.text(max_size=6),
)
messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "system", "tool", "assistant"]),
        "content": st.text(max_size=10) | JSON_VALUES,
    },
    optional={
        "thinking": st.text(max_size=6),
        "timestamp": st.floats(allow_nan=False, allow_infinity=False),
    },
)


@dataclass(frozen=True)
class PipeScope:
    provider: str | None
    model: str | None
    endpoint: str | None = None


@st.composite
def pending_records(draw: st.DrawFn) -> GenerationRecord | None:
    if draw(st.booleans()):
        return None
    record = GenerationRecord.for_pipe(
        PipeScope(draw(PROVIDERS), draw(st.sampled_from(["m1", "m2"]))),
        request_id=draw(st.none() | st.text(max_size=6)),
    )
    if draw(st.booleans()):
        record.update_from(draw(results))
    return record


steps = st.one_of(
    st.tuples(st.just("message"), messages),
    st.tuples(st.just("result"), results),
    st.tuples(st.just("pending"), pending_records()),
    st.tuples(st.just("edit"), st.integers(-20, 20), st.text(max_size=8) | JSON_VALUES),
    st.tuples(st.just("regenerate")),
    st.tuples(st.just("compact"), st.integers(0, 4)),
    st.tuples(st.just("save_new"), st.lists(messages, max_size=3)),
    st.tuples(st.just("unconditional_append"), messages),
)


def apply(
    store: ConversationStore, conversation_id: str, model: Conversation, version: int, step: Any
) -> tuple[Conversation, int]:
    """Do ``step`` to the store and to the model; return the new model and version."""
    kind = step[0]
    if kind == "message":
        version = store.append(conversation_id, step[1], expected_version=version)
        model.add_message(step[1])
    elif kind == "unconditional_append":
        version = store.append(conversation_id, step[1])
        model.add_message(step[1])
    elif kind == "result":
        version = store.append(conversation_id, step[1], expected_version=version)
        model.add(step[1])
    elif kind == "pending":
        version = store.set_pending(conversation_id, step[1], expected_version=version)
        if step[1] is None:
            model.discard_generation()
        else:
            data = model.to_json()
            data["pending_generation"] = step[1].to_json()
            model = Conversation.from_json(data)
    elif kind in ("edit", "regenerate", "compact"):
        if kind == "edit":
            if not len(model):
                return model, version
            model = model.edit(step[1] % len(model), step[2])
        elif kind == "regenerate":
            if not any(message.get("role") == "user" for message in model):
                return model, version
            model = model.regenerate()
        else:
            model = model.compact(step[1])
        version = store.save(conversation_id, model, expected_version=version)
    elif kind == "save_new":
        store.delete(conversation_id, expected_version=version)
        model = Conversation(step[1])
        version = store.save(conversation_id, model)
    return model, version


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(initial=st.lists(messages, max_size=4), plan=st.lists(steps, max_size=12))
def test_any_sequence_of_writes_round_trips(
    make_store: StoreFactory, initial: list[dict[str, Any]], plan: list[Any]
) -> None:
    store = _shared(make_store)
    conversation_id = f"chat/{uuid.uuid4().hex}"
    model = Conversation(initial)
    version = store.save(conversation_id, model)
    assert store.load(conversation_id) == (model, version)
    for step in plan:
        previous = version
        model, version = apply(store, conversation_id, model, version, step)
        assert version >= previous
        loaded, loaded_version = store.load(conversation_id)
        assert loaded_version == version
        assert loaded == model
        for index in range(len(model)):
            mine, theirs = model.record(index), loaded.record(index)
            if mine is not None and theirs is not None:
                assert [type(s.payload) for s in mine.states] == [
                    type(s.payload) for s in theirs.states
                ]
    assert conversation_id in store.list("chat/")


_STORES: dict[int, ConversationStore] = {}


def _shared(make_store: StoreFactory) -> ConversationStore:
    """One store per test (the factory is per test), reused across hypothesis examples."""
    key = id(make_store)
    if key not in _STORES:
        _STORES.clear()
        _STORES[key] = make_store()
    return _STORES[key]
