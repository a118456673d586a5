"""Gemini: ``streamGenerateContent`` over SSE with httpx and httpx-sse, no SDK.

Each SSE ``data:`` is a ``GenerateContentResponse``. Its ``candidates[0].content.parts`` are
new parts: a part with ``"thought": true`` is reasoning (a thought summary), other ``text``
parts are the answer, ``functionCall`` parts are tool calls. Any part may carry a
``thoughtSignature``: opaque, base64, and required back on the same part in later requests
(strictly so for function calls in a Gemini 3 tool loop).

Signature mapping. Every signature becomes ``ReasoningState(kind="signature")`` with
``block="<candidate>:<part>"`` (the part's position among all parts of the streamed turn) and
``extra`` describing the part it rode on::

    part         "thought" | "text" | "empty" (a text part with no text) |
                 "function_call" | "other" (any other part type)
    text_offset  how many answer characters came before that part
    call_index   how many function calls came before it (its own index for a call)
    name         the function's name (function calls)
    call_id      the id of the ToolCall event it produced (function calls)
    id           the server's functionCall.id, only when Gemini sent one
    raw          the part itself minus the signature ("other" parts only)

:meth:`GeminiPipe.build_request` uses those to rebuild a model turn: the answer text is cut at
the recorded offsets so a signed text part starts where it did, each signed call gets its
signature back on its own ``functionCall`` part, a signed thought or empty part comes back as
an empty part carrying its signature, all in the recorded order. Reasoning text itself is
never sent back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Unpack

import httpx

from ..._effort import merge_params
from ..._exceptions import ProviderError
from ..._json import loads_utf8
from ..._pipe import Prompt
from ...conversation._policy import state_passback
from .._clients import demo_over_url
from .._errors import build_error, retry_after_seconds
from .._inline import InlineTags, check_inline_options, inline_translator
from .._pipe import EndpointOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import Call, HttpCall, payload_text
from . import request
from .effort import PLANNER
from .translate import GeminiTranslator, error_object, gemini_error

__all__ = ["DEFAULT_BASE_URL", "SPEC", "GeminiPipe", "GeminiTranslator"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

_KEY_ENVIRONMENT = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
# Reasoning models can think for minutes before the first byte: only connecting is quick.
_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_after(response: httpx.Response, error: Mapping[str, Any] | None) -> float | None:
    seconds = retry_after_seconds(response.headers, "gemini")
    if seconds is not None:
        return seconds
    details = error.get("details") if error is not None else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, Mapping) and isinstance(detail.get("retryDelay"), str):
            match = _DURATION.match(detail["retryDelay"])
            if match:
                return float(match[1])
    return None


def _status_error(provider: str, response: httpx.Response) -> ProviderError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    error = error_object(body)
    retry_after = _retry_after(response, error)
    if error is not None:
        return gemini_error(
            provider,
            error,
            http_status=response.status_code,
            retry_after=retry_after,
            body=body,
        )
    return build_error(
        provider,
        response.reason_phrase or "the request failed",
        detail=f"HTTP {response.status_code}",
        status=response.status_code,
        retry_after=retry_after,
        body=body,
    )


def _decode(provider: str, data: bytes) -> Any:
    """One event's UTF-8 data as JSON; data that is only whitespace is no chunk (``None``)."""
    try:
        return loads_utf8(data)
    except ValueError as error:
        # No JSON document is blank: the check costs nothing on the way that succeeds.
        if not payload_text(data).strip():
            return None
        raise build_error(
            provider, "the stream sent an event whose data is not JSON", malformed=True
        ) from error


class GeminiPipe(ProviderPipe):
    """A pipe for the Gemini API's ``streamGenerateContent`` (SSE), with httpx and httpx-sse.

    Thought summaries stream as reasoning (``includeThoughts`` is requested unless
    ``include_thoughts=False``); every ``thoughtSignature`` is kept as opaque state and sent
    back on its own part when the history comes from a conversation that carries the states
    (see the module docstring for the mapping). ``usage.reasoning_tokens`` is Gemini's
    ``thoughtsTokenCount``; ``output_tokens`` is answer plus thoughts.

    Args:
        model: the model id (``"gemini-2.5-flash"``; a ``"models/"`` prefix is accepted).
        include_thoughts: ask for thought summaries (``thinkingConfig.includeThoughts``).
        thinking_config: more ``thinkingConfig`` fields (``thinkingBudget``,
            ``thinkingLevel``), merged in.
        tools: function tools (``Tool``, ``@tool`` functions or OpenAI-style dicts: they
            become ``functionDeclarations``) and native Gemini tool objects such as
            ``{"googleSearch": {}}`` (passed through).
        client: an ``httpx.Client`` (for ``run()``) or ``httpx.AsyncClient`` (``arun()``).
        base_url: the API root (default: ``GEMINI_BASE_URL`` from the environment, else
            ``https://generativelanguage.googleapis.com/v1beta``).
        api_key: sent as ``x-goog-api-key`` (default ``$GEMINI_API_KEY``, else
            ``$GOOGLE_API_KEY``); never put in the URL, and scrubbed from error messages.
        inline_tags, start_in_reasoning, tags: read ``<think>`` tags in the answer text, for
            compatible endpoints that leak them there, as :class:`OpenAIChatPipe` takes them
            (default ``False``: this API separates reasoning itself).

    >>> pipe = GeminiPipe("gemini-2.5-flash")                    # doctest: +SKIP
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider = "gemini"
    secret_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    # No SDK to install: httpx and httpx-sse are core dependencies of the package.
    extra = "all"
    sync_client_hint: ClassVar[str] = "an httpx.Client"
    transport: ClassVar[str] = "httpx"
    """Gemini is read with httpx and httpx-sse only."""

    def __init__(
        self,
        model: str,
        *,
        include_thoughts: bool = True,
        thinking_config: Mapping[str, Any] | None = None,
        inline_tags: InlineTags = False,
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        **options: Unpack[EndpointOptions],
    ) -> None:
        # Native Gemini tools (googleSearch, codeExecution, ...) pass through as given; the
        # function tools become Tool objects like every pipe's.
        given = options.get("tools")
        native: list[Mapping[str, Any]] = []
        if isinstance(given, list | tuple):
            native = [item for item in given if request.is_native_tool(item)]
            options["tools"] = [item for item in given if not request.is_native_tool(item)]
        options["base_url"] = (
            options.get("base_url") or os.environ.get("GEMINI_BASE_URL") or DEFAULT_BASE_URL
        )
        super().__init__(model, **options)
        self.model = model.removeprefix("models/")
        self.include_thoughts = include_thoughts
        self.thinking_config: dict[str, Any] = dict(thinking_config or {})
        self.native_tools: list[dict[str, Any]] = [dict(item) for item in native]
        """Native Gemini tool objects (``{"googleSearch": {}}``), sent as given."""
        self.inline_tags: InlineTags = inline_tags
        self.tags: tuple[str, ...] | None = check_inline_options(inline_tags, tags)
        self.start_in_reasoning = start_in_reasoning

    @property
    def url(self) -> str:
        """The streaming endpoint this pipe posts to."""
        return f"{self.base_url}/models/{self.model}:streamGenerateContent?alt=sse"

    # --------------------------------------------------------------------------- request

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the ``streamGenerateContent`` request.

        System messages become ``systemInstruction``; user turns ``"user"`` contents;
        assistant turns ``"model"`` contents with ``functionCall`` parts and their stored
        signatures; tool results ``functionResponse`` parts in a user turn. ``extra_body`` is
        merged in last, object by object.
        """
        system, history = request.contents(self.turns(prompt), self)
        body: dict[str, Any] = {"contents": history}
        if system:
            body["systemInstruction"] = {"parts": system}
        if self.tools or self.native_tools:
            body["tools"] = request.tool_declarations(self.tools, self.native_tools)
        choice = request.tool_config(self.tool_choice if self.tools else None)
        if choice is not None:
            body["toolConfig"] = choice
        generation = request.generation_settings(self)
        thinking: dict[str, Any] = {"includeThoughts": True} if self.include_thoughts else {}
        thinking.update(self.thinking_config)
        if thinking:
            generation["thinkingConfig"] = thinking
        if generation:
            body["generationConfig"] = generation
        return merge_params(self.with_reasoning(body), self.extra_body)

    # --------------------------------------------------------------------------- secrets

    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        for variable in _KEY_ENVIRONMENT:
            value = os.environ.get(variable)
            if value:
                return value
        return None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        key = self._key()
        if key:
            headers["x-goog-api-key"] = key
        return headers

    # ---------------------------------------------------------------------------- events

    def translator(self) -> Any:
        """A fresh translator for one response (its text read for inline tags when asked)."""
        return inline_translator(
            self,
            GeminiTranslator(
                model=self.model or "", provider=self.provider or "gemini", endpoint=self.endpoint
            ),
        )

    def is_async_client(self, client: Any) -> bool:
        """``httpx.AsyncClient``."""
        return isinstance(client, httpx.AsyncClient)

    def build_client(self, *, asynchronous: bool) -> Any:
        """An httpx client with the pipe's timeout (reasoning can take minutes)."""
        timeout = _DEFAULT_TIMEOUT if self.timeout is None else httpx.Timeout(self.timeout)
        return (httpx.AsyncClient if asynchronous else httpx.Client)(timeout=timeout)

    # ----------------------------------------------------------------------------- call

    @property
    def oneshot_url(self) -> str:
        """The ``:generateContent`` endpoint of the pipe's model (``stream=False``)."""
        return f"{self.base_url}/models/{self.model}:generateContent"

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """POST ``streamGenerateContent?alt=sse``, or one-shot ``:generateContent``."""
        url = self.url if stream else self.oneshot_url
        body = self.build_request(prompt)
        self.log_request(url, body)
        headers = self._headers()
        if not stream:
            headers["Accept"] = "application/json"
        return HttpCall(
            url,
            body,
            headers,
            self.provider or "gemini",
            status_error=_status_error,
            decode=_decode,
        )


SPEC = ProviderSpec(
    id="gemini",
    name="gemini",
    pipe="GeminiPipe",
    extra="all",
    key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    # Thought signatures go back on their parts (every earlier model turn, for the models
    # whose profile says so); the thought text never does.
    passback=state_passback,
    effort=PLANNER,
    preflight=request.preflight,
    repair=request.repair,
    demo=Demo("gemini_reasoning", "gemini-2.5-flash", demo_over_url(GeminiPipe, "/v1beta")),
    api_root=ApiRoot(
        "https://generativelanguage.googleapis.com/v1beta", "GEMINI_BASE_URL", ends_with="/v1beta"
    ),
    max_tokens=lambda n, url: {"extra_body": {"generationConfig": {"maxOutputTokens": n}}},
    semconv_name="gcp.gemini",
)
"""The Gemini API (native ``streamGenerateContent``)."""
