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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._exceptions import MalformedStreamError, ProviderError
from .._redact import redact_url_credentials
from ._spec import ApiRoot, logger_for

__all__ = [
    "build_error",
    "caused_by_status",
    "could_not_connect",
    "decode_body",
    "endpoint_hint",
    "explain",
    "http_error",
    "provider_error",
    "public_url",
    "redact_exception_chain",
    "retry_after_seconds",
    "unparsed_reply",
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


def unparsed_reply(provider: str, text: str) -> ProviderError:
    """The ``MalformedStreamError`` for a one-shot reply that is not JSON (``text`` its body).

    An event stream (a server that ignores ``stream=false``) is named as such; anything else
    (an HTML page) points at the base URL.
    """
    if text.lstrip().startswith(("data:", "event:", ":")):
        what = (
            "the server answered with an event stream although stream=False asked for one "
            "JSON reply; check that the server honours stream=false"
        )
    else:
        what = (
            f"the reply is not JSON ({len(text)} characters of text); check base_url points at "
            "the API root"
        )
    return build_error(provider, what, malformed=True)


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


# ------------------------------------------------------------- where a request went wrong

_NEVER_REACHED = frozenset(
    {
        "ConnectError",  # httpx (openai, anthropic, ollama, our httpx transports)
        "ConnectTimeout",  # httpx
        "UnsupportedProtocol",  # httpx: a URL without http:// or https://
        "EndpointConnectionError",  # botocore
        "gaierror",  # socket: a host name that does not resolve
    }
)
_BROKE = frozenset(
    {
        "RemoteProtocolError",  # httpx: the peer closed mid-body, or before any response
        "ReadError",  # httpx
        "ReadTimeout",  # httpx
        "IncompleteRead",  # http.client / urllib3
        "ProtocolError",  # urllib3 (botocore)
        "ResponseStreamingError",  # botocore
    }
)
_UNRESOLVED = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "getaddrinfo failed",
    "no address associated with hostname",
    "name resolution",
)


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and what caused it, ``__cause__`` first, each once."""
    seen: set[int] = set()
    pending: list[BaseException] = []
    while error is not None or pending:
        if error is None:
            error = pending.pop()
        if id(error) not in seen:
            seen.add(id(error))
            yield error
            if error.__context__ is not None and error.__cause__ is not None:
                pending.append(error.__context__)
            error = error.__cause__ or error.__context__
        else:
            error = None


def _kinds(error: BaseException) -> set[str]:
    return {cls.__name__ for link in _chain(error) for cls in type(link).__mro__}


def could_not_connect(error: BaseException) -> bool:
    """Whether a request never reached a server (refused, unreachable, unknown host, no scheme)."""
    kinds = _kinds(error)
    if not kinds.isdisjoint(_NEVER_REACHED):
        return True
    return "ConnectionRefusedError" in kinds or (
        "ConnectionError" in kinds
        and kinds.isdisjoint(_BROKE)
        and "ConnectionResetError" not in kinds
    )


def public_url(url: str) -> str:
    """``url`` fit for a message: no user name or password, no query (keys travel there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return url.split("?", 1)[0].rsplit("@", 1)[-1]
    if not parts.scheme or not parts.netloc:
        return url.split("?", 1)[0].rsplit("@", 1)[-1]
    if ":" in host:
        host = f"[{host}]"
    userinfo = "***@" if "@" in parts.netloc else ""
    return urlunsplit((parts.scheme, userinfo + host + port, parts.path, "", ""))


def _shape(label: str, root: ApiRoot) -> str:
    if root.ends_with:
        words = f"{label} expects the root ending in {root.ends_with}"
    elif root.not_ends_with:
        words = f"{label} expects the server root, without {root.not_ends_with}"
    else:
        words = f"{label} expects the endpoint URL with no path"
    local = f" (a local server: {root.local})" if root.local else ""
    return f"{words}, like {root.default}{local}"


def _wrong_shape(url: str, root: ApiRoot) -> bool:
    path = urlsplit(url).path.rstrip("/")
    if root.ends_with:
        return not path.endswith(root.ends_with)
    if root.not_ends_with:
        return path.endswith(root.not_ends_with)
    return bool(path)


def endpoint_hint(
    label: str, error: ProviderError, url: str, root: ApiRoot | None, *, model: str = "the model"
) -> str | None:
    """What to check when a request to base URL ``url`` got a 404 or never connected.

    ``label`` names the provider as the reader knows it, ``model`` the thing naming the
    model (``"--model"`` on the command line).
    """
    if root is None:
        return None
    shown = public_url(url)
    shape = _shape(label, root)
    if error.status_code == 404:
        if _wrong_shape(url, root):
            return f"HTTP 404 from {shown}: that is not the API root; {shape}"
        return f"HTTP 404 from {shown}: check {model}, and that this is the API root; {shape}"
    if could_not_connect(error):
        return f"cannot connect to {shown}; {shape}"
    return None


def explain(
    provider: str,
    error: ProviderError,
    cause: BaseException | None,
    url: str | None,
    root: ApiRoot | None,
    *,
    reasoning: int,
    text: int,
) -> None:
    """Say in ``error``'s message where the request went and what to fix (in place, once).

    ``cause`` is the exception ``error`` stands for (the SDK's or the transport's).
    A 404 names the base URL and the shape the provider expects; a request that never reached a
    server says why (no scheme, a host that does not resolve, nothing listening) and where it
    went; a connection that broke after the request was sent says so and how many characters
    of reasoning and of text were captured (``error.result`` holds them). The URL loses its
    user name, password and query. The hint is also ``error.hint``.
    """
    if cause is None or url is None or vars(error).get("_explained"):
        return
    error._explained = True  # type: ignore[attr-defined]
    shown = public_url(url)
    message = str(error.args[0]) if error.args else str(error)
    detail = message[message.rfind(" (") :] if message.endswith(")") else ""
    kinds = _kinds(cause)
    what: str | None = None
    hint: str | None = None
    if error.status_code == 404 and root is not None:
        hint = (
            f"{shown} is not the API root; {_shape(provider, root)}"
            if _wrong_shape(url, root)
            else f"check the model id, and that {shown} is the API root"
        )
    elif could_not_connect(cause):
        host = urlsplit(url).hostname
        text_of = " ".join(str(link) for link in _chain(cause)).lower()
        if "UnsupportedProtocol" in kinds or urlsplit(url).scheme not in ("http", "https"):
            what = f"the base URL {shown} does not start with http:// or https://"
        elif "gaierror" in kinds or any(words in text_of for words in _UNRESOLVED):
            what = f"cannot resolve the host {host!r} of {shown}: check its spelling"
        else:
            what = f"cannot connect to {shown}: nothing answered; is the server running there?"
        hint = _shape(provider, root) if root is not None else None
    elif not kinds.isdisjoint(_BROKE) or "ConnectionResetError" in kinds:
        if reasoning or text:
            what = (
                f"the connection broke mid-stream from {shown}; captured {reasoning} characters "
                f"of reasoning and {text} of text (in error.result)"
            )
        else:
            what = (
                f"the server at {shown} closed the connection before any reasoning or text arrived"
            )
    if what is None and hint is None:
        return
    head = f"{provider}: {what}{detail}" if what else message
    error.args = (head + (f"; {hint}" if hint else ""), *error.args[1:])
    error.hint = hint
