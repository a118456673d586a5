"""Endpoints in one canonical form, so a state is never refused for how a URL was written.

``HTTPS://API.Example.com:443/v1/`` and ``https://api.example.com/v1`` are one endpoint: the
scheme and host in lower case, no default port, no trailing slash, no user info, query or
fragment. An endpoint that is not a URL (a Bedrock region such as ``us-east-1``) is compared
as written, in lower case. Pure string work, below everything that scopes opaque state.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["canonical_endpoint", "same_endpoint"]

_DEFAULT_PORTS = {"https": 443, "http": 80}


def canonical_endpoint(url: str) -> str:
    """``url`` in the one form endpoints are compared in.

    >>> canonical_endpoint("HTTPS://Api.Anthropic.com:443/")
    'https://api.anthropic.com'
    >>> canonical_endpoint(" US-East-1 ")
    'us-east-1'
    """
    text = url.strip()
    if "://" not in text:
        return text.lower().rstrip("/")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # not a URL after all (an unclosed IPv6 bracket, a bad port)
        return text.lower().rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def same_endpoint(made: str | None, asking: str | None) -> bool:
    """Whether two endpoints are one, compared canonically; ``None`` is only ``None``.

    >>> same_endpoint("https://api.example.com:443/v1/", "HTTPS://API.EXAMPLE.COM/v1")
    True
    """
    if made is None or asking is None:
        return made is asking
    return canonical_endpoint(made) == canonical_endpoint(asking)


def endpoint_of(pipe: object) -> str | None:
    """Where ``pipe`` talks to: its ``endpoint``, else what its ``api_url()`` says (the
    provider's variable or documented default), else ``None``."""
    endpoint = getattr(pipe, "endpoint", None)
    if endpoint:
        return str(endpoint)
    api_url = getattr(pipe, "api_url", None)
    if callable(api_url):
        try:
            found = api_url()
        except Exception:  # a pipe that cannot say: not held to a default either
            return None
        return str(found) if found else None
    return None
