"""Laws of URL redaction: no piece of a URL's password survives, wherever the URL sits in text.

The oracle is independent of the code: passwords are drawn from upper-case letters, digits and
the characters that end or split a URL's parts (``@ : / ? #``), while the rest of the text uses
lower-case letters only, so "no upper-case letter is left" says "no piece of the password is
left" without parsing anything.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream._redact import redact_url_credentials, redacted_url
from tests.helpers import examples

PASSWORD = st.text(string.ascii_uppercase + "@:/?#%", min_size=1, max_size=20).filter(
    lambda p: any(c in string.ascii_uppercase for c in p)
)
WORD = st.text(string.ascii_lowercase, min_size=1, max_size=8)
SCHEME = st.sampled_from(["http", "https", "redis", "rediss", "postgres+asyncpg"])
AROUND = st.text(string.ascii_lowercase + " .,:;()'\"\n", max_size=20)


@st.composite
def urls(draw: st.DrawFn) -> tuple[str, str]:
    """A URL whose password is drawn from :data:`PASSWORD`, and its host."""
    user = draw(st.one_of(st.just(""), WORD))
    host = draw(WORD) + ".example"
    path = "/".join(draw(st.lists(WORD, max_size=3)))
    return f"{draw(SCHEME)}://{user}:{draw(PASSWORD)}@{host}/{path}", host


@given(st.lists(st.tuples(AROUND, urls()), min_size=1, max_size=4), AROUND)
@settings(max_examples=examples(300))
def test_no_piece_of_a_password_survives_in_free_text(
    parts: list[tuple[str, tuple[str, str]]], tail: str
) -> None:
    text = "".join(before + url for before, (url, _) in parts) + tail
    redacted = redact_url_credentials(text)
    assert not any(c in string.ascii_uppercase for c in redacted), redacted


@given(urls())
@settings(max_examples=examples(300))
def test_a_single_url_keeps_its_host_and_loses_its_password(url_host: tuple[str, str]) -> None:
    url, host = url_host
    redacted = redacted_url(url)
    assert not any(c in string.ascii_uppercase for c in redacted), redacted
    assert f"***@{host}/" in redacted


@given(AROUND, SCHEME, WORD, AROUND)
@settings(max_examples=examples(200))
def test_text_without_credentials_is_unchanged(
    before: str, scheme: str, host: str, after: str
) -> None:
    text = f"{before}{scheme}://{host}.example:8080/v1?q=x {after}"
    assert redact_url_credentials(text) == text
