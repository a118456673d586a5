"""Ollama: the ``/api/chat`` and ``/api/generate`` NDJSON streams, through the ``ollama`` SDK
or the lean httpx transport (``transport="httpx"``: the same body, each line decoded as a dict).

Ollama reports reasoning natively (``message.thinking`` on chat, ``thinking`` on generate) when
``think`` is on. Models run with thinking off, and older models, write ``<think>`` tags inline in
the answer instead; :class:`OllamaTranslator` reads those with the shared scanner until the
native field shows up. The final line (``done: true``) carries the stop reason, token counts
and the server's timings in nanoseconds.

Ollama keeps no reasoning state between turns and does not want prior reasoning back, so the
history sent is each message's content and tool calls only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias, Unpack

import httpx

from ..._effort import merge_params
from ..._exceptions import ProviderError, UsageError
from ..._pipe import Pipe, Prompt
from ...conversation._policy import PassbackPolicy, readable_passback
from ...profiles import Inline, ModelProfile
from .._clients import async_by, require
from .._errors import (
    build_error,
    caused_by_status,
    decode_body,
    provider_error,
    retry_after_seconds,
)
from .._pipe import EndpointOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import Call, HttpCall, SdkCall, decode_json
from . import request
from .effort import PLANNER
from .translate import OllamaTranslator

__all__ = ["SPEC", "OllamaPipe", "OllamaTranslator", "Think"]

Think: TypeAlias = bool | Literal["low", "medium", "high"] | None
"""Ollama's ``think`` request field: on/off, or a level for models that take one (gpt-oss)."""

DEFAULT_HOST = "http://localhost:11434"
_THINK_VALUES: tuple[Think, ...] = (None, True, False, "low", "medium", "high")


class OllamaPipe(ProviderPipe):
    """A pipe for Ollama's ``/api/chat`` (default) or ``/api/generate``, via the ``ollama`` SDK.

    Reasoning arrives in Ollama's native ``thinking`` field when ``think`` is on; with thinking
    off, or on models that write ``<think>`` tags into the answer, the tags are parsed instead
    (``inline_tags="auto"``: until the native field appears). Tool calls become ``ToolCall``
    events with JSON-text arguments and synthesised ids (``call_0``, ``call_1``, ...) because
    Ollama names none. The final line's counts become ``usage`` (``output_tokens`` counts
    thinking tokens too; Ollama does not report them apart), and its server timings are kept
    on :attr:`last_server_timings`.

    Args:
        model: the Ollama model tag (``"qwen3"``, ``"gpt-oss:20b"``).
        api: ``"chat"`` (messages, tools) or ``"generate"`` (one prompt string).
        think: sent as Ollama's ``think``: ``True``/``False``, or ``"low"``/``"medium"``/
            ``"high"`` for models with levels; ``None`` leaves the model's default.
        tools: the tools for ``/api/chat`` (sent in OpenAI's function-tool shape).
        options: Ollama runtime options (``temperature``, ``num_ctx``, ...).
        inline_tags: ``"auto"``, ``True`` or ``False``: parse ``<think>`` tags in the answer.
        start_in_reasoning: the answer starts inside reasoning (a template that pre-fills the
            open tag); Ollama's own templates leave the tag to the model, hence the default.
        tags: tag names the inline parser recognises (default ``think``, ``thinking``,
            ``reasoning``).
        client: an ``ollama.Client`` (for ``run()``) or ``ollama.AsyncClient`` (``arun()``).
        base_url: the server (default ``$OLLAMA_HOST``, else ``http://localhost:11434``).
        api_key: a bearer token for hosted Ollama; never shown in errors.
        transport: ``"sdk"`` (the default: the ``ollama`` SDK) or ``"httpx"`` (the lean
            transport: httpx posts the body the SDK would and decodes each NDJSON line as a
            plain dict, without the SDK's model objects; same results, a fraction of the CPU).
        http_client: the ``httpx.Client``/``AsyncClient`` for ``transport="httpx"`` (or pass
            it as ``client=``); without one the pipe builds its own.

    >>> pipe = OllamaPipe("qwen3", think=True)            # doctest: +SKIP
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider = "ollama"
    extra = "ollama"
    sync_client_hint: ClassVar[str] = "an ollama.Client"
    sdk: ClassVar[str | None] = "ollama"
    client_methods: ClassVar[tuple[str, ...]] = ("chat", "generate")
    client_classes: ClassVar[tuple[str, str] | None] = ("Client", "AsyncClient")
    client_hint: ClassVar[str] = "an ollama.Client or ollama.AsyncClient"
    start_unset: ClassVar[str | None] = None  # where a template starts is the caller's here

    def __init__(
        self,
        model: str,
        *,
        api: Literal["chat", "generate"] = "chat",
        think: Think = None,
        options: Mapping[str, Any] | None = None,
        inline_tags: bool | Literal["auto"] = "auto",
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
        transport: Literal["sdk", "httpx"] = "sdk",
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        **pipe_options: Unpack[EndpointOptions],
    ) -> None:
        if api not in ("chat", "generate"):
            raise UsageError(f"api must be 'chat' or 'generate', not {api!r}")
        if inline_tags not in ("auto", True, False):
            raise UsageError(f"inline_tags must be 'auto', True or False, not {inline_tags!r}")
        if think not in _THINK_VALUES or (isinstance(think, int) and not isinstance(think, bool)):
            raise UsageError(
                f"think must be None, True, False, 'low', 'medium' or 'high' (Ollama's think "
                f"field), not {think!r}; or use reasoning= for the portable knob"
            )
        super().__init__(model, **pipe_options)
        if think is not None and self.reasoning is not None:
            raise UsageError("give either think= (Ollama's own switch) or reasoning=, not both")
        self.api: Literal["chat", "generate"] = api
        self.think: Think = think
        if api == "generate" and self.tools:
            raise UsageError("tools= needs api='chat': Ollama's /api/generate takes no tools")
        if self.tool_choice not in (None, "auto", "none"):
            raise UsageError(
                f"OllamaPipe cannot take tool_choice={self.tool_choice!r}: Ollama's API has "
                'no tool_choice (docs.ollama.com/api/chat); use "auto" or "none"'
            )
        self.options: dict[str, Any] = dict(options or {})
        self.inline_tags: bool | Literal["auto"] = inline_tags
        # The profile names the tags a model writes; where it starts is the caller's, since
        # Ollama renders its own templates (which leave the open tag to the model).
        self.inline: Inline = self.profile.inline
        """The model's inline-tag rule, from its profile (the tag names it writes)."""
        self.start_in_reasoning = start_in_reasoning
        self.tags: tuple[str, ...] | None = tuple(tags) if tags is not None else None
        # The scope of what this pipe's turns may get back is the server it really talks to:
        # a given client's own host, else base_url, $OLLAMA_HOST or the default.
        self.transport = transport
        self.take_http_client(transport, http_client, sdk="an ollama.Client")
        self.host = (
            self.base_url
            or _client_host(self.client)
            or os.environ.get("OLLAMA_HOST")
            or DEFAULT_HOST
        )
        self.endpoint = self.host
        self.last_server_timings: dict[str, float] | None = None
        """Server-side timings of the latest run, in seconds: ``total_duration``,
        ``load_duration`` (loading the model), ``prompt_eval_duration`` and ``eval_duration``
        (generation), from the final line; ``None`` until a stream reached its end. Divide
        ``usage.output_tokens`` by ``eval_duration`` for the server's tokens per second."""

    # --------------------------------------------------------------------------- request

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The keyword arguments of the SDK call (``client.chat`` or ``client.generate``).

        ``extra_body`` keys are merged in (``options`` merges key by key); keys the installed
        SDK's method does not take raise ``UsageError``, since the SDK could not send them.
        """
        call: dict[str, Any] = {"model": self.model, "stream": True}
        if self.api == "chat":
            call["messages"] = request.chat_messages(self.turns(prompt))
            tools = request.chat_tools(self)
            if tools:
                call["tools"] = tools
        else:
            call.update(request.generate_prompt(self.turns(prompt)))
        if self.think is not None:
            call["think"] = self.think
        options = request.runtime_options(self, self.options)
        if options:
            call["options"] = options
        call = self.with_reasoning(call)
        if self.extra_body:
            accepted = request.accepted_keywords(self.api)
            unknown = set(self.extra_body) - accepted
            if unknown:
                raise UsageError(
                    f"extra_body keys {sorted(unknown)} are not fields the ollama SDK's "
                    f"{self.api}() can send; accepted: {sorted(accepted)}"
                )
            call = merge_params(call, self.extra_body)
        return call

    # --------------------------------------------------------------------------- clients

    def is_async_client(self, client: Any) -> bool:
        """``ollama.AsyncClient`` (its ``chat`` is a coroutine function), ``httpx.AsyncClient``."""
        return async_by(client, "chat")

    def _client_options(self) -> dict[str, Any]:
        """``ollama.Client`` options: ``host``, the timeout and the key as a bearer."""
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
        return {"host": self.host, "timeout": self.timeout, "headers": headers}

    def translator(self) -> OllamaTranslator:
        """A fresh translator for one response."""
        return OllamaTranslator(
            model=self.model or "",
            provider=self.provider,
            endpoint=self.endpoint,
            api=self.api,
            inline_tags=self.inline_tags,
            start_in_reasoning=self.start_in_reasoning,
            inline=self.inline,
            tags=self.tags,
        )

    # ----------------------------------------------------------------------------- call

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """``client.chat`` / ``client.generate`` on the SDK (its lazy NDJSON generator when
        streaming, ``"stream": false`` one-shot); with ``transport="httpx"``, the body the SDK
        would send, POSTed to the same URL."""
        call = self.build_request(prompt)
        self.log_request(f"/api/{self.api}", call)
        if not stream:
            call["stream"] = False
        self.last_server_timings = None
        if self.transport == "sdk":
            return SdkCall(self.api, call, generator=stream)
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return HttpCall(
            f"{_host_root(self.host)}/api/{self.api}",
            _wire_body(call),
            headers,
            self.provider or self.name,
            framing="ndjson",
            status_error=_status_error,
            decode=_decode,
        )

    def stream_ended(self, translator: Any) -> None:
        """Keep the server's timings of the stream that ended."""
        self.last_server_timings = translator.server_timings

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map ``ollama.ResponseError`` (HTTP and mid-stream errors) and transport errors."""
        provider = self.provider or self.name
        reason = getattr(error, "error", None)
        if type(error).__name__ == "ResponseError" and isinstance(reason, str):
            status = getattr(error, "status_code", None)
            # The SDK uses -1 for an error line inside a 200 stream: no HTTP status.
            status = status if isinstance(status, int) and status >= 100 else None
            where = f"HTTP {status}" if status is not None else "error in the stream"
            # ResponseError keeps no headers; the httpx error it was raised from does.
            context = error.__context__
            response = getattr(context, "response", None)
            return build_error(
                provider,
                reason,
                detail=f"ResponseError, {where}",
                status=status,
                retry_after=retry_after_seconds(getattr(response, "headers", None), provider),
                body=reason,
            )
        return provider_error(provider, error)


def _host_root(host: str) -> str:
    """``host`` as a URL root, as the SDK reads ``OLLAMA_HOST``: a bare host gets ``http://``
    and, without a port, Ollama's 11434."""
    if "://" in host:
        return host.rstrip("/")
    name, _, rest = host.partition("/")
    if ":" not in name.rsplit("]", 1)[-1]:
        name += ":11434"
    return f"http://{name}" + (f"/{rest.rstrip('/')}" if rest.strip("/") else "")


def _wire_body(call: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body the SDK sends for ``call``: it drops a message's empty fields, and a chat
    request always names its tools."""
    body = dict(call)
    messages = body.get("messages")
    if isinstance(messages, list):
        body.setdefault("tools", [])
        body["messages"] = [
            {key: value for key, value in message.items() if value} for message in messages
        ]
    return body


def _decode(provider: str, line: bytes) -> Any:
    """One NDJSON line; an ``error`` line raises what the SDK path reports for it."""
    chunk = decode_json(provider, line)
    if type(chunk) is dict:
        reason = chunk.get("error")
        if reason:
            text = reason if isinstance(reason, str) else str(reason)
            raise build_error(provider, text, detail="error in the stream", body=reason)
    return chunk


def _status_error(provider: str, response: httpx.Response) -> ProviderError:
    """An HTTP error reply as the SDK path reports it: the body's ``error``, else its text."""
    body = decode_body(response)
    reason = body.get("error", body) if isinstance(body, Mapping) else body
    text = reason if isinstance(reason, str) else response.text
    error = build_error(
        provider,
        text,
        detail=f"HTTP {response.status_code}",
        status=response.status_code,
        retry_after=retry_after_seconds(response.headers, provider),
        body=reason if isinstance(reason, str) else text,
    )
    return caused_by_status(error, response)


def _client_host(client: Any) -> str | None:
    """The server an ``ollama.Client`` talks to (its httpx client's base URL), or the base
    URL of the httpx client given to the lean transport."""
    inner = client if isinstance(client, httpx.Client | httpx.AsyncClient) else None
    inner = inner or getattr(client, "_client", None)
    root = str(getattr(inner, "base_url", "") or "").rstrip("/")
    return root or None


def _passback(profile: ModelProfile) -> PassbackPolicy:
    # The chat API takes an assistant message's ``thinking``; which turns' the model's
    # template renders (gpt-oss and Qwen3: the current tool loop) its profile says.
    return PassbackPolicy(reasoning=readable_passback(profile))


def _demo_pipe(model: str, url: str, name: str | None) -> Pipe:
    ollama = require("ollama", "ollama")
    return OllamaPipe(model, client=ollama.Client(host=url), name=name)


SPEC = ProviderSpec(
    id="ollama",
    name="ollama",
    pipe="OllamaPipe",
    extra="ollama",
    base_url_env="OLLAMA_HOST",
    key_needed=False,
    passback=_passback,
    effort=PLANNER,
    demo=Demo("ollama_chat_reasoning", "qwen3", _demo_pipe),
    api_root=ApiRoot("http://localhost:11434", "OLLAMA_HOST", not_ends_with="/api"),
    max_tokens=lambda n, url: {"options": {"num_predict": n}},
    semconv_name="ollama",
)
"""Ollama's native API."""
