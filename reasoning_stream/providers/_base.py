"""What every provider pipe shares: lazy SDK imports, history turns, error mapping."""

from __future__ import annotations

import contextlib
import email.utils
import importlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .._callbacks import CallbackErrorHandler
from .._effort import Reasoning, ReasoningPlan, merge_params, plan_reasoning, validate_reasoning
from .._events import ReasoningState
from .._exceptions import MalformedStreamError, ProviderError, UsageError
from .._messages import messages_from_prompt, strip_inert_keys
from .._pipe import Pipe, Prompt

__all__ = [
    "HistoryTurn",
    "ProviderPipe",
    "provider_error",
    "redact_exception_chain",
    "require",
    "retry_after_seconds",
    "tool_call_arguments",
]


def require(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UsageError(
            f"this pipe needs the {module!r} package: pip install 'reasoning-stream[{extra}]'"
        ) from error


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    """One message of the history, with what this pipe may send back for it.

    ``message`` is the plain dict with inert keys removed. ``states`` is the opaque reasoning
    state that this pipe's provider, model and endpoint made for the turn and requires back;
    ``reasoning`` is the turn's readable reasoning, for hosts that ask for it back
    (``reasoning_content`` on DeepSeek tool turns). Both are empty unless a ``Conversation``
    decided the provider needs them.
    """

    message: Mapping[str, Any]
    states: tuple[ReasoningState, ...] = ()
    reasoning: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def history_turns(prompt: Prompt | Any, pipe: ProviderPipe) -> list[HistoryTurn]:
    """The turns to send for ``prompt``: a string, a list of messages, or a conversation."""
    turns_for = getattr(prompt, "turns_for", None)
    if callable(turns_for):
        turns: list[HistoryTurn] = turns_for(pipe)
        return turns
    return [HistoryTurn(message) for message in messages_from_prompt(prompt)]


def tool_call_arguments(arguments: Any, name: str, *, provider_label: str) -> dict[str, Any]:
    """A history tool call's ``arguments`` as the JSON object a provider wants back.

    OpenAI-style history keeps arguments as JSON text; Anthropic, Gemini and Ollama take an
    object. A mapping is copied; missing or blank text is ``{}``. Anything else that is not
    JSON text for an object raises ``UsageError`` naming the tool and ``provider_label``:
    the history is wrong, and the provider would refuse it.

    >>> tool_call_arguments('{"city": "Paris"}', "weather", provider_label="Gemini")
    {'city': 'Paris'}
    >>> tool_call_arguments(" ", "now", provider_label="Gemini")
    {}
    """
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    # Decoded arguments that are not a mapping (a list, a number) fail like their JSON would.
    parsed = arguments
    try:
        if isinstance(arguments, str | bytes | bytearray):
            parsed = json.loads(arguments)
    except ValueError as error:
        raise UsageError(
            f"tool call {name!r} in the history: its arguments are not valid JSON, and "
            f"{provider_label} needs them as a JSON object; fix the tool_calls arguments"
        ) from error
    if not isinstance(parsed, dict):
        kind = _JSON_KINDS.get(type(parsed), f"of type {type(parsed).__name__}")
        raise UsageError(
            f"tool call {name!r} in the history: its arguments are {kind}, and "
            f"{provider_label} needs a JSON object; fix the tool_calls arguments"
        )
    return parsed


# What json.loads returns, named as JSON names it (for error messages).
_JSON_KINDS: dict[type, str] = {
    list: "a JSON array",
    str: "a JSON string",
    int: "a JSON number",
    float: "a JSON number",
    bool: "a JSON boolean",
    type(None): "JSON null",
}


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait before retrying, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date; ``None`` when absent or
    unreadable.
    """
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


def _redacted(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        return value
    if isinstance(value, Mapping):
        return {key: _redacted(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redacted(item, secrets) for item in value)
    return value


def redact_exception_chain(error: BaseException, secrets: Sequence[str]) -> None:
    """Replace every secret in the messages, ``message``, ``body`` and ``error`` of a chain."""
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


async def close_sdk_stream(stream: Any, iterator: Any = None) -> None:
    """Close an SDK ``AsyncStream`` completely: our iterator over it, its generator, the response.

    ``stream.close()`` releases the response but leaves the async generators behind the stream
    suspended when the run ended early; the garbage collector would finalise them later, on
    whatever event loop runs then (trio reports it as a ResourceWarning).
    """
    try:
        for generator in (iterator, getattr(stream, "_iterator", None)):
            aclose = getattr(generator, "aclose", None)
            if aclose is not None:
                await aclose()
    finally:
        await stream.close()


def provider_error(
    provider: str, error: BaseException, *, what: str | None = None
) -> ProviderError:
    """A ``ProviderError`` for an SDK or transport exception, with status, retry hint and body.

    Reads the attributes the SDKs share (``status_code``, ``response.headers``, ``body``)
    without importing any SDK. Secrets are never copied: only the status, the provider's
    error message and the exception type reach the message.
    """
    if isinstance(error, ProviderError):
        return error
    status = getattr(error, "status_code", None)
    response = getattr(error, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    headers = getattr(response, "headers", None) if response is not None else None
    body = getattr(error, "body", None)
    summary = what or str(error) or type(error).__name__
    if isinstance(error, json.JSONDecodeError) and what is None:
        summary = f"a stream event is not valid JSON ({error})"
    kind = type(error).__name__
    message = f"{provider}: {summary} ({kind}"
    if isinstance(status, int):
        message += f", HTTP {status}"
    message += ")"
    cls = MalformedStreamError if isinstance(error, json.JSONDecodeError) else ProviderError
    return cls(
        message,
        provider=provider,
        status_code=status if isinstance(status, int) else None,
        retry_after=retry_after_seconds(headers),
        body=body,
    )


class ProviderPipe(Pipe):
    """Base of the provider pipes: a model, a client or an endpoint, and request options.

    Args:
        model: the provider's model id.
        client: the SDK's sync or async client (run() needs a sync one unless the pipe can
            build it; arun() uses an async one, or iterates a sync one in a worker thread).
        base_url: the API root the provider documents, to build a client.
        api_key: the key for a client the pipe builds (never shown in errors or reprs).
        extra_body: extra JSON fields merged into the request body.
        timeout: seconds to wait for the server (connect and between reads).
        reasoning: one reasoning-effort knob: ``None`` (the provider's default), ``False``,
            ``True``, ``"low"``, ``"medium"``, ``"high"`` or a token budget (``int``), mapped
            to the provider's native parameters (see :meth:`reasoning_plan`).
    """

    provider: str | None = None
    secret_env: tuple[str, ...] = ()
    """Environment variables holding this provider's credentials (redacted from errors)."""
    extra: str = "all"
    """The package extra that installs this pipe's SDK."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        reasoning: Reasoning = None,
    ) -> None:
        validate_reasoning(reasoning)
        self.reasoning: Reasoning = reasoning
        super().__init__(
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
        )
        self.model = model
        self.client = client
        self.base_url = base_url.rstrip("/") if base_url else None
        self._api_key = api_key
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        self.timeout = timeout
        self.endpoint = self.base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, name={self.name!r})"

    def reasoning_plan(self) -> ReasoningPlan:
        """The native parameters (and warnings) ``reasoning=`` becomes for this provider and model.

        Nothing is called: this shows what the next request will carry.
        """
        return plan_reasoning(
            self.provider or "",
            self.reasoning_model_id(),
            self.reasoning,
            max_tokens=self.reasoning_max_tokens(),
        )

    def reasoning_model_id(self) -> str:
        """The model id the effort table is keyed on."""
        return self.model or ""

    def reasoning_max_tokens(self) -> int | None:
        """The output limit this pipe sends, which budget-based thinking must stay under."""
        value = getattr(self, "max_tokens", None)
        return value if isinstance(value, int) else None

    def with_reasoning(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with the effort plan's parameters deep-merged in (before ``extra_body``)."""
        if self.reasoning is None:
            return request
        return merge_params(request, self.reasoning_plan().params)

    def turns(self, prompt: Prompt | Any) -> list[HistoryTurn]:
        """The history turns to send for ``prompt``."""
        return history_turns(prompt, self)

    def messages(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        """The plain messages of ``prompt`` (inert keys removed), without any provider state."""
        return [strip_inert_keys(turn.message) for turn in self.turns(prompt)]

    def _client_options(self) -> dict[str, Any]:
        """Keyword arguments for an SDK client the pipe builds.

        Only what was given of ``base_url``, ``api_key`` and ``timeout``: the SDK's own
        defaults (and environment variables) stand for the rest, except retries. The SDKs
        retry 429s and 5xx twice by default, behind the caller's back and after the first
        attempt's sleep; the pipe's own :meth:`~Pipe.set_retries` is the one retry policy.
        """
        options: dict[str, Any] = {"max_retries": 0}
        if self.base_url is not None:
            options["base_url"] = self.base_url
        if self._api_key is not None:
            options["api_key"] = self._api_key
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options

    def secrets(self) -> list[str]:
        """The credentials this pipe may send: never to appear in an error or a log line."""
        candidates = [self._api_key, getattr(self.client, "api_key", None)]
        candidates += [os.environ.get(name) for name in self.secret_env]
        # Blanking a very short value would mangle ordinary words; real keys are long.
        return [value for value in candidates if isinstance(value, str) and len(value) >= 8]

    def redact_secrets(self, error: BaseException) -> None:
        """Blank out this pipe's credentials wherever a server echoed them into ``error``.

        Servers (Google's APIs, some proxies) quote a refused key back in the error body;
        that text reaches the SDK's exception and ours. The chain (``__cause__`` and
        ``__context__``) is rewritten in place: its messages, ``message`` and ``body``.
        """
        secrets = self.secrets()
        if secrets:
            redact_exception_chain(error, secrets)

    def close(self) -> None:
        """Release a sync client the pipe built itself (clients passed in stay the caller's).

        Pipes whose SDK client keeps sockets open override this; by default there is nothing
        to release.
        """

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map an SDK or transport exception to ``ProviderError``."""
        return provider_error(self.provider or self.name, error)
