"""The Anthropic Messages API: extended thinking, signatures and redacted thinking.

:class:`AnthropicPipe` builds the request (:mod:`.request`: thinking blocks back at the head of
their assistant turn), opens the stream with the official ``anthropic`` SDK or the lean httpx
transport (``transport="httpx"``: httpx + httpx-sse, the events as plain dicts), and the shared
driver feeds the raw events through an :class:`~.translate.AnthropicTranslator`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, Unpack

import httpx

from ..._exceptions import ProviderError, UsageError
from ..._pipe import Prompt
from ...conversation._policy import state_passback
from .._clients import async_by, demo_over_sdk
from .._errors import (
    build_error,
    caused_by_status,
    decode_body,
    provider_error,
    retry_after_seconds,
)
from .._inline import InlineTags, check_inline_options, inline_translator
from .._pipe import EndpointOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import SKIP, Call, HttpCall, SdkCall, decode_json, payload_text
from . import request
from .effort import PLANNER
from .request import INTERLEAVED_BETA, convert_turns, needs_interleaved_beta
from .translate import PROVIDER, AnthropicTranslator, error_details, stream_error

__all__ = ["DEFAULT_MAX_TOKENS", "SPEC", "AnthropicPipe", "AnthropicTranslator"]

DEFAULT_MAX_TOKENS = 4096
"""Room for the answer when the pipe is not given ``max_tokens`` (a thinking budget is added)."""

# SDK keyword arguments that name no body field, and therefore cannot go in `extra_body`.
_NAMED_ARGUMENTS = ("model", "max_tokens", "messages")

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The API root the lean transport posts to without ``base_url`` or ``$ANTHROPIC_BASE_URL``."""
API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header the lean transport sends (the SDK's own)."""


class AnthropicPipe(ProviderPipe):
    """Streams the Anthropic Messages API, extended thinking included, into the channel.

    Thinking deltas become reasoning (each thinking block its own segment), text deltas
    become the answer, ``tool_use`` blocks become tool calls. Signatures and redacted
    thinking never reach the channel: they land on ``result.reasoning_state`` and are sent
    back, unchanged and in order, at the head of the assistant turn they came with when a
    conversation continues through this pipe.

    Args:
        model: the model id (``"claude-sonnet-4-6"``).
        client: an ``anthropic.Anthropic`` (for ``run()``) or ``anthropic.AsyncAnthropic``
            (for ``arun()``); without one the pipe builds them from ``base_url``/``api_key``.
        base_url: the API root, ``https://api.anthropic.com`` (the SDK adds ``/v1/messages``).
        max_tokens: the output limit, thinking included; default 4096, plus the thinking
            budget when there is one, so the answer keeps 4096 tokens of room. A value at or
            below the budget raises ``UsageError``.
        thinking: the ``thinking`` request field, e.g. ``{"type": "enabled",
            "budget_tokens": 2048}`` or ``{"type": "adaptive"}``; omitted when ``None``.
        transport: ``"sdk"`` (the default: the ``anthropic`` SDK) or ``"httpx"`` (the lean
            transport: httpx and httpx-sse post the same body and read the same events as
            plain dicts, without the SDK's model objects; same results, a fraction of the CPU).
        http_client: the ``httpx.Client``/``AsyncClient`` for ``transport="httpx"`` (or pass
            it as ``client=``); without one the pipe builds its own.
        inline_tags, start_in_reasoning, tags: read ``<think>`` tags in the answer text, for
            compatible endpoints that leak them there, as :class:`OpenAIChatPipe` takes them
            (default ``False``: this API separates reasoning itself).

    Example::

        pipe = AnthropicPipe("claude-sonnet-4-6", api_key="...",
                             thinking={"type": "enabled", "budget_tokens": 2048})
        pipe.set_streaming_callback(print)
        result = pipe.run("Why is the sky blue?")
        result.model_reasoning, result.text, result.reasoning_state
    """

    provider = PROVIDER
    sync_client_hint: ClassVar[str] = "anthropic.Anthropic(...) as client="
    secret_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    extra = "anthropic"
    sdk: ClassVar[str | None] = "anthropic"
    client_methods: ClassVar[tuple[str, ...]] = ("messages.create",)
    client_classes: ClassVar[tuple[str, str] | None] = ("Anthropic", "AsyncAnthropic")
    client_hint: ClassVar[str] = "an anthropic.Anthropic or anthropic.AsyncAnthropic client"

    def __init__(
        self,
        model: str,
        *,
        thinking: Mapping[str, Any] | None = None,
        transport: Literal["sdk", "httpx"] = "sdk",
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        inline_tags: InlineTags = False,
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        **options: Unpack[EndpointOptions],
    ) -> None:
        super().__init__(model, **options)
        self.inline_tags: InlineTags = inline_tags
        self.tags: tuple[str, ...] | None = check_inline_options(inline_tags, tags)
        self.start_in_reasoning = start_in_reasoning
        self.transport = transport
        self.take_http_client(transport, http_client, sdk="an anthropic.Anthropic client")
        if thinking is not None and self.reasoning is not None:
            raise UsageError("give either thinking= (the raw config) or reasoning=, not both")
        if thinking is not None and self.reasoning_display is not None:
            raise UsageError(
                "give either thinking= (the raw config: put its display there) or "
                "reasoning_display=, not both"
            )
        self.thinking: dict[str, Any] | None = dict(thinking) if thinking is not None else None

    # ------------------------------------------------------------------------- requests

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the ``POST /v1/messages`` call, without ``stream``.

        System messages become the top-level ``system``; assistant ``tool_calls`` become
        ``tool_use`` blocks; tool messages become ``tool_result`` blocks in one user turn;
        a turn's reasoning states go back as its leading thinking and redacted blocks.
        ``extra_body`` is merged in last, so it can override anything.

        >>> AnthropicPipe("claude-x").build_request("hi")
        {'model': 'claude-x', 'max_tokens': 4096, 'messages': [{'role': 'user', 'content': 'hi'}]}
        """
        turns = self.turns(prompt)
        system, messages = convert_turns(turns)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._resolved_max_tokens(),
            "messages": messages,
        }
        if system:
            body["system"] = (
                system[0] if len(system) == 1 else [{"type": "text", "text": s} for s in system]
            )
        if self.thinking is not None:
            body["thinking"] = dict(self.thinking)
        body.update(request.anthropic_options(self))
        body = self.with_reasoning(body)
        body.update(self.extra_body)
        request.turn_thinking_off(body, request.thinking_turned_off(turns))
        return body

    def _resolved_max_tokens(self) -> int:
        budget = (self.thinking or {}).get("budget_tokens")
        if not isinstance(budget, int):
            return self.max_tokens or DEFAULT_MAX_TOKENS
        if self.max_tokens is None:
            return budget + DEFAULT_MAX_TOKENS
        if self.max_tokens <= budget:
            raise UsageError(
                f"max_tokens ({self.max_tokens}) must be above the thinking budget "
                f"({budget}): thinking counts toward max_tokens; raise max_tokens or lower "
                "budget_tokens"
            )
        return self.max_tokens

    def request_headers(self, body: Mapping[str, Any]) -> dict[str, str]:
        """HTTP headers the request for ``body`` needs besides the SDK's own.

        Manual extended thinking (``budget_tokens``) on Claude 4 models thinks between tool
        calls only with the documented beta header; adaptive thinking interleaves by itself.
        """
        if needs_interleaved_beta(self.model or "", body):
            return {"anthropic-beta": INTERLEAVED_BETA}
        return {}

    # -------------------------------------------------------------------------- clients

    def is_async_client(self, client: Any) -> bool:
        """The SDK's async clients (``AsyncAnthropic``, ...), or ``httpx.AsyncClient``."""
        # They share no public base class, but every one of them has a coroutine close().
        return async_by(client, "close")

    def translator(self) -> Any:
        """A fresh translator for one message (its text read for inline tags when asked)."""
        return inline_translator(
            self,
            AnthropicTranslator(
                provider=self.provider or PROVIDER, model=self.model or "", endpoint=self.endpoint
            ),
        )

    # ----------------------------------------------------------------------------- call

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """``messages.create`` (with ``stream=True``, or one-shot without) on the SDK; with
        ``transport="httpx"``, the SDK's URL, headers and body POSTed as plain JSON."""
        body = self.build_request(prompt)
        self.log_request("/v1/messages", body)
        headers = self.request_headers(body)
        if self.transport == "httpx":
            return self._lean_call(client, body, headers, stream=stream)
        arguments: dict[str, Any] = {name: body.pop(name) for name in _NAMED_ARGUMENTS}
        if stream:
            arguments["stream"] = True
        if headers:
            arguments["extra_headers"] = headers
        # Every other field rides in extra_body, so fields this SDK version does not name
        # (or names differently) still reach the server exactly as built.
        if body:
            arguments["extra_body"] = body
        if self.timeout is not None:
            arguments["timeout"] = self.timeout
        elif not stream:
            # The SDK refuses a non-streaming call whose max_tokens could outlast its default
            # timeout unless one is given; the pipe's own default is the SDK's ten minutes.
            arguments["timeout"] = _ONESHOT_TIMEOUT
        return SdkCall("messages.create", arguments)

    def _lean_call(
        self, client: Any, body: dict[str, Any], headers: dict[str, str], *, stream: bool
    ) -> HttpCall:
        """The lean transport's request: the SDK's URL, headers and body, as plain JSON."""
        url = self.lean_url(
            client,
            "v1/messages",
            base=self.base_url,
            default=DEFAULT_BASE_URL,
        )
        sent = {"anthropic-version": API_VERSION, "accept": "application/json"}
        key = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
        token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if key:
            sent["x-api-key"] = key
        elif token:
            sent["authorization"] = f"Bearer {token}"
        sent.update(headers)
        if stream:
            body["stream"] = True
        return HttpCall(
            url,
            body,
            sent,
            self.provider or PROVIDER,
            status_error=_status_error,
            decode_event=_decode if stream else None,
        )

    # --------------------------------------------------------------------------- errors

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map the SDK's exceptions to ``ProviderError``.

        An ``event: error`` mid-stream reaches us as the SDK's ``APIStatusError`` on a
        response whose status was 200; it is reported with the status Anthropic documents
        for its error type (``overloaded_error`` is 529). HTTP errors keep their status,
        ``retry-after`` and body; transport failures (a cut stream) keep their type.
        """
        if isinstance(error, ProviderError):
            return error
        status = getattr(error, "status_code", None)
        body = getattr(error, "body", None)
        error_type, message = error_details(body)
        if isinstance(status, int) and status < 400 and error_type is not None:
            return stream_error(body, provider=self.provider or PROVIDER)
        what = f"{error_type}: {message}" if error_type and message else None
        return provider_error(self.provider or self.name, error, what=what)


def _decode(provider: str, name: str, data: bytes) -> Any:
    """One event of the lean transport, read as the SDK reads it.

    Pings and events without an ``event:`` name are passed by; an ``error`` event raises the
    error the SDK path reports for it (its body need not even be JSON).
    """
    if name == "ping" or name == "message":
        return SKIP
    if name == "error":
        try:
            body: Any = decode_json(provider, data)
        except ProviderError:
            body = payload_text(data)
        raise stream_error(body, provider=provider)
    return decode_json(provider, data)


def _status_error(provider: str, response: httpx.Response) -> ProviderError:
    """An HTTP error reply as the SDK path reports it: ``"<type>: <message>"``, the whole body."""
    body = decode_body(response)
    error_type, message = error_details(body)
    what = f"{error_type}: {message}" if error_type and message else message
    error = build_error(
        provider,
        what or response.reason_phrase or "the request failed",
        detail=f"HTTP {response.status_code}",
        status=response.status_code,
        retry_after=retry_after_seconds(response.headers, provider),
        body=body,
    )
    return caused_by_status(error, response)


_ONESHOT_TIMEOUT = 600.0
"""Seconds a one-shot request may take when the pipe sets no ``timeout``."""


SPEC = ProviderSpec(
    id="anthropic",
    name="anthropic",
    pipe="AnthropicPipe",
    extra="anthropic",
    key_env=("ANTHROPIC_API_KEY",),
    base_url_env="ANTHROPIC_BASE_URL",
    # Thinking blocks (signed, redacted) go back verbatim: every earlier turn's to models with
    # preserved thinking, the current tool loop's to the others (the profile says which).
    passback=state_passback,
    effort=PLANNER,
    preflight=request.preflight,
    repair=request.repair,
    thinking_request=request.thinking_request,
    demo=Demo("anthropic_thinking", "claude-sonnet-4-6", demo_over_sdk(AnthropicPipe, "Anthropic")),
    api_root=ApiRoot("https://api.anthropic.com", "ANTHROPIC_BASE_URL", not_ends_with="/v1"),
    max_tokens=lambda n, url: {"max_tokens": n},
    semconv_name="anthropic",
)
"""The Anthropic Messages API."""
