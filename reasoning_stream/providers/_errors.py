"""One builder for ``ProviderError``, and what every provider's error mapping shares.

Each provider knows where its error puts the message, the code and the status (an SDK
exception's ``body``, botocore's ``response["Error"]``, an in-stream error event); it reads
them and hands them to :func:`build_error`, the one place a ``ProviderError`` is made.
:func:`provider_error` reads what the SDKs have in common (``status_code``,
``response.headers``, ``body``) for everything else. Secrets are never copied into a
message; :func:`redact_exception_chain` blanks those a server echoed back, and the password of
every URL (a proxy's ``user:password@`` in ``base_url``) in the whole chain, ``__context__``
included (the SDKs raise ``from None``, which hides their httpx error but keeps it).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import MalformedStreamError, ProviderError
from .._redact import redact_url_credentials
from ._spec import logger_for

__all__ = [
    "build_error",
    "caused_by_status",
    "decode_body",
    "http_error",
    "provider_error",
    "redact_exception_chain",
    "retry_after_seconds",
]


def build_error(
    provider: str,
    what: str,
    *,
    detail: str | None = None,
    status: int | None = None,
    retry_after: float | None = None,
    body: Any = None,
    malformed: bool = False,
) -> ProviderError:
    """The ``ProviderError`` (``MalformedStreamError`` when ``malformed``) for one failure.

    The message reads ``"<provider>: <what> (<detail>)"``: what went wrong in the provider's
    own words, then where (the exception type, the HTTP status, "error event mid-stream").

    >>> str(build_error("ollama", "model not found", detail="HTTP 404", status=404))
    'ollama: model not found (HTTP 404)'
    """
    message = f"{provider}: {what}" + (f" ({detail})" if detail else "")
    cls = MalformedStreamError if malformed else ProviderError
    return cls(message, provider=provider, status_code=status, retry_after=retry_after, body=body)


def retry_after_seconds(headers: Any, provider: str | None = None) -> float | None:
    """Seconds to wait before retrying, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date; ``None`` when absent or
    unreadable. A value read is a ``DEBUG`` line on ``provider``'s logger (the seconds only).
    """
    seconds = _retry_after(headers)
    if seconds is not None:
        log = logger_for(provider)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("Retry-After: %.3f s", seconds)
    return seconds


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        value = headers.get("retry-after")
    except Exception:
        return None
    if milliseconds is not None:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except (TypeError, ValueError):
            pass
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def provider_error(
    provider: str, error: BaseException, *, what: str | None = None
) -> ProviderError:
    """A ``ProviderError`` for an SDK or transport exception, with status, retry hint and body.

    Reads the attributes the SDKs share (``status_code``, ``response.headers``, ``body``)
    without importing any SDK. The provider's own ``message`` in the body replaces the SDK's
    summary of the whole body; a numeric ``code`` there (OpenRouter's in-stream errors) stands
    for a missing HTTP status. Secrets are never copied: only the status, the provider's error
    message and the exception type reach the message.
    """
    if isinstance(error, ProviderError):
        return error
    redact_exception_chain(error, ())
    body = getattr(error, "body", None)
    status = getattr(error, "status_code", None)
    response = getattr(error, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    if isinstance(body, Mapping):
        message, code = body.get("message"), body.get("code")
        if what is None and isinstance(message, str) and message:
            what = message
        if status is None and type(code) is int and 100 <= code <= 599:
            status = code
    headers = getattr(response, "headers", None) if response is not None else None
    summary = what or str(error) or type(error).__name__
    malformed = isinstance(error, json.JSONDecodeError)
    if malformed and what is None:
        summary = f"a stream event is not valid JSON ({error})"
    detail = type(error).__name__
    if isinstance(status, int):
        detail += f", HTTP {status}"
    return build_error(
        provider,
        summary,
        detail=detail,
        status=status if isinstance(status, int) else None,
        retry_after=retry_after_seconds(headers, provider),
        body=body,
        malformed=malformed,
    )


def http_error(provider: str, response: Any) -> ProviderError:
    """The ``ProviderError`` for an httpx error reply whose body has been read.

    OpenAI-style bodies (``{"error": {"message": ...}}``) give their message; the status
    and ``Retry-After`` land on the error's attributes, and the original
    ``httpx.HTTPStatusError`` becomes its ``__cause__``.
    """
    status = response.status_code
    body: Any
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = response.text
    detail: Any = body.get("error", body) if isinstance(body, Mapping) else body
    message = _message_of(detail) or response.reason_phrase or "request failed"
    error = build_error(
        provider,
        message,
        detail=f"HTTP {status}",
        status=status,
        retry_after=retry_after_seconds(response.headers, provider),
        body=detail,
    )
    error.__cause__ = _status_error(response)
    return error


def _status_error(response: Any) -> Any:
    """The ``httpx.HTTPStatusError`` for ``response``, its URL without a password."""
    import httpx

    url = redact_url_credentials(str(response.request.url))
    return httpx.HTTPStatusError(
        f"HTTP {response.status_code} from {url}", request=response.request, response=response
    )


def decode_body(response: Any) -> Any:
    """An error reply's body (already read): its JSON, else its text."""
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        return response.text


def caused_by_status(error: ProviderError, response: Any) -> ProviderError:
    """``error`` with an ``httpx.HTTPStatusError`` for ``response`` as its ``__cause__``."""
    error.__cause__ = _status_error(response)
    return error


def _message_of(detail: Any) -> str | None:
    if isinstance(detail, Mapping):
        message = detail.get("message")
        if isinstance(message, str) and message:
            return message
        return None
    if isinstance(detail, str) and detail.strip():
        # A plain-text error page: its first line is enough, and bounded.
        return detail.strip().splitlines()[0][:200]
    return None


def _redacted(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        return redact_url_credentials(value)
    if isinstance(value, Mapping):
        return {key: _redacted(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redacted(item, secrets) for item in value)
    return value


def redact_exception_chain(error: BaseException, secrets: Sequence[str]) -> None:
    """Replace every secret, and every URL's ``user:password@``, in the messages,
    ``message``, ``body`` and ``error`` of a chain (``__cause__`` and ``__context__``)."""
    seen: set[int] = set()
    current: BaseException | None = error
    pending: list[BaseException] = []
    while current is not None or pending:
        if current is None:
            current = pending.pop()
        if id(current) in seen:
            current = None
            continue
        seen.add(id(current))
        current.args = tuple(_redacted(arg, secrets) for arg in current.args)
        for name in ("message", "body", "error"):
            if name in vars(current):
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(current, name, _redacted(getattr(current, name), secrets))
        if current.__context__ is not None:
            pending.append(current.__context__)
        current = current.__cause__
