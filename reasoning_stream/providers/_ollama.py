"""Ollama: the ``/api/chat`` and ``/api/generate`` NDJSON streams, through the ``ollama`` SDK.

Ollama reports reasoning natively (``message.thinking`` on chat, ``thinking`` on generate) when
``think`` is on. Models run with thinking off, and older models, write ``<think>`` tags inline in
the answer instead; :class:`OllamaTranslator` reads those with the shared scanner until the
native field shows up. The final line (``done: true``) carries the stop reason, token counts
and the server's timings in nanoseconds.

Ollama keeps no reasoning state between turns and does not want prior reasoning back, so the
history sent is each message's content and tool calls only.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, Literal, TypeAlias

import anyio

from .._callbacks import CallbackErrorHandler
from .._effort import Reasoning, merge_params
from .._events import (
    Event,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    TextDelta,
    ToolCall,
    Usage,
    UsageReport,
)
from .._exceptions import ProviderError, UsageError
from .._pipe import Prompt
from .._tags import Scanner
from ._base import (
    ProviderPipe,
    provider_error,
    require,
    retry_after_seconds,
    tool_call_arguments,
)

__all__ = ["OllamaPipe", "OllamaTranslator", "Think"]

Think: TypeAlias = bool | Literal["low", "medium", "high"] | None
"""Ollama's ``think`` request field: on/off, or a level for models that take one (gpt-oss)."""

DEFAULT_HOST = "http://localhost:11434"

_NANOSECONDS = 1_000_000_000
_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
# Fields of a history message that Ollama understands besides role/content/tool calls.
_PASSTHROUGH_MESSAGE_KEYS = ("images", "tool_name")


def _field(obj: Any, name: str) -> Any:
    """Read ``name`` from an SDK model or a plain dict alike; absent is ``None``."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any) -> str:
    # JSON null (and any non-string the server might send) never becomes text.
    return value if isinstance(value, str) else ""


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, Mapping):
        arguments = dict(arguments)
    return json.dumps(arguments, ensure_ascii=False)


class OllamaTranslator:
    """Turns Ollama stream lines (SDK objects or dicts) into events. Pure: no I/O.

    ``api`` picks the field names (``"chat"``: ``message.thinking`` / ``message.content`` /
    ``message.tool_calls``; ``"generate"``: ``thinking`` / ``response``). ``inline_tags``
    decides whether answer text is scanned for ``<think>`` tags: ``"auto"`` scans until the
    native ``thinking`` field appears, ``True`` always, ``False`` never.

    >>> t = OllamaTranslator(model="qwen3")
    >>> t.feed({"message": {"role": "assistant", "thinking": "hm"}}) == [ReasoningDelta("hm")]
    True
    >>> answer = {"message": {"role": "assistant", "content": "hi"}}
    >>> t.feed(answer) == [ReasoningEnd(), TextDelta("hi")]
    True
    """

    def __init__(
        self,
        *,
        model: str,
        provider: str = "ollama",
        endpoint: str | None = None,
        api: Literal["chat", "generate"] = "chat",
        inline_tags: bool | Literal["auto"] = "auto",
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.api = api
        self._always_scan = inline_tags is True
        self._scanner: Scanner | None = (
            Scanner(start_in_reasoning=start_in_reasoning, tags=tags)
            if inline_tags is not False
            else None
        )
        self._native_open = False
        self._calls = 0
        self.server_timings: dict[str, float] | None = None
        """The final line's durations, in seconds (Ollama reports nanoseconds)."""

    def feed(self, chunk: Any) -> list[Event]:
        """Translate one stream line."""
        events: list[Event] = []
        if self.api == "chat":
            message = _field(chunk, "message")
            thinking = _text(_field(message, "thinking"))
            content = _text(_field(message, "content"))
            tool_calls = _field(message, "tool_calls") or ()
        else:
            thinking = _text(_field(chunk, "thinking"))
            content = _text(_field(chunk, "response"))
            tool_calls = ()

        if thinking:
            if self._scanner is not None and not self._always_scan:
                # The server separates reasoning itself: tags in the answer are now just text.
                events.extend(self._flush_scanner())
            self._native_open = True
            events.append(ReasoningDelta(thinking))
        if content:
            events.extend(self._close_native())
            if self._scanner is not None:
                events.extend(self._scanner.feed(content))
            else:
                events.append(TextDelta(content))
        for call in tool_calls:
            events.extend(self._close_native())
            events.append(self._tool_call(call))

        if _field(chunk, "done"):
            events.extend(self._flush_scanner())
            events.extend(self._close_native())
            events.extend(self._final(chunk))
        return events

    def finish(self) -> list[Event]:
        """End of stream: release characters the tag scanner holds and close reasoning."""
        return [*self._flush_scanner(), *self._close_native()]

    def _flush_scanner(self) -> list[Event]:
        scanner, self._scanner = self._scanner, None
        if scanner is None:
            return []
        return list(scanner.flush())

    def _close_native(self) -> list[Event]:
        if not self._native_open:
            return []
        self._native_open = False
        return [ReasoningEnd()]

    def _tool_call(self, call: Any) -> ToolCall:
        function = _field(call, "function")
        # Ollama's wire format has no call id before 0.12 and the SDK model drops it after;
        # a per-stream counter gives each call a stable id the tool result can point at.
        call_id = _field(call, "id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{self._calls}"
        self._calls += 1
        return ToolCall(
            id=call_id,
            name=_text(_field(function, "name")),
            arguments=_arguments_text(_field(function, "arguments")),
        )

    def _final(self, chunk: Any) -> list[Event]:
        timings = {
            name: value / _NANOSECONDS
            for name in _DURATIONS
            if isinstance(value := _field(chunk, name), int | float)
        }
        self.server_timings = timings or None
        events: list[Event] = []
        prompt_tokens = _field(chunk, "prompt_eval_count")
        output_tokens = _field(chunk, "eval_count")
        if isinstance(prompt_tokens, int) or isinstance(output_tokens, int):
            events.append(
                UsageReport(
                    Usage(
                        input_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
                        output_tokens=output_tokens if isinstance(output_tokens, int) else None,
                    )
                )
            )
        reason = _field(chunk, "done_reason")
        events.append(Finish(reason if isinstance(reason, str) and reason else "stop"))
        return events


@cache
def _accepted_keywords(api: str) -> frozenset[str]:
    """The keyword arguments the installed SDK's ``Client.chat``/``generate`` accept."""
    ollama = require("ollama", "ollama")
    parameters = inspect.signature(getattr(ollama.Client, api)).parameters
    return frozenset(parameters) - {"self"}


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI-style part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            _text(part.get("text"))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", None)
        )
    return ""


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
        tools: tool definitions for ``/api/chat`` (OpenAI's function-tool shape).
        options: Ollama runtime options (``temperature``, ``num_ctx``, ...).
        inline_tags: ``"auto"``, ``True`` or ``False``: parse ``<think>`` tags in the answer.
        start_in_reasoning: the answer starts inside reasoning (a template that pre-fills the
            open tag); Ollama's own templates leave the tag to the model, hence the default.
        tags: tag names the inline parser recognises (default ``think``, ``thinking``,
            ``reasoning``).
        client: an ``ollama.Client`` (for ``run()``) or ``ollama.AsyncClient`` (``arun()``).
        base_url: the server (default ``$OLLAMA_HOST``, else ``http://localhost:11434``).
        api_key: a bearer token for hosted Ollama; never shown in errors.

    >>> pipe = OllamaPipe("qwen3", think=True)            # doctest: +SKIP
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider = "ollama"
    extra = "ollama"

    def __init__(
        self,
        model: str,
        *,
        api: Literal["chat", "generate"] = "chat",
        think: Think = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        options: Mapping[str, Any] | None = None,
        inline_tags: bool | Literal["auto"] = "auto",
        start_in_reasoning: bool = False,
        tags: Iterable[str] | None = None,
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
        if api not in ("chat", "generate"):
            raise UsageError(f"api must be 'chat' or 'generate', not {api!r}")
        if inline_tags not in ("auto", True, False):
            raise UsageError(f"inline_tags must be 'auto', True or False, not {inline_tags!r}")
        super().__init__(
            model,
            client=client,
            base_url=base_url,
            api_key=api_key,
            extra_body=extra_body,
            timeout=timeout,
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
            reasoning=reasoning,
        )
        if think is not None and reasoning is not None:
            raise UsageError("give either think= (Ollama's own switch) or reasoning=, not both")
        self.api: Literal["chat", "generate"] = api
        self.think: Think = think
        self.tools: list[dict[str, Any]] = [dict(tool) for tool in tools or ()]
        self.options: dict[str, Any] = dict(options or {})
        self.inline_tags: bool | Literal["auto"] = inline_tags
        self.start_in_reasoning = start_in_reasoning
        self.tags: tuple[str, ...] | None = tuple(tags) if tags is not None else None
        self.host = self.base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        self.endpoint = self.host
        self._sync_client: Any = None
        self._async_client: Any = None
        if client is not None:
            if _is_async_client(client):
                self._async_client = client
            else:
                self._sync_client = client
        self._built_sync = False
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
        request: dict[str, Any] = {"model": self.model, "stream": True}
        if self.api == "chat":
            request["messages"] = self._chat_messages(prompt)
            if self.tools:
                request["tools"] = self.tools
        else:
            request.update(self._generate_prompt(prompt))
        if self.think is not None:
            request["think"] = self.think
        if self.options:
            request["options"] = dict(self.options)
        request = self.with_reasoning(request)
        if self.extra_body:
            unknown = set(self.extra_body) - _accepted_keywords(self.api)
            if unknown:
                raise UsageError(
                    f"extra_body keys {sorted(unknown)} are not fields the ollama SDK's "
                    f"{self.api}() can send; accepted: {sorted(_accepted_keywords(self.api))}"
                )
            request = merge_params(request, self.extra_body)
        return request

    def _chat_messages(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        tool_names: dict[str, str] = {}
        for turn in self.turns(prompt):
            source = turn.message
            role = source.get("role")
            if role == "developer":
                role = "system"
            message: dict[str, Any] = {
                "role": role,
                "content": _content_text(source.get("content")),
            }
            for key in _PASSTHROUGH_MESSAGE_KEYS:
                if source.get(key):
                    message[key] = source[key]
            if role == "assistant" and source.get("tool_calls"):
                calls = []
                for call in source["tool_calls"]:
                    function = call.get("function") or {}
                    name = _text(function.get("name"))
                    if call.get("id"):
                        tool_names[str(call["id"])] = name
                    arguments = tool_call_arguments(
                        function.get("arguments"), name, provider_label="Ollama"
                    )
                    calls.append({"function": {"name": name, "arguments": arguments}})
                message["tool_calls"] = calls
            elif role == "tool" and "tool_name" not in message:
                tool_name = source.get("name") or tool_names.get(str(source.get("tool_call_id")))
                if tool_name:
                    message["tool_name"] = tool_name
            # Deliberately nothing else: Ollama takes no reasoning back, so neither a
            # turn's readable reasoning nor any stored state is ever re-sent.
            messages.append(message)
        return messages

    def _generate_prompt(self, prompt: Prompt | Any) -> dict[str, Any]:
        system: list[str] = []
        user: list[str] = []
        for turn in self.turns(prompt):
            role = turn.message.get("role")
            text = _content_text(turn.message.get("content"))
            if role in ("system", "developer"):
                system.append(text)
            elif role == "user":
                user.append(text)
            else:
                raise UsageError(
                    f"api='generate' takes a prompt, not a conversation with {role!r} turns; "
                    "use OllamaPipe(api='chat') for multi-turn history"
                )
        fields: dict[str, Any] = {"prompt": "\n\n".join(user)}
        if system:
            fields["system"] = "\n\n".join(system)
        return fields

    # --------------------------------------------------------------------------- clients

    def _sync(self) -> Any:
        if self._sync_client is None:
            if self._async_client is not None:
                raise UsageError(
                    f"{self.name} was given an async ollama client: use `await pipe.arun(...)`, "
                    "or pass an ollama.Client for run()"
                )
            self._sync_client = self._make_client("Client")
            self._built_sync = True
        return self._sync_client

    def _make_client(self, kind: Literal["Client", "AsyncClient"]) -> Any:
        ollama = require("ollama", self.extra)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
        return getattr(ollama, kind)(host=self.host, timeout=self.timeout, headers=headers)

    def _translator(self) -> OllamaTranslator:
        return OllamaTranslator(
            model=self.model or "",
            provider=self.provider,
            endpoint=self.endpoint,
            api=self.api,
            inline_tags=self.inline_tags,
            start_in_reasoning=self.start_in_reasoning,
            tags=self.tags,
        )

    # ---------------------------------------------------------------------------- events

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with the sync ``ollama.Client``."""
        client = self._sync()
        request = self.build_request(prompt)
        translator = self._translator()
        self.last_server_timings = None
        # The SDK returns a lazy generator: the request goes out on the first next().
        stream = getattr(client, self.api)(**request)
        try:
            for chunk in stream:
                yield from translator.feed(chunk)
            yield from translator.finish()
        except Exception:
            # A broken stream still releases what the tag scanner held back.
            yield from translator.finish()
            raise
        finally:
            self.last_server_timings = translator.server_timings
            stream.close()

    def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn with an ``ollama.AsyncClient`` (given, or built for this run).

        With only a sync client given, the sync stream runs in a worker thread.
        """
        if self._async_client is None and self._sync_client is not None and not self._built_sync:
            return super().aiter_events(prompt)
        return self._astream(prompt)

    async def _astream(self, prompt: Prompt) -> AsyncIterator[Event]:
        request = self.build_request(prompt)
        translator = self._translator()
        self.last_server_timings = None
        # A client built here belongs to this run's event loop (asyncio or trio), so it is
        # made and closed per run rather than cached across loops.
        owned = self._async_client is None
        client = self._make_client("AsyncClient") if owned else self._async_client
        stream: Any = None
        try:
            stream = await getattr(client, self.api)(**request)
            async for chunk in stream:
                for event in translator.feed(chunk):
                    yield event
            for event in translator.finish():
                yield event
        except Exception:
            # A broken stream still releases what the tag scanner held back.
            for event in translator.finish():
                yield event
            raise
        finally:
            self.last_server_timings = translator.server_timings
            with anyio.CancelScope(shield=True):
                if stream is not None:
                    await stream.aclose()
                if owned:
                    await client.close()

    def close(self) -> None:
        """Close the sync client this pipe built itself; a client passed in stays the caller's."""
        if self._built_sync and self._sync_client is not None:
            client, self._sync_client = self._sync_client, None
            self._built_sync = False
            client.close()

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
            return ProviderError(
                f"{provider}: {reason} (ResponseError, {where})",
                provider=provider,
                status_code=status,
                retry_after=retry_after_seconds(getattr(response, "headers", None)),
                body=reason,
            )
        return provider_error(provider, error)


def _is_async_client(client: Any) -> bool:
    method = getattr(client, "chat", None)
    return inspect.iscoroutinefunction(method)
