"""Secrets out of text meant for people: a URL's ``user:password@`` becomes ``***@``.

Pure, no imports from the package: error messages, logs and hub entries pass through it.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact_url_credentials", "redacted_url", "split_url_credentials"]

# A URL in free text: ``scheme://`` and what follows up to whitespace or a quote. Inside it,
# everything before the last ``@`` is dropped (:func:`redacted_url`'s rule): a password may
# hold ``@``, ``:``, ``/`` or ``?`` (raw or percent-encoded), so no part of it can show. An
# ``@`` later in the URL (a path or query) costs what precedes it too: hiding more than the
# credentials is the safe side of the trade.
_URL = re.compile(r"""(?i)\b[a-z][a-z0-9+.-]*://[^\s'"<>`]*@""")


def redacted_url(url: str) -> str:
    """``url`` without what precedes its last ``@`` (user and password), for messages.

    >>> redacted_url("redis://app:s3cr@t@cache:6379/0")
    'redis://***@cache:6379/0'
    >>> redacted_url("https://me:pa/ss@proxy.example/v1")
    'https://***@proxy.example/v1'
    >>> redacted_url("redis://cache:6379/0")
    'redis://cache:6379/0'
    """
    return redact_url_credentials(url)


def redact_url_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it blanked (see :func:`redacted_url`).

    >>> redact_url_credentials("at https://user:p@ss:w0rd@proxy.example/v1 and redis://:pw@h:6379/0")
    'at https://***@proxy.example/v1 and redis://***@h:6379/0'
    >>> redact_url_credentials("'http://u:p/w@h/v1' failed")
    "'http://***@h/v1' failed"
    >>> redact_url_credentials("https://proxy.example/v1 is down")
    'https://proxy.example/v1 is down'
    """
    return _URL.sub(_blank, text)


def _blank(match: re.Match[str]) -> str:
    scheme = match.group().partition("://")[0]
    return f"{scheme}://***@"


def split_url_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@``, and the ``Authorization`` header it stood for.

    HTTP clients send a URL's credentials as Basic auth; sending that header instead keeps
    the password out of every URL a client logs or quotes in an error. ``None`` when the URL
    has no credentials.

    >>> split_url_credentials("https://me:p%40ss@proxy.example:8443/v1")
    ('https://proxy.example:8443/v1', 'Basic bWU6cEBzcw==')
    >>> split_url_credentials("https://api.example/v1")
    ('https://api.example/v1', None)
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"
