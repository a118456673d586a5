"""Secrets out of text meant for people: a URL's ``user:password@`` becomes ``***@``.

Pure, no imports from the package: error messages, logs and hub entries pass through it.
"""

from __future__ import annotations

import re

__all__ = ["redact_url_credentials"]

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
