"""Sealed envelopes: an assistant turn's record, opaque state included, for a client to keep.

A client that holds the history itself (an AG-UI or AI SDK front end) needs to send each turn's
signatures and encrypted reasoning back, yet must neither read nor alter them. The hub seals the
run's :class:`TurnRecord` s (one per model step: a tool loop run by a hub has several; each
with its opaque states in order, each state with its scope: provider, model, endpoint, kind,
payload, block; and the turn's own scope) into one envelope, a short ASCII string; the browser
keeps it; ``Conversation.from_ag_ui`` / ``from_ui_messages`` open it again.

The cipher is AES-256-GCM from the ``cryptography`` package (``pip install
'reasoning-stream[envelopes]'``): a random 96-bit nonce per envelope, and associated data that
binds the envelope to its purpose and to its header. Sealed with each step's record is the turn
it belongs to: a digest of the answer text the run produced and of its tool call ids (see
:func:`turn_binding`), as the client sends them back. An envelope made for something else, one
whose header was edited, or one moved onto another assistant turn does not open
(:meth:`SealKeys.open_for`; a client that sends the text back unchanged is fine). The
envelope is::

    rs1.<key id>.<steps>.<base64url(nonce + ciphertext + tag)>

The key id, in clear, names the key that sealed it (16 hex digits of a SHA-256 of the key, which
says nothing about the key), so keys rotate: ``seal_keys=[new, *older]`` seals with the first
and opens with any. Nothing inside is readable: no copy of a payload, plain or encoded, is in
the envelope.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._exceptions import UsageError
from ._records import TurnRecord

__all__ = [
    "ENVELOPE_KEY",
    "MOVED",
    "EnvelopeInvalid",
    "SealKey",
    "SealKeys",
    "SealedStep",
    "Turn",
    "seal_keys_or_none",
    "turn_binding",
]

SealKey: TypeAlias = "bytes | str"
"""A key: 32 random bytes, or their base64 text (standard or URL-safe, padding optional)."""

ENVELOPE_KEY = "envelope"
"""The field an envelope travels under (``providerMetadata.reasoningStream.envelope``)."""

_VERSION = "rs1"
_PURPOSE = b"reasoning-stream sealed turn record\x00"
_NONCE = 12
_KEY_BYTES = 32
_MAX_STEPS = 10_000
_INSTALL = (
    "sealed envelopes need the cryptography package: pip install 'reasoning-stream[envelopes]'"
)


class EnvelopeInvalid(ValueError):
    """An envelope that does not open: tampered, sealed with a key not held, or malformed.

    ``reason`` says which, in words for a ``PassbackProblem`` (never the envelope's bytes).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL) from error
    return AESGCM


Turn: TypeAlias = "tuple[str, Sequence[str | None]]"
"""An assistant turn as a client sends it back: its answer text and its tool call ids."""

MOVED = (
    "the envelope belongs to another assistant turn (its text or tool calls differ from the "
    "turn it was sealed for: moved, or edited by the client)"
)


@dataclass(frozen=True, slots=True)
class SealedStep:
    """One model step of an opened envelope: its record, the :func:`turn_binding` of the
    turn it belongs to, and that turn's tool call ids (to find the turn in a client's
    history, where a step's messages may be split by tool results)."""

    record: TurnRecord
    turn: bytes
    calls: tuple[str | None, ...]


def turn_binding(text: str, call_ids: Iterable[str | None] = ()) -> bytes:
    """What binds an envelope to one assistant turn: a digest of its answer text and its tool
    call ids, in order (32 bytes; the text cannot be read back from it).

    >>> turn_binding("Hi.") == turn_binding("Hi.", [])
    True
    >>> turn_binding("Hi.") == turn_binding("Hi!")
    False
    """
    data = json.dumps([text, [None if i is None else str(i) for i in call_ids]])
    return hashlib.sha256(b"reasoning-stream turn\x00" + data.encode()).digest()


def steps_in(envelope: object) -> int:
    """How many model steps ``envelope`` holds, from its clear header; :class:`EnvelopeInvalid`
    when it is not one this library sealed."""
    if isinstance(envelope, str):
        parts = envelope.split(".")
        if len(parts) == 4 and parts[0] == _VERSION and parts[2].isdigit() and parts[3]:
            steps = int(parts[2])
            if 0 < steps <= _MAX_STEPS:
                return steps
        raise EnvelopeInvalid("the envelope is malformed (not one this library sealed)")
    raise EnvelopeInvalid(f"the envelope is a {type(envelope).__name__}, not a str")


def _key_bytes(key: object, position: int) -> bytes:
    """``key`` as its 32 bytes, or ``UsageError`` saying what a key is (never echoing it)."""
    if isinstance(key, bytes | bytearray):
        raw = bytes(key)
    elif isinstance(key, str):
        text = key.strip()
        try:
            standard = text.replace("-", "+").replace("_", "/").rstrip("=")
            raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise UsageError(
                f"seal_keys[{position}] is a str that is not base64; a key is 32 random bytes, "
                "or their base64 text: base64.urlsafe_b64encode(secrets.token_bytes(32))"
            ) from None
    else:
        raise UsageError(
            f"seal_keys[{position}] is of type {type(key).__name__}; a key is 32 random bytes "
            "(secrets.token_bytes(32)) or their base64 text"
        )
    if len(raw) != _KEY_BYTES:
        raise UsageError(
            f"seal_keys[{position}] is {len(raw)} bytes long; a key is exactly {_KEY_BYTES} "
            "random bytes (secrets.token_bytes(32)) or their base64 text"
        )
    return raw


def _key_id(raw: bytes) -> str:
    return hashlib.sha256(b"reasoning-stream key id\x00" + raw).hexdigest()[:16]


class SealKeys:
    """The keys that seal and open envelopes: the first seals, every one opens.

    >>> keys = SealKeys([bytes(range(32))])
    >>> record, turn = TurnRecord("acme", "acme-1"), [("Hello.", [])]
    >>> keys.open_for(keys.seal([record], turn), turn) == (record,)
    True
    >>> keys.seal([record], turn).startswith("rs1." + keys.key_ids[0] + ".1.")
    True
    """

    __slots__ = ("_ciphers", "key_ids")

    def __init__(self, keys: Sequence[SealKey]) -> None:
        if isinstance(keys, str | bytes | bytearray) or not isinstance(keys, Sequence):
            raise UsageError(
                "seal_keys takes a list of keys, newest first: seal_keys=[key, *older] "
                f"(got {type(keys).__name__})"
            )
        if not keys:
            raise UsageError("seal_keys is empty; give at least one key: seal_keys=[key]")
        raws = [_key_bytes(key, position) for position, key in enumerate(keys)]
        aesgcm = _aesgcm()
        self.key_ids: tuple[str, ...] = tuple(_key_id(raw) for raw in raws)
        """The ids of the keys, in order; an envelope names its key by one of them."""
        self._ciphers: dict[str, Any] = {}
        for key_id, raw in zip(self.key_ids, raws, strict=True):
            self._ciphers.setdefault(key_id, aesgcm(raw))

    def __repr__(self) -> str:
        return f"SealKeys(key_ids={list(self.key_ids)!r})"

    def seal(self, records: Sequence[TurnRecord], turns: Sequence[Turn]) -> str:
        """``records`` (one per model step, in order) sealed with the first key, each with
        the turn it belongs to (``turns``: each step's answer text and tool call ids, as the
        client will send them back): an ASCII envelope nobody can read or alter, that opens
        only for those turns."""
        if not records or len(records) != len(turns):
            raise UsageError("seal() takes one turn per record, and at least one record")
        key_id = self.key_ids[0]
        header = f"{_VERSION}.{key_id}.{len(records)}"
        steps = [
            {
                "record": record.to_json(),
                "turn": turn_binding(text, calls).hex(),
                "calls": [None if call is None else str(call) for call in calls],
            }
            for record, (text, calls) in zip(records, turns, strict=True)
        ]
        plain = json.dumps({"steps": steps}, separators=(",", ":")).encode()
        nonce = os.urandom(_NONCE)
        sealed = self._ciphers[key_id].encrypt(nonce, plain, _PURPOSE + header.encode())
        body = base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode("ascii")
        return f"{header}.{body}"

    def open(self, envelope: object) -> tuple[SealedStep, ...]:
        """The steps sealed in ``envelope``, each with its record and the turn it belongs
        to; :class:`EnvelopeInvalid` when it does not open (altered, foreign key)."""
        steps_in(envelope)
        assert isinstance(envelope, str)
        version, key_id, count, body = envelope.split(".")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise EnvelopeInvalid(
                "the envelope was sealed with a key these seal_keys do not hold (a foreign "
                "key, or an old key retired from the list)"
            )
        try:
            data = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            header = f"{version}.{key_id}.{count}"
            plain = cipher.decrypt(data[:_NONCE], data[_NONCE:], _PURPOSE + header.encode())
        except Exception:  # InvalidTag, a short body, bad base64: all say "altered"
            raise EnvelopeInvalid(
                "the envelope was altered (it does not authenticate under its key)"
            ) from None
        try:
            return tuple(
                SealedStep(
                    TurnRecord.from_json(step["record"]),
                    bytes.fromhex(step["turn"]),
                    tuple(step["calls"]),
                )
                for step in json.loads(plain)["steps"]
            )
        except (ValueError, KeyError, TypeError):  # pragma: no cover - sealed by a newer format
            raise EnvelopeInvalid("the envelope holds a record this version cannot read") from None

    def open_for(self, envelope: object, turns: Sequence[Turn]) -> tuple[TurnRecord, ...]:
        """The records of ``envelope`` when ``turns`` are the turns it was sealed for;
        :class:`EnvelopeInvalid` otherwise (also when moved onto another turn)."""
        steps = self.open(envelope)
        if [step.turn for step in steps] != [turn_binding(*turn) for turn in turns]:
            raise EnvelopeInvalid(MOVED)
        return tuple(step.record for step in steps)


def seal_keys_or_none(keys: SealKeys | Sequence[SealKey] | None) -> SealKeys | None:
    """``keys`` as :class:`SealKeys` (checked now, so a bad key fails at construction)."""
    if keys is None or isinstance(keys, SealKeys):
        return keys
    return SealKeys(keys)
