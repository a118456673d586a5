"""``_json.loads`` gives what ``json.loads`` gives, for every document, whichever decoder runs;
``_json.loads_utf8`` gives what ``json.loads`` gives for the UTF-8 text of any bytes (the text
httpx's ``iter_text`` would have read: a malformed sequence is U+FFFD)."""

from __future__ import annotations

import codecs
import importlib
import importlib.util
import json
import math
import struct
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reasoning_stream import _json
from tests.helpers import examples

# Every character, lone surrogates included (hypothesis leaves those out unless asked).
characters = st.characters(codec=None) | st.integers(0xD800, 0xDFFF).map(chr)
keys = st.text(characters, max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-(10**400), 10**400)  # far beyond 64 bits
    | st.floats()  # NaN and the infinities too: json.dumps writes NaN, Infinity, -Infinity
    | st.text(characters, max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=20,
)


def outcome(decode: Any, data: str | bytes) -> tuple[str, Any]:
    """What decoding does: ("ok", value) or ("error", (the exception's type, its message))."""
    try:
        return ("ok", decode(data))
    except Exception as error:
        return ("error", (type(error), str(error)))


def same(a: Any, b: Any) -> bool:
    """Equal values of the very same types, floats bit for bit (NaN included), keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_decodes_like_json(data: str | bytes) -> None:
    ours, stdlib = outcome(_json.loads, data), outcome(json.loads, data)
    assert ours[0] == stdlib[0], (data, ours, stdlib)
    if ours[0] == "ok":
        assert same(ours[1], stdlib[1]), (data, ours, stdlib)
    else:
        assert ours[1] == stdlib[1], (data, ours, stdlib)


def text_of(data: bytes) -> str:
    """The text an httpx ``iter_text`` reader makes of UTF-8 bytes, independently of ours."""
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, True)


def assert_utf8_decodes_like_json(data: bytes) -> None:
    for decode in (_json.loads_utf8, _json.stdlib_loads_utf8):
        ours, stdlib = outcome(decode, data), outcome(json.loads, text_of(data))
        assert ours[0] == stdlib[0], (data, ours, stdlib)
        if ours[0] == "ok":
            assert same(ours[1], stdlib[1]), (data, ours, stdlib)
        else:
            assert ours[1] == stdlib[1], (data, ours, stdlib)


def documents(value: Any) -> Iterator[str]:
    """``value`` written the ways a server may write it: escaped or raw, compact or spaced."""
    yield json.dumps(value)
    yield json.dumps(value, ensure_ascii=False)
    yield json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    yield json.dumps(value, indent="\t")


@settings(max_examples=examples(150), deadline=None)
@given(values)
@example(float("nan"))
@example([float("inf"), float("-inf"), -0.0, 5e-324, 1.7976931348623157e308])
@example({"big": 2**64, "negative": -(2**63) - 1, "huge": 10**4299})
@example("\ud800 lone \udfff surrogates \udc00\ud800 reversed")
@example({"é": "日本 🙂 \u2028 \x00 \x1f"})
def test_any_value_decodes_as_json_loads_decodes_it(value: Any) -> None:
    for document in documents(value):
        assert_decodes_like_json(document)
        assert_decodes_like_json(document.encode("utf-8", "surrogatepass"))
        assert_utf8_decodes_like_json(document.encode("utf-8", "surrogatepass"))


@settings(max_examples=examples(300), deadline=None)
@given(st.text(st.sampled_from('{}[]",:0123456789-+.eE truefalsnul\\u\n\tNaIfiy\ufeff\ud800é')))
def test_arbitrary_text_decodes_or_fails_as_json_loads_does(text: str) -> None:
    """Malformed documents too: the same value, or an error of the same type."""
    assert_decodes_like_json(text)
    assert_decodes_like_json(text.encode("utf-8", "surrogatepass"))
    assert_utf8_decodes_like_json(text.encode("utf-8", "surrogatepass"))


# Malformed UTF-8 (lone continuation bytes, truncated and overlong sequences, encoded
# surrogates, bytes never valid), a byte order mark, UTF-16 and UTF-32 pieces, among JSON.
BYTE_PIECES = st.sampled_from(
    [
        b"\xff", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x9f", b"\xef\xbb\xbf",
        b"\xfe\xff", b"\x00", b'"', b"{", b"}", b"[", b"]", b":", b",", b"1", b"-0.5e3", b"null",
        b"true", b" ", b"\n", b"\\u00e9", b"\\ud800", b"\xc3\xa9", b"\xf0\x9f\x99\x82", b"NaN",
        '{"a": 1}'.encode("utf-16"), b'"\x00\x00\x00',
    ]
)  # fmt: skip


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(BYTE_PIECES, max_size=12).map(b"".join))
@example(b'"\xff"')
@example(b"\xef\xbb\xbf{}")
@example(b'["\xed\xa0\x80", "\xe2\x82"]')
@example(b'{"a": "\xc3\xa9\xf0\x9f\x99\x82"}')
def test_any_bytes_decode_or_fail_as_json_loads_decodes_their_text(data: bytes) -> None:
    assert_utf8_decodes_like_json(data)


@pytest.mark.parametrize(
    "data",
    [
        "NaN",
        "[Infinity, -Infinity]",
        "1e400",
        "-1e400",
        "1e-400",
        "123456789012345678901234567890",
        "-9223372036854775809",
        "1" * 4300,
        "1" * 4301,  # past the stdlib's digit limit: the stdlib's ValueError
        '"\\ud800"',
        '"\\udc00\\ud800"',
        '"\ud800"',  # a raw lone surrogate in a str
        '{"a": 1, "a": 2}',
        "\ufeff{}",  # a byte order mark in a str is an error
        b"\xef\xbb\xbf{}",  # in bytes the stdlib reads past it
        '{"a": 1}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-32-le"),
        b'"\xff"',  # not UTF-8
        "[" * 200 + "]" * 200,
        "[" * 100_000 + "]" * 100_000,  # the stdlib's RecursionError, not msgspec's
        "",
        " \n",
        "[1,]",
        "01",
        "-0",
    ],
)
def test_inputs_the_decoders_disagree_on(data: str | bytes) -> None:
    assert_decodes_like_json(data)


def test_msgspec_is_used_when_installed() -> None:
    """The test extra installs the fast extra, so the suite checks the fast path."""
    pytest.importorskip("msgspec")
    assert _json.BACKEND == "msgspec"


def test_without_msgspec_the_stdlib_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msgspec", None)
    monkeypatch.setitem(sys.modules, "msgspec.json", None)
    try:
        fallback = importlib.reload(_json)
        assert fallback.BACKEND == "json"
        assert_decodes_like_json('{"a": [1, 2.5, NaN, 123456789012345678901234567890]}')
        assert_utf8_decodes_like_json(b'{"a": ["\xff", 1e400, "\xc3\xa9"]}')
    finally:
        monkeypatch.undo()
        importlib.reload(_json)
    restored = "msgspec" if importlib.util.find_spec("msgspec") else "json"
    assert restored == _json.BACKEND
