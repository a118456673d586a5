"""``_json.loads`` gives what ``json.loads`` gives, for every document, whichever decoder runs."""

from __future__ import annotations

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


def documents(value: Any) -> Iterator[str]:
    """``value`` written the ways a server may write it: escaped or raw, compact or spaced."""
    yield json.dumps(value)
    yield json.dumps(value, ensure_ascii=False)
    yield json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    yield json.dumps(value, indent="\t")


@settings(max_examples=150, deadline=None)
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


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from('{}[]",:0123456789-+.eE truefalsnul\\u\n\tNaIfiy\ufeff\ud800é')))
def test_arbitrary_text_decodes_or_fails_as_json_loads_does(text: str) -> None:
    """Malformed documents too: the same value, or an error of the same type."""
    assert_decodes_like_json(text)
    assert_decodes_like_json(text.encode("utf-8", "surrogatepass"))


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
    finally:
        monkeypatch.undo()
        importlib.reload(_json)
    restored = "msgspec" if importlib.util.find_spec("msgspec") else "json"
    assert restored == _json.BACKEND
