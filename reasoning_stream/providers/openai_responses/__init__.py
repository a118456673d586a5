"""The OpenAI Responses API (``POST /v1/responses``): reasoning models, Codex, gpt-oss servers.

:class:`OpenAIResponsesPipe` builds the input items (:mod:`.request`: reasoning items replayed
before the items they preceded), opens the stream with the official ``openai`` SDK or the lean
httpx transport (``transport="httpx"``: httpx + httpx-sse, the events as plain dicts), and the
shared driver feeds the events through an :class:`~.translate.OpenAIResponsesTranslator`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, Unpack

import httpx

from ..._exceptions import ProviderError, UsageError
from ..._pipe import Prompt
from ..._turns import HistoryTurn
from ...conversation._policy import state_passback
from ...conversation._request_check import always_thinks
from .._clients import async_by, demo_over_sdk, require
from .._errors import build_error
from .._inline import InlineTags, check_inline_options, inline_translator
from .._pipe import EndpointOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import Call, HttpCall, SdkCall, decode_json
from . import request
from .effort import PLANNER
from .translate import (
    ENCRYPTED_KIND,
    PROVIDER,
    REASONING_ITEM_KIND,
    OpenAIResponsesTranslator,
)

__all__ = ["SPEC", "OpenAIResponsesPipe", "OpenAIResponsesTranslator"]

_STATE_KINDS = frozenset({REASONING_ITEM_KIND, ENCRYPTED_KIND})
_ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""The API root the lean transport posts to without ``base_url`` or ``$OPENAI_BASE_URL``."""


class OpenAIResponsesPipe(ProviderPipe):
    """Streams a turn from the OpenAI Responses API (reasoning models, Codex, gpt-oss servers).

    Reasoning summaries and raw reasoning text reach the channel as reasoning segments, one
    per summary part; the answer as text; function calls land on ``result.tool_calls``.
    Each reasoning item is kept on ``result.reasoning_state`` (kind ``"reasoning_item"``, or
    ``"encrypted"`` when it carries ``encrypted_content``; the payload is the item's JSON)
    and is sent back before the items it preceded when a conversation replays the turn.

    Args:
        model: the model id (``"o4-mini"``, ``"gpt-5-codex"``, ``"openai/gpt-oss-20b"``).
        client: an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client.
        base_url: the ``/v1`` API root, to build clients when none is given.
        api_key: the key for built clients (default: the SDK reads ``OPENAI_API_KEY``).
        store: the request's ``store``; ``False`` (stateless, Zero Data Retention) also asks
            for ``include=["reasoning.encrypted_content"]`` so reasoning can be replayed.
        reasoning_summary: ``reasoning.summary`` (``"auto"``, ``"concise"``, ``"detailed"``);
            ``None`` leaves it out (servers without summaries).
        instructions: the request's ``instructions`` (a system message, server side).
        extra_body: more JSON fields; dict values merge into the pipe's own
            (``{"reasoning": {"effort": "high"}}`` keeps the summary setting).
        max_retries: SDK retries for clients the pipe builds (default 0: a retry would
            replay the stream into the channel).
        transport: ``"sdk"`` (the default: the ``openai`` SDK) or ``"httpx"`` (the lean
            transport: httpx and httpx-sse post the same body and read the same events as
            plain dicts, without the SDK's model objects; same results, a fraction of the CPU).
        http_client: the ``httpx.Client``/``AsyncClient`` for ``transport="httpx"`` (or pass
            it as ``client=``); without one the pipe builds its own.
        inline_tags, start_in_reasoning, tags: read ``<think>`` tags in the answer text, for
            compatible endpoints that leak them there, as :class:`OpenAIChatPipe` takes them
            (default ``False``: this API separates reasoning itself).

    >>> pipe = OpenAIResponsesPipe("o4-mini", base_url="http://localhost:8000/v1", api_key="k")
    >>> pipe.build_request("Hi")["reasoning"]
    {'summary': 'auto'}
    """

    provider = PROVIDER
    secret_env = ("OPENAI_API_KEY",)
    extra = "openai"
    sync_client_hint: ClassVar[str] = "a sync openai.OpenAI client"
    sdk: ClassVar[str | None] = "openai"
    client_methods: ClassVar[tuple[str, ...]] = ("responses.create",)
    client_hint: ClassVar[str] = "an openai.OpenAI or openai.AsyncOpenAI client"
    supports_stop: ClassVar[bool] = False
    """The Responses API has no stop sequences
    (platform.openai.com/docs/api-reference/responses/create)."""

    def __init__(
        self,
        model: str,
        *,
        store: bool | None = None,
        reasoning_summary: str | None = "auto",
        instructions: str | None = None,
        max_retries: int = 0,
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
        self.take_http_client(transport, http_client, sdk="an openai.OpenAI client")
        self.store = store
        self.reasoning_summary = reasoning_summary
        self.instructions = instructions
        self.max_retries = max_retries

    # ------------------------------------------------------------------------ requests

    def reasoning_options(self) -> dict[str, Any]:
        """The request's ``reasoning`` object; the one place its keys are decided."""
        options: dict[str, Any] = {}
        if self.reasoning_summary is not None:
            options["summary"] = self.reasoning_summary
        return options

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the streaming ``POST /v1/responses`` request for ``prompt``."""
        body: dict[str, Any] = {
            "model": self.model,
            "input": self.input_items(prompt),
            "stream": True,
        }
        if self.instructions is not None:
            body["instructions"] = self.instructions
        reasoning = self.reasoning_options()
        if reasoning:
            body["reasoning"] = reasoning
        if self.store is not None:
            body["store"] = self.store
        if self.store is False:
            body["include"] = [_ENCRYPTED_INCLUDE]
        body.update(request.responses_options(self))
        body = self.with_reasoning(body)
        for key, value in self.extra_body.items():
            current = body.get(key)
            if isinstance(current, dict) and isinstance(value, Mapping):
                body[key] = {**current, **value}
            elif key == "include" and isinstance(current, list) and isinstance(value, list):
                body[key] = [*current, *(entry for entry in value if entry not in current)]
            else:
                body[key] = value
        return body

    def input_items(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        """The request's ``input``: every history turn as Responses input items."""
        items: list[dict[str, Any]] = []
        for turn in self.turns(prompt):
            items += self.turn_items(turn)
        return items

    def turn_items(self, turn: HistoryTurn) -> list[dict[str, Any]]:
        """One history turn as input items; an assistant turn replays its reasoning first."""
        message = turn.message
        role = message.get("role")
        if role is None and "type" in message:
            # Already a Responses input item (a reasoning item, an item_reference, ...).
            return [dict(message)]
        if role == "assistant":
            return self._assistant_items(turn)
        if role == "tool":
            return [
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": request.tool_output(message.get("content")),
                }
            ]
        return [{"role": role, "content": request.input_content(message.get("content"))}]

    def _assistant_items(self, turn: HistoryTurn) -> list[dict[str, Any]]:
        """An assistant turn as input items, in the order the response produced them.

        Each reasoning state records the output items that followed it (``followed_by``), so
        ``reasoning, function_call, reasoning, function_call`` goes back in that order, every
        item with its own id: the API pairs a replayed reasoning item with the item after it.
        """
        message = turn.message
        text = request.content_text(message.get("content"))
        calls = {
            str(call.get("id")): call
            for call in message.get("tool_calls") or ()
            if isinstance(call, Mapping)
        }
        items: list[dict[str, Any]] = []
        text_placed = not text
        placed_calls: set[str] = set()
        for state in turn.states:
            if not state.may_go_to(self, check_endpoint=False) or state.kind not in _STATE_KINDS:
                continue
            item = request.reasoning_input_item(state)
            if item is None or (self.store is False and "encrypted_content" not in item):
                # A stored-by-id item cannot be resolved by a stateless request.
                continue
            items.append(item)
            for follower in state.extra.get("followed_by", ()):
                if not isinstance(follower, Mapping) or not follower.get("id"):
                    continue
                kind = follower.get("type")
                call_id = str(follower.get("call_id") or "")
                if kind == "message" and not text_placed:
                    items.append(_output_message(text, follower))
                    text_placed = True
                elif kind == "function_call" and call_id in calls and call_id not in placed_calls:
                    items.append(_function_call(calls[call_id], str(follower["id"])))
                    placed_calls.add(call_id)
        if not text_placed:
            items.append({"role": "assistant", "content": text})
        items.extend(
            _function_call(call, None)
            for call_id, call in calls.items()
            if call_id not in placed_calls
        )
        return items

    # ------------------------------------------------------------------------- clients

    def _client_options(self) -> dict[str, Any]:
        return {**super()._client_options(), "max_retries": self.max_retries}

    def is_async_client(self, client: Any) -> bool:
        """``openai.AsyncOpenAI`` and anything whose ``responses.create`` is a coroutine.

        With the lean transport, ``httpx.AsyncClient``.
        """
        return async_by(client, "responses", "create")

    def build_client(self, *, asynchronous: bool) -> Any:
        """``openai.OpenAI`` or ``openai.AsyncOpenAI`` from the pipe's options.

        With ``transport="httpx"``, an httpx client with the pipe's timeout.
        """
        if self.transport == "httpx":
            return super().build_client(asynchronous=asynchronous)
        openai = require("openai", self.extra)
        class_name = "AsyncOpenAI" if asynchronous else "OpenAI"
        try:
            return getattr(openai, class_name)(**self._client_options())
        except openai.OpenAIError as error:
            raise UsageError(
                f"{self.name}: could not build an openai.{class_name}: {error} "
                "(pass api_key=, for local servers any non-empty string, or client=)"
            ) from error

    def translator(self) -> Any:
        """A fresh translator for one response (its text read for inline tags when asked)."""
        return inline_translator(
            self,
            OpenAIResponsesTranslator(
                model=self.model or "", provider=self.provider or PROVIDER, endpoint=self.endpoint
            ),
        )

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """``responses.create`` (``stream=True``, or one-shot without) on the SDK; with
        ``transport="httpx"``, the SDK's URL, bearer key and body POSTed as plain JSON."""
        body = self.build_request(prompt)
        self.log_request("/responses", body)
        if not stream:
            body.pop("stream", None)
        if self.transport == "httpx":
            url = self.lean_url(
                client,
                "responses",
                base=self.base_url,
                default=DEFAULT_BASE_URL,
            )
            key = self._api_key or os.environ.get("OPENAI_API_KEY")
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            return HttpCall(url, body, headers, self.provider or PROVIDER, decode=_decode)
        return SdkCall("responses.create", request.sdk_arguments(client.responses.create, body))


def _decode(provider: str, data: bytes) -> Any:
    """One event of the lean transport; one with an ``error`` object raises, as in the SDK."""
    chunk = decode_json(provider, data)
    if type(chunk) is dict and chunk.get("error"):
        raise _stream_error(provider, chunk["error"])
    return chunk


def _stream_error(provider: str, error: Any) -> ProviderError:
    # The openai SDK raises APIError(message, body=error) for such an event; the SDK path
    # reports its message, and a numeric code as the status.
    message = error.get("message") if isinstance(error, Mapping) else None
    code = error.get("code") if isinstance(error, Mapping) else None
    return build_error(
        provider,
        message if isinstance(message, str) and message else "An error occurred during streaming",
        detail="error event mid-stream",
        status=code if type(code) is int and 100 <= code <= 599 else None,
        body=error,
    )


def _output_message(text: str, follower: Mapping[str, Any]) -> dict[str, Any]:
    output: dict[str, Any] = {
        "type": "message",
        "id": follower["id"],
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    if follower.get("phase"):
        output["phase"] = follower["phase"]
    return output


def _function_call(call: Mapping[str, Any], item_id: str | None) -> dict[str, Any]:
    function = call.get("function") or {}
    item = {
        "type": "function_call",
        "call_id": call.get("id"),
        "name": function.get("name"),
        "arguments": request.arguments_text(function.get("arguments")),
    }
    if item_id is not None:
        item["id"] = item_id
    return item


SPEC = ProviderSpec(
    id="openai-responses",
    name="responses",
    pipe="OpenAIResponsesPipe",
    extra="openai",
    key_env=("OPENAI_API_KEY",),
    base_url_env="OPENAI_BASE_URL",
    # Reasoning items go back as input items (stateless replay pairs them by id), for the
    # turns the model's profile names (every earlier turn for the reasoning models).
    passback=state_passback,
    effort=PLANNER,
    preflight=request.preflight,
    repair=request.repair,
    thinking_request=always_thinks,
    demo=Demo(
        "openai_responses_summary", "o4-mini", demo_over_sdk(OpenAIResponsesPipe, "OpenAI", "/v1")
    ),
    api_root=ApiRoot("https://api.openai.com/v1", "OPENAI_BASE_URL", ends_with="/v1"),
    max_tokens=lambda n, url: {"extra_body": {"max_output_tokens": n}},
    semconv_name="openai",
)
"""The OpenAI Responses API."""
