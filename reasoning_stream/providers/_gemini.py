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

import json
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import anyio
import httpx
import httpx_sse

from .._callbacks import CallbackErrorHandler
from .._effort import Reasoning, merge_params
from .._events import (
    Event,
    Finish,
    OpaqueState,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningState,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from .._exceptions import MalformedStreamError, ProviderError, UsageError
from .._pipe import Prompt
from ._base import (
    HistoryTurn,
    ProviderPipe,
    provider_error,
    retry_after_seconds,
    tool_call_arguments,
)

__all__ = ["DEFAULT_BASE_URL", "GeminiPipe", "GeminiTranslator"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

_FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
_KEY_ENVIRONMENT = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
# Reasoning models can think for minutes before the first byte: only connecting is quick.
_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    # JSON null (or anything else that is not a string) never becomes text.
    return value if isinstance(value, str) else ""


def _error_object(body: Any) -> Mapping[str, Any] | None:
    """The ``error`` object of a Google API error body (an object, or a list of them)."""
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        error: Mapping[str, Any] = body["error"]
        return error
    return None


def _error_message(error: Mapping[str, Any], http_status: int | None = None) -> str:
    message = _str(error.get("message")) or "the request failed"
    status = _str(error.get("status"))
    details = [status] if status else []
    code = http_status if http_status is not None else _int(error.get("code"))
    if code is not None:
        details.append(f"HTTP {code}")
    return f"gemini: {message}" + (f" ({', '.join(details)})" if details else "")


class GeminiTranslator:
    """Turns ``GenerateContentResponse`` dicts into events. Pure: no I/O.

    A consecutive run of thought parts is one reasoning segment; the first non-thought part
    closes it. Signatures become ``OpaqueState`` (see the module docstring for the mapping).
    An ``error`` object in the stream raises ``ProviderError``.

    >>> t = GeminiTranslator(model="gemini-2.5-flash")
    >>> thought = {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}]}}]}
    >>> t.feed(thought) == [ReasoningDelta("hm")]
    True
    >>> answer = {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}
    >>> t.feed(answer) == [ReasoningEnd(), TextDelta("Hi")]
    True
    """

    def __init__(
        self, *, model: str, provider: str = "gemini", endpoint: str | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.response_id: str | None = None
        self._in_thought = False
        self._parts = 0
        self._text_length = 0
        self._calls = 0

    def feed(self, chunk: Any) -> list[Event]:
        """Translate one streamed response object."""
        if isinstance(chunk, list):
            return [event for item in chunk for event in self.feed(item)]
        if not isinstance(chunk, Mapping):
            return []
        error = _error_object(chunk)
        if error is not None:
            raise ProviderError(
                _error_message(error),
                provider=self.provider,
                status_code=_int(error.get("code")),
                body=dict(chunk),
            )
        response_id = chunk.get("responseId")
        if isinstance(response_id, str) and response_id:
            self.response_id = response_id

        events: list[Event] = []
        candidates = chunk.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(candidate, Mapping):
            index = _int(candidate.get("index")) or 0
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping):
                    events.extend(self._part(index, part))
        usage = chunk.get("usageMetadata")
        if isinstance(usage, Mapping):
            events.extend(self._usage(usage))
        if isinstance(candidate, Mapping):
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                events.extend(self._close_thought())
                events.append(Finish(_FINISH_REASONS.get(reason, reason.lower())))
        return events

    def finish(self) -> list[Event]:
        """End of stream: close a reasoning segment still open."""
        return self._close_thought()

    def _close_thought(self) -> list[Event]:
        if not self._in_thought:
            return []
        self._in_thought = False
        return [ReasoningEnd()]

    def _part(self, candidate: int, part: Mapping[str, Any]) -> list[Event]:
        position = self._parts
        self._parts += 1
        extra: dict[str, Any] = {"text_offset": self._text_length, "call_index": self._calls}
        events: list[Event] = []
        text = _str(part.get("text"))
        if part.get("thought"):
            extra["part"] = "thought"
            self._in_thought = True
            if text:
                events.append(ReasoningDelta(text))
        else:
            events.extend(self._close_thought())
            call = part.get("functionCall")
            if isinstance(call, Mapping):
                tool_call = self._tool_call(call)
                extra.update(part="function_call", name=tool_call.name, call_id=tool_call.id)
                if isinstance(call.get("id"), str) and call["id"]:
                    extra["id"] = call["id"]
                events.append(tool_call)
            elif "text" in part:
                extra["part"] = "text" if text else "empty"
                if text:
                    self._text_length += len(text)
                    events.append(TextDelta(text))
            else:
                extra["part"] = "other"
                extra["raw"] = {k: v for k, v in part.items() if k != "thoughtSignature"}
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            state = ReasoningState(
                provider=self.provider,
                model=self.model,
                kind="signature",
                payload=signature,
                block=f"{candidate}:{position}",
                endpoint=self.endpoint,
                extra=extra,
            )
            events.append(OpaqueState(state))
        return events

    def _tool_call(self, call: Mapping[str, Any]) -> ToolCall:
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            # Gemini usually names no id; a per-turn counter gives a stable one.
            call_id = f"call_{self._calls}"
        self._calls += 1
        args = call.get("args")
        return ToolCall(
            id=call_id,
            name=_str(call.get("name")),
            arguments=json.dumps(args if args is not None else {}, ensure_ascii=False),
        )

    def _usage(self, usage: Mapping[str, Any]) -> list[Event]:
        prompt = _int(usage.get("promptTokenCount"))
        answer = _int(usage.get("candidatesTokenCount"))
        thoughts = _int(usage.get("thoughtsTokenCount"))
        # Gemini counts thinking apart from the answer; output_tokens counts both, as the
        # other providers' output counts do (and as Gemini bills them).
        output = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
        if prompt is None and output is None:
            return []
        usage_report = Usage(input_tokens=prompt, output_tokens=output, reasoning_tokens=thoughts)
        return [UsageReport(usage_report)]


# ------------------------------------------------------------------------ request building


_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]+);base64,(?P<data>.*)$", re.DOTALL)


def _user_parts(content: Any) -> list[dict[str, Any]]:
    """OpenAI-style content (a string or a part list) as Gemini parts."""
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, Sequence) else ():
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "text":
            parts.append({"text": _str(item.get("text"))})
        elif item.get("type") == "image_url":
            image = item.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            match = _DATA_URL.match(url) if isinstance(url, str) else None
            if match:
                parts.append({"inlineData": {"mimeType": match["mime"], "data": match["data"]}})
    return parts


def _content_text(content: Any) -> str:
    return "".join(_str(part.get("text")) for part in _user_parts(content))


def _function_response(content: Any) -> dict[str, Any]:
    """A tool result as the object ``functionResponse.response`` must be."""
    text = content if isinstance(content, str) else _content_text(content)
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return value if isinstance(value, dict) else {"result": value}


def _position(state: ReasoningState) -> tuple[int, int]:
    block = str(state.block or "")
    candidate, _, part = block.partition(":")
    try:
        return int(candidate), int(part)
    except ValueError:
        return 0, 0


class _Call:
    """One tool call of a history message, ready to become a ``functionCall`` part."""

    __slots__ = ("args", "id", "name", "server_id")

    def __init__(self, call: Mapping[str, Any]) -> None:
        function = call.get("function") or {}
        self.id = str(call.get("id") or "")
        self.name = _str(function.get("name"))
        self.args = tool_call_arguments(
            function.get("arguments"), self.name, provider_label="Gemini"
        )
        self.server_id: str | None = None

    def part(self) -> dict[str, Any]:
        call: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.server_id:
            call["id"] = self.server_id
        return {"functionCall": call}


def _model_parts(
    message: Mapping[str, Any], states: Sequence[ReasoningState], calls: Sequence[_Call]
) -> list[dict[str, Any]]:
    """A model turn's parts, each stored signature back on the part it came with.

    Sets ``server_id`` on the calls whose signature state recorded Gemini's own call id.
    """
    text = _content_text(message.get("content"))
    signed = sorted((s for s in states if s.kind == "signature"), key=_position)
    parts: list[dict[str, Any]] = []
    placed_text = 0
    next_call = 0
    used: set[int] = set()

    def place_text(upto: int) -> None:
        nonlocal placed_text
        if upto > placed_text:
            parts.append({"text": text[placed_text:upto]})
            placed_text = upto

    def place_calls(upto: int) -> None:
        nonlocal next_call
        while next_call < min(upto, len(calls)):
            if next_call not in used:
                parts.append(calls[next_call].part())
            next_call += 1

    for number, state in enumerate(signed):
        extra = state.extra
        kind = extra.get("part")
        offset = _int(extra.get("text_offset"))
        offset = min(max(placed_text if offset is None else offset, placed_text), len(text))
        call_index = _int(extra.get("call_index"))
        place_text(offset)
        place_calls(next_call if call_index is None else call_index)
        signature = {"thoughtSignature": state.payload}
        if kind == "text":
            later = [_int(s.extra.get("text_offset")) for s in signed[number + 1 :]]
            end = next((o for o in later if o is not None and o > offset), len(text))
            end = min(end, len(text))
            parts.append({"text": text[offset:end], **signature})
            placed_text = max(placed_text, end)
        elif kind == "function_call":
            index = _match_call(calls, used, extra, call_index)
            if index is None:
                continue  # the call was edited out of the history: nothing to sign
            used.add(index)
            calls[index].server_id = _str(extra.get("id")) or None
            parts.append({**calls[index].part(), **signature})
        elif kind == "thought":
            parts.append({"text": "", "thought": True, **signature})
        elif kind == "other" and isinstance(extra.get("raw"), Mapping):
            parts.append({**extra["raw"], **signature})
        else:
            parts.append({"text": "", **signature})
    place_text(len(text))
    place_calls(len(calls))
    return parts or [{"text": ""}]


def _match_call(
    calls: Sequence[_Call], used: set[int], extra: Mapping[str, Any], call_index: int | None
) -> int | None:
    call_id = extra.get("call_id")
    for index, call in enumerate(calls):
        if index not in used and call_id and call.id == call_id:
            return index
    name = extra.get("name")
    if (
        call_index is not None
        and call_index < len(calls)
        and call_index not in used
        and calls[call_index].name == name
    ):
        return call_index
    for index, call in enumerate(calls):
        if index not in used and call.name == name:
            return index
    return None


def _retry_after(response: httpx.Response, error: Mapping[str, Any] | None) -> float | None:
    seconds = retry_after_seconds(response.headers)
    if seconds is not None:
        return seconds
    details = error.get("details") if error is not None else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, Mapping) and isinstance(detail.get("retryDelay"), str):
            match = _DURATION.match(detail["retryDelay"])
            if match:
                return float(match[1])
    return None


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
        tools: OpenAI-style function tools (become ``functionDeclarations``) or native Gemini
            tool objects (passed through).
        client: an ``httpx.Client`` (for ``run()``) or ``httpx.AsyncClient`` (``arun()``).
        base_url: the API root (default: ``GEMINI_BASE_URL`` from the environment, else
            ``https://generativelanguage.googleapis.com/v1beta``).
        api_key: sent as ``x-goog-api-key`` (default ``$GEMINI_API_KEY``, else
            ``$GOOGLE_API_KEY``); never put in the URL, and scrubbed from error messages.

    >>> pipe = GeminiPipe("gemini-2.5-flash")                    # doctest: +SKIP
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider = "gemini"
    secret_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    # No SDK to install: httpx and httpx-sse are core dependencies of the package.
    extra = "all"

    def __init__(
        self,
        model: str,
        *,
        include_thoughts: bool = True,
        thinking_config: Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
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
        super().__init__(
            model.removeprefix("models/"),
            client=client,
            base_url=base_url or os.environ.get("GEMINI_BASE_URL") or DEFAULT_BASE_URL,
            api_key=api_key,
            extra_body=extra_body,
            timeout=timeout,
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
            reasoning=reasoning,
        )
        self.include_thoughts = include_thoughts
        self.thinking_config: dict[str, Any] = dict(thinking_config or {})
        self.tools: list[dict[str, Any]] = [dict(tool) for tool in tools or ()]
        self._sync_client: httpx.Client | None = None
        self._async_client: httpx.AsyncClient | None = None
        if isinstance(client, httpx.AsyncClient):
            self._async_client = client
        elif client is not None:
            self._sync_client = client
        self._built_sync = False

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
        system: list[dict[str, Any]] = []
        contents: list[dict[str, Any]] = []
        calls_by_id: dict[str, tuple[str, str | None]] = {}
        for turn in self.turns(prompt):
            message = turn.message
            role = message.get("role")
            if role in ("system", "developer"):
                system.extend(_user_parts(message.get("content")))
            elif role == "assistant":
                calls = [_Call(call) for call in message.get("tool_calls") or ()]
                _append(contents, "model", self._model_turn(turn, calls))
                for call in calls:
                    calls_by_id[call.id] = (call.name, call.server_id)
            elif role == "tool":
                call_id = str(message.get("tool_call_id") or "")
                name, server_id = calls_by_id.get(call_id, ("", None))
                response: dict[str, Any] = {
                    "name": _str(message.get("name")) or name,
                    "response": _function_response(message.get("content")),
                }
                if server_id:
                    response["id"] = server_id
                _append(contents, "user", [{"functionResponse": response}])
            else:
                _append(contents, "user", _user_parts(message.get("content")))
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": system}
        if self.tools:
            body["tools"] = self._tool_declarations()
        thinking: dict[str, Any] = {"includeThoughts": True} if self.include_thoughts else {}
        thinking.update(self.thinking_config)
        if thinking:
            body["generationConfig"] = {"thinkingConfig": thinking}
        return merge_params(self.with_reasoning(body), self.extra_body)

    def _model_turn(self, turn: HistoryTurn, calls: Sequence[_Call]) -> list[dict[str, Any]]:
        # Only signatures this provider and model made go back; reasoning text never does.
        states = [s for s in turn.states if (s.provider, s.model) == (self.provider, self.model)]
        return _model_parts(turn.message, states, calls)

    def _tool_declarations(self) -> list[dict[str, Any]]:
        declarations: list[dict[str, Any]] = []
        native: list[dict[str, Any]] = []
        for tool in self.tools:
            function = tool.get("function")
            if tool.get("type") == "function" and isinstance(function, Mapping):
                declaration = {
                    key: function[key]
                    for key in ("name", "description", "parameters")
                    if key in function
                }
                declarations.append(declaration)
            else:
                native.append(dict(tool))
        if declarations:
            native.insert(0, {"functionDeclarations": declarations})
        return native

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
        elif self.client is None:
            raise UsageError(
                f"{self.name} needs an API key: pass api_key=, or set GEMINI_API_KEY "
                "(or GOOGLE_API_KEY)"
            )
        return headers

    # ---------------------------------------------------------------------------- events

    def _translator(self) -> GeminiTranslator:
        return GeminiTranslator(
            model=self.model or "", provider=self.provider or "gemini", endpoint=self.endpoint
        )

    def _feed(self, translator: GeminiTranslator, data: str) -> list[Event]:
        if not data.strip():
            return []
        try:
            chunk = json.loads(data)
        except ValueError as error:
            raise MalformedStreamError(
                "gemini: the stream sent an event whose data is not JSON",
                provider=self.provider,
            ) from error
        try:
            events = translator.feed(chunk)
        except ProviderError as error:
            raise error from None
        self.set_response_id(translator.response_id)
        return events

    def _status_error(self, response: httpx.Response) -> ProviderError:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        error = _error_object(body)
        if error is not None:
            message = _error_message(error, response.status_code)
        else:
            message = f"gemini: {response.reason_phrase or 'the request failed'} (HTTP "
            message += f"{response.status_code})"
        return ProviderError(
            message,
            provider=self.provider,
            status_code=response.status_code,
            retry_after=_retry_after(response, error),
            body=body,
        )

    def _sync(self) -> httpx.Client:
        if self._sync_client is None:
            if self._async_client is not None:
                raise UsageError(
                    f"{self.name} was given an httpx.AsyncClient: use `await pipe.arun(...)`, "
                    "or pass an httpx.Client for run()"
                )
            self._sync_client = httpx.Client(timeout=self._timeout())
            self._built_sync = True
        return self._sync_client

    def _timeout(self) -> httpx.Timeout:
        if self.timeout is None:
            return _DEFAULT_TIMEOUT
        return httpx.Timeout(self.timeout)

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with a sync ``httpx.Client``."""
        body = self.build_request(prompt)
        headers = self._headers()
        client = self._sync()
        translator = self._translator()
        request = client.build_request("POST", self.url, json=body, headers=headers)
        response = client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                response.read()
                raise self._status_error(response)
            for sse in httpx_sse.EventSource(response).iter_sse():
                yield from self._feed(translator, sse.data)
            yield from translator.finish()
        finally:
            response.close()

    def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn with an ``httpx.AsyncClient`` (given, or built for this run).

        With only a sync client given, the sync stream runs in a worker thread.
        """
        if self._async_client is None and self._sync_client is not None and not self._built_sync:
            return super().aiter_events(prompt)
        return self._astream(prompt)

    async def _astream(self, prompt: Prompt) -> AsyncIterator[Event]:
        body = self.build_request(prompt)
        headers = self._headers()
        translator = self._translator()
        # A client built here belongs to this run's event loop (asyncio or trio).
        owned = self._async_client is None
        client = httpx.AsyncClient(timeout=self._timeout()) if owned else self._async_client
        assert client is not None
        response: httpx.Response | None = None
        try:
            request = client.build_request("POST", self.url, json=body, headers=headers)
            response = await client.send(request, stream=True)
            if response.status_code >= 400:
                await response.aread()
                raise self._status_error(response)
            source = httpx_sse.EventSource(response).aiter_sse()
            try:
                async for sse in source:
                    for event in self._feed(translator, sse.data):
                        yield event
            finally:
                with anyio.CancelScope(shield=True):
                    await source.aclose()
            for event in translator.finish():
                yield event
        finally:
            with anyio.CancelScope(shield=True):
                if response is not None:
                    await response.aclose()
                if owned:
                    await client.aclose()

    def close(self) -> None:
        """Close the sync client this pipe built itself; a client passed in stays the caller's."""
        if self._built_sync and self._sync_client is not None:
            client, self._sync_client = self._sync_client, None
            self._built_sync = False
            client.close()

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map a transport or stream-format failure to ``ProviderError``.

        A key the server echoed is blanked by the shared :meth:`redact_secrets` when the run ends.
        """
        return provider_error(self.provider or self.name, error)


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Add parts under ``role``, joining a turn of the same role (parallel tool results)."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})
