"""Secrets out of text meant for people: a URL's ``user:password@`` becomes ``***@``.

Pure, no imports from the package: error messages, logs and hub entries pass through it.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact_url_credentials", "split_url_credentials"]

# ``scheme://`` then the authority up to its last ``@`` (a password may hold ``@``, and
# ``:``), stopping at the path, query, fragment or whitespace.
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def redact_url_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it blanked.

    >>> redact_url_credentials("at https://user:p@ss:w0rd@proxy.example/v1 and redis://:pw@h:6379/0")
    'at https://***@proxy.example/v1 and redis://***@h:6379/0'
    >>> redact_url_credentials("https://proxy.example/v1?q=a@b")
    'https://proxy.example/v1?q=a@b'
    """
    return _CREDENTIALS.sub(r"\1***@", text)


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
