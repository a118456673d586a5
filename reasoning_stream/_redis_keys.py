"""Names in Redis: keys for ids that may hold any character (no two ids, no two parts, one
slot each), and a server's URL as messages may show it (no password).

``RedisHub`` and ``RedisStore`` build every key as ``<prefix>{<id, encoded>}<suffix>``:

- the id is percent-encoded for ``%``, ``{`` and ``}`` only, so it never holds a brace and two
  different ids never encode alike (``a:run`` and ``a`` with suffix ``:run`` cannot meet: the
  id ends at the closing brace);
- the braces make the encoded id the key's Redis Cluster *hash tag*, so all keys of one id
  live in one hash slot and one script may touch them all on a cluster;
- the prefix may not hold a brace, so the first ``{`` of a key is always the tag's;
- the hub's suffixes (``""``, ``":run"``, ``":lease"``) and the store's (``":conversation"``,
  ``":turns"``, ``":version"``) never meet, so a hub and a store may share a prefix.

>>> tagged_key("reasoning-stream:", "chat:{1}", ":run")
'reasoning-stream:{chat:%7B1%7D}:run'
>>> decode_id("chat:%7B1%7D")
'chat:{1}'
"""

from __future__ import annotations

from urllib.parse import unquote

from ._redact import redacted_url

__all__ = ["check_prefix", "decode_id", "encode_id", "glob_escape", "redacted_url", "tagged_key"]

_ESCAPES = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D"})


def encode_id(identifier: str) -> str:
    """``identifier`` without braces, one to one (``%``, ``{`` and ``}`` percent-encoded)."""
    return identifier.translate(_ESCAPES)


def decode_id(encoded: str) -> str:
    """The id :func:`encode_id` encoded."""
    return unquote(encoded)


def tagged_key(prefix: str, identifier: str, suffix: str = "") -> str:
    """The key of ``identifier``'s part ``suffix``, its encoded id as the hash tag."""
    return f"{prefix}{{{encode_id(identifier)}}}{suffix}"


def check_prefix(prefix: str, what: str) -> None:
    """Raise ``ValueError`` naming ``what`` unless ``prefix`` is a str without braces."""
    if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
        raise ValueError(
            f"{what} must be a str without '{{' or '}}' (the hub and the store put each id's "
            f"hash tag in braces after it), got {prefix!r}"
        )


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a Redis ``MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
