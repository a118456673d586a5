"""Sealed envelopes: keys, round trips, tampering, rotation, nothing readable, and preflight.

The oracle for "nothing readable" is independent of the code under test: every way a payload
could leak (plain, base64, URL-safe base64, hex, zlib) is looked for in the envelope and in
whatever base64 it holds, decoded. The cipher is checked from outside too: an envelope forged
here with ``cryptography`` directly, under the right key but another purpose, must not open.
Hypothesis budget: 40 examples per law (pure, no I/O).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import sys
import zlib
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningState, UsageError
from reasoning_stream.conversation import Conversation, TurnRecord
from reasoning_stream.conversation._envelopes import (
    EnvelopeInvalid,
    SealKeys,
    Turn,
    turn_binding,
)
from reasoning_stream.testing import ScriptedPipe
from tests.conversation.helpers import FakePipe
from tests.helpers import examples

PURE = settings(max_examples=examples(40), deadline=None)
# Fixed keys (pytest-xdist workers must collect the same test ids): random enough for tests.
OLD, NEW, FOREIGN = (hashlib.sha256(name).digest() for name in (b"old", b"new", b"foreign"))

TURN: list[Turn] = [("", [])]
"""An assistant turn with no text and no tool calls."""
HELLO: list[Turn] = [("Hello.", [])]


def seal(keys: SealKeys, record: TurnRecord, turn: list[Turn] = TURN) -> str:
    """``record`` sealed alone, for one turn."""
    return keys.seal([record], turn)


def unseal(keys: SealKeys, envelope: str, turn: list[Turn] = TURN) -> TurnRecord:
    """The one record of ``envelope``, opened for the turn it was sealed for."""
    (record,) = keys.open_for(envelope, turn)
    return record


def readable_copies(secret: str | bytes) -> list[bytes]:
    """A secret as it would show if anything leaked it: plain, base64, hex, compressed."""
    raw = secret.encode() if isinstance(secret, str) else secret
    b64 = base64.b64encode(raw)
    return [
        raw,
        b64,
        b64.rstrip(b"="),
        base64.urlsafe_b64encode(raw).rstrip(b"="),
        raw.hex().encode(),
        raw.hex().upper().encode(),
        zlib.compress(raw),
        zlib.compress(raw, 9),
    ]


def assert_unreadable(secret: str | bytes, *texts: str) -> None:
    """No copy of ``secret`` is in ``texts``, nor in any base64 word they hold, decoded."""
    for text in texts:
        blobs = [text.encode()]
        for word in text.replace('"', " ").replace(".", " ").split():
            padded = word + "=" * (-len(word) % 4)
            for decode in (base64.urlsafe_b64decode, base64.b64decode):
                with contextlib.suppress(ValueError):
                    blobs.append(decode(padded))
        for copy in readable_copies(secret):
            assert not any(copy in blob for blob in blobs), "a readable copy leaked"


payloads = st.one_of(st.text(min_size=12, max_size=80), st.binary(min_size=12, max_size=80))
states = st.builds(
    ReasoningState,
    provider=st.sampled_from(["anthropic", "openai-responses", "gemini"]),
    model=st.text(min_size=1, max_size=12),
    kind=st.sampled_from(["signature", "redacted", "encrypted_content"]),
    payload=payloads,
    block=st.one_of(st.none(), st.integers(0, 9), st.text(max_size=8)),
    endpoint=st.one_of(st.none(), st.just("https://api.example.com/v1")),
    extra=st.dictionaries(st.text(max_size=6), st.text(max_size=20), max_size=2),
)
records = st.builds(
    TurnRecord,
    provider=st.text(min_size=1, max_size=10),
    model=st.text(min_size=1, max_size=10),
    endpoint=st.one_of(st.none(), st.just("https://api.example.com/v1")),
    states=st.lists(states, max_size=4).map(tuple),
    response_id=st.one_of(st.none(), st.text(max_size=10)),
    reasoned=st.one_of(st.none(), st.booleans()),
)


# ------------------------------------------------------------------------------- keys


def test_a_key_as_bytes_or_as_base64_text_is_the_same_key() -> None:
    forms = [
        NEW,
        bytearray(NEW),
        base64.b64encode(NEW).decode(),
        base64.urlsafe_b64encode(NEW).decode().rstrip("="),
        f"  {base64.urlsafe_b64encode(NEW).decode()}\n",
    ]
    sealed = seal(SealKeys([NEW]), TurnRecord("p", "m"))
    for form in forms:
        keys = SealKeys([form])
        assert keys.key_ids == SealKeys([NEW]).key_ids
        assert unseal(keys, sealed) == TurnRecord("p", "m")


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        pytest.param(NEW, "list of keys", id="bytes"),
        pytest.param(base64.b64encode(NEW).decode(), "list of keys", id="text"),
        ([], "empty"),
        ([NEW[:31]], "31 bytes"),
        ([NEW + b"x"], "33 bytes"),
        ([NEW, 42], "seal_keys[1] is of type int"),
        (["not base64 at all!"], "not base64"),
        ([base64.b64encode(NEW[:16]).decode()], "16 bytes"),
    ],
)
def test_a_bad_key_is_a_usage_error_that_never_shows_the_key(keys: Any, says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(says)) as raised:
        SealKeys(keys)
    message = str(raised.value)
    assert_unreadable(NEW, message)
    assert "not base64 at all" not in message


def test_the_key_id_is_in_clear_and_says_nothing_of_the_key() -> None:
    keys = SealKeys([NEW])
    envelope = seal(keys, TurnRecord("p", "m"))
    version, key_id, _steps, _ = envelope.split(".")
    assert (version, key_id) == ("rs1", keys.key_ids[0])
    assert_unreadable(NEW, key_id)
    assert "hidden" not in repr(keys) and NEW.hex() not in repr(keys)


# ------------------------------------------------------------------------------- laws


@PURE
@given(records)
def test_open_gives_back_what_was_sealed(record: TurnRecord) -> None:
    keys = SealKeys([NEW, OLD])
    assert unseal(keys, seal(keys, record)) == TurnRecord.from_json(record.to_json())


@PURE
@given(st.lists(states, min_size=1, max_size=3))
def test_no_envelope_holds_a_readable_copy_of_a_payload(found: list[ReasoningState]) -> None:
    envelope = seal(SealKeys([NEW]), TurnRecord("p", "m", states=tuple(found)))
    for state in found:
        assert_unreadable(state.payload, envelope)


def test_the_readability_check_catches_an_encoded_copy() -> None:
    """The oracle itself: a payload that leaks base64 encoded is caught."""
    payload = secrets.token_hex(20)
    leaked = "rs1.0." + base64.urlsafe_b64encode(json.dumps({"p": payload}).encode()).decode()
    with pytest.raises(AssertionError):
        assert_unreadable(payload, leaked)


@PURE
@given(records, st.data())
def test_any_change_to_an_envelope_keeps_it_shut(record: TurnRecord, data: st.DataObject) -> None:
    keys = SealKeys([NEW])
    envelope = seal(keys, record)
    position = data.draw(st.integers(0, len(envelope) - 1))
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
    replacement = data.draw(st.sampled_from(alphabet).filter(lambda c: c != envelope[position]))
    altered = envelope[:position] + replacement + envelope[position + 1 :]
    with contextlib.suppress(EnvelopeInvalid):
        opened = unseal(keys, altered)
        # base64 without padding has a few spare bits: a change that only flips them decodes
        # to the same bytes, so what opens is exactly what was sealed.
        assert opened == TurnRecord.from_json(record.to_json())
        assert base64.urlsafe_b64decode(altered.split(".")[3] + "==") == (
            base64.urlsafe_b64decode(envelope.split(".")[3] + "==")
        )


def test_truncated_and_foreign_shapes_do_not_open() -> None:
    keys = SealKeys([NEW])
    envelope = seal(keys, TurnRecord("p", "m"))
    for altered in (envelope[:-4], envelope[:30], "", "rs1", "rs2" + envelope[3:], 42, None):
        with pytest.raises(EnvelopeInvalid):
            unseal(keys, altered)


def test_an_envelope_made_for_another_purpose_does_not_open() -> None:
    """Forged here with the right key and a valid record, but other associated data."""
    keys = SealKeys([NEW])
    key_id = keys.key_ids[0]
    step = {"record": TurnRecord("p", "m").to_json(), "turn": turn_binding("").hex(), "calls": []}
    plain = json.dumps({"steps": [step]}).encode()
    for associated in (None, b"", f"rs1.{key_id}.1".encode(), b"another purpose"):
        nonce = os.urandom(12)
        body = nonce + AESGCM(NEW).encrypt(nonce, plain, associated)
        forged = f"rs1.{key_id}.1." + base64.urlsafe_b64encode(body).decode().rstrip("=")
        with pytest.raises(EnvelopeInvalid, match="altered"):
            unseal(keys, forged)


def test_keys_rotate_the_first_seals_and_every_one_opens() -> None:
    record = TurnRecord("p", "m", states=(ReasoningState("p", "m", "signature", "sig-1"),))
    old_envelope = seal(SealKeys([OLD]), record)
    rotated = SealKeys([NEW, OLD])
    assert unseal(rotated, old_envelope) == record
    new_envelope = seal(rotated, record)
    assert new_envelope.split(".")[1] == SealKeys([NEW]).key_ids[0]
    assert unseal(SealKeys([NEW]), new_envelope) == record
    with pytest.raises(EnvelopeInvalid, match="key"):
        unseal(SealKeys([NEW]), old_envelope)  # the old key retired
    with pytest.raises(EnvelopeInvalid, match="foreign key"):
        unseal(SealKeys([FOREIGN]), new_envelope)


def test_two_seals_of_one_record_differ() -> None:
    """A random nonce per envelope: equal records give unrelated envelopes."""
    keys = SealKeys([NEW])
    record = TurnRecord("p", "m", states=(ReasoningState("p", "m", "signature", "s"),))
    assert seal(keys, record) != seal(keys, record)


# -------------------------------------------------------------------------- preflight


def signed_record() -> TurnRecord:
    state = ReasoningState("acme", "acme-1", "signature", "sig-" + secrets.token_hex(8))
    return TurnRecord("acme", "acme-1", states=(state,), reasoned=True)


def history(envelope: str | None) -> list[dict[str, Any]]:
    """AG-UI messages of one answered question, the envelope on the assistant message."""
    assistant: dict[str, Any] = {"id": "text-2", "role": "assistant", "content": "Hello."}
    if envelope is not None:
        assistant["encryptedValue"] = envelope
    return [
        {"id": "u1", "role": "user", "content": "Hi"},
        {"id": "reasoning-1", "role": "reasoning", "content": "Greet back."},
        assistant,
        {"id": "u2", "role": "user", "content": "And?"},
    ]


def tampered(envelope: str) -> str:
    body = bytearray(base64.urlsafe_b64decode(envelope.split(".")[3] + "=="))
    body[20] ^= 1
    return ".".join([*envelope.split(".")[:3], base64.urlsafe_b64encode(body).decode()])


def cases() -> dict[str, tuple[str | None, list[bytes] | None]]:
    envelope = seal(SealKeys([OLD]), signed_record(), HELLO)
    return {
        "tampered": (tampered(envelope), [NEW, OLD]),
        "foreign key": (envelope, [NEW, FOREIGN]),
        "missing": (None, [NEW, OLD]),
        "no keys given": (envelope, None),
    }


@pytest.mark.parametrize("case", sorted(cases()))
def test_an_envelope_that_does_not_open_is_envelope_invalid_for_every_pipe(case: str) -> None:
    envelope, keys = cases()[case]
    conversation = Conversation.from_ag_ui(history(envelope), seal_keys=keys)
    assert conversation.messages[1] == {
        "role": "assistant",
        "content": "Hello.",
        "thinking": "Greet back.",
    }
    for pipe in (FakePipe("acme", "acme-1"), FakePipe(None, None), ScriptedPipe(["x"])):
        problems = conversation.preflight(pipe)
        assert [(p.index, p.code) for p in problems] == [(1, "envelope_invalid")]
    record = conversation.record(1)
    assert record is not None and record.states == () and record.envelope_problem
    # Saved and loaded, the problem stays.
    assert Conversation.loads(conversation.dumps()).preflight(ScriptedPipe(["x"])) == problems


def test_a_valid_envelope_restores_the_record_and_passes_preflight() -> None:
    record = signed_record()
    conversation = Conversation.from_ag_ui(
        history(seal(SealKeys([OLD]), record, HELLO)), seal_keys=[NEW, OLD]
    )
    assert conversation.record(1) == record
    assert conversation.preflight(FakePipe("acme", "acme-1")) == []


def test_a_history_without_keys_or_envelopes_is_plain() -> None:
    conversation = Conversation.from_ag_ui(history(None))
    assert conversation.record(1) is None
    assert conversation.preflight(ScriptedPipe(["x"])) == []


def test_a_run_refuses_an_invalid_envelope_unless_repaired() -> None:
    envelope, keys = cases()["tampered"]
    conversation = Conversation.from_ag_ui(history(envelope), seal_keys=keys)
    pipe = ScriptedPipe(["fine"])
    pipe.provider = "acme"  # a provider without rules: the envelope check is the library's
    with pytest.raises(UsageError, match="message 1: envelope_invalid"):
        conversation.check_passback(pipe)
    with pytest.warns(UserWarning, match="messages 1 came back without a valid sealed"):
        conversation.with_repair().checked_turns(pipe, conversation_policy(pipe))


def conversation_policy(pipe: object) -> Any:
    from reasoning_stream.conversation import PassbackPolicy

    return PassbackPolicy.for_pipe(pipe)


def test_without_cryptography_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'reasoning-stream[envelopes]'")):
        SealKeys([NEW])


# --------------------------------------------------------------- bound to the turn, per step


def two_turns(first: str, second: str) -> list[dict[str, Any]]:
    """AG-UI messages of two answered questions, each turn's envelope on its message."""
    return [
        {"id": "u1", "role": "user", "content": "Hi"},
        {"id": "a1", "role": "assistant", "content": "One.", "encryptedValue": first},
        {"id": "u2", "role": "user", "content": "And?"},
        {"id": "a2", "role": "assistant", "content": "Two.", "encryptedValue": second},
    ]


def test_an_envelope_moved_onto_another_turn_of_the_same_model_does_not_open() -> None:
    keys = SealKeys([NEW])
    one, two = signed_record(), signed_record()
    first, second = seal(keys, one, [("One.", [])]), seal(keys, two, [("Two.", [])])
    kept = Conversation.from_ag_ui(two_turns(first, second), seal_keys=[NEW])
    assert [kept.record(1), kept.record(3)] == [one, two]
    swapped = Conversation.from_ag_ui(two_turns(second, first), seal_keys=[NEW])
    problems = swapped.preflight(FakePipe("acme", "acme-1"))
    assert [(p.index, p.code) for p in problems] == [
        (1, "envelope_invalid"),
        (3, "envelope_invalid"),
    ]
    with pytest.raises(EnvelopeInvalid, match="another assistant turn"):
        keys.open_for(first, [("One!", [])])  # a text the client edited
    with pytest.raises(EnvelopeInvalid, match="another assistant turn"):
        keys.open_for(first, [("One.", ["call_1"])])  # other tool calls


def test_a_tool_loops_envelope_gives_each_step_its_record_even_when_a_client_split_a_step() -> None:
    """Steps: (text, call a), (calls b and c, thinking between them), (answer). AG-UI's client
    puts b's result right after b's message, before the thinking that came before c."""
    keys = SealKeys([NEW])
    records = [signed_record() for _ in range(3)]
    envelope = keys.seal(records, [("Let me see.", ["a"]), ("", ["b", "c"]), ("Done.", [])])

    def call(name: str) -> dict[str, Any]:
        function = {"name": "f", "arguments": "{}"}
        return {
            "id": name,
            "role": "assistant",
            "toolCalls": [{"id": name, "type": "function", "function": function}],
        }

    def result(name: str) -> dict[str, Any]:
        return {"id": f"t-{name}", "role": "tool", "toolCallId": name, "content": name.upper()}

    messages = [
        {"id": "u", "role": "user", "content": "Go"},
        {"id": "r1", "role": "reasoning", "content": "first"},
        {"id": "x1", "role": "assistant", "content": "Let me see."},
        call("a"),
        result("a"),
        {"id": "r2", "role": "reasoning", "content": "second"},
        call("b"),
        result("b"),
        {"id": "r3", "role": "reasoning", "content": "between"},
        call("c"),
        result("c"),
        {"id": "x3", "role": "assistant", "content": "Done.", "encryptedValue": envelope},
    ]
    conversation = Conversation.from_ag_ui(messages, seal_keys=[NEW])
    roles = [(m["role"], m.get("tool_call_id")) for m in conversation]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "a"),
        ("assistant", None),
        ("tool", "b"),
        ("tool", "c"),
        ("assistant", None),
    ]
    assert conversation[3]["thinking"] == "second\nbetween"
    assert [conversation.record(i) for i in (1, 3, 6)] == records
    assert conversation.preflight(FakePipe("acme", "acme-1")) == []
    # The same envelope on a history whose second step lost a call: nothing opens.
    broken = [m for m in messages if m["id"] not in ("c", "t-c")]
    problems = Conversation.from_ag_ui(broken, seal_keys=[NEW]).preflight(
        FakePipe("acme", "acme-1")
    )
    assert {p.code for p in problems} == {"envelope_invalid"}
