"""The one driver of every provider pipe: sync and async, streaming and one-shot, over a call a
provider describes once.

A provider package supplies a translator (wire chunk -> events, pure) and
:meth:`Driver.describe_call`: its request as a :class:`~._transports.base.Call` (an SDK
method, a URL with headers and a body, a boto3 operation). The loops below are the only ones:
they send the call the way the run needs, feed the chunks through the translator, record the
response id, release held characters (``salvage()``) when a stream breaks, and close the
response and any client the run built on every exit path, shielded from cancellation. Which
client a run uses is :mod:`._clients`' business; pipes whose SDK is sync only (boto3) read in
worker threads (``reads_in_threads``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, ClassVar, Protocol

import anyio

from .._events import Event
from .._pipe import Pipe, Prompt
from ..conversation._history import RequestTurns, check_prompt, resolve_request
from ..conversation._request_check import request_pipe
from ._clients import Clients, require
from ._errors import unparsed_reply
from ._transports.base import AsyncSource, Call, Source

__all__ = ["Driver", "Translator", "require"]


class Translator(Protocol):
    """What the driver needs of a provider's translator (see each ``translate.py``)."""

    @property
    def response_id(self) -> str | None:
        """The provider's id for the response, once seen."""

    def feed(self, chunk: Any) -> list[Event]:
        """The events of one chunk."""

    def finish(self) -> list[Event]:
        """The events the end of a complete stream releases."""

    def salvage(self) -> list[Event]:
        """What a broken stream still releases (held characters, completed state)."""

    def read_response(self, response: Any) -> list[Event]:
        """The events of one non-streaming response (``stream=False``), end included."""


class Driver(Clients, Pipe):
    """The loops of :class:`~._pipe.ProviderPipe`, over the hooks a provider implements."""

    stream: bool
    reads_in_threads: ClassVar[bool] = False
    """The SDK is sync only: ``arun()`` reads the sync client in worker threads."""

    # ------------------------------------------------------------------ provider hooks

    def translator(self) -> Translator:
        """A fresh translator for one response."""
        raise NotImplementedError

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """The request for ``prompt``, described once: streaming, or one-shot (``stream=False``).

        ``client`` is the one the run uses (the call may read what it needs of it, a base
        URL, a method's signature); building the call logs the request.
        """
        raise NotImplementedError(f"{type(self).__name__} describes no call")

    def open_stream(self, client: Any, prompt: Prompt | Any) -> Source:
        """Send the streaming request for ``prompt`` with a sync client; the response's chunks."""
        return self.describe_call(client, prompt, stream=True).open(client)

    async def aopen_stream(self, client: Any, prompt: Prompt | Any) -> AsyncSource:
        """Async twin of :meth:`open_stream`."""
        return await self.describe_call(client, prompt, stream=True).aopen(client)

    def create_response(self, client: Any, prompt: Prompt | Any) -> Any:
        """Send the non-streaming request for ``prompt`` with a sync client; the response.

        The response is the decoded body (a dict) or the SDK's parsed object; the
        translator's ``read_response`` reads either.
        """
        return self.describe_call(client, prompt, stream=False).send(client)

    async def acreate_response(self, client: Any, prompt: Prompt | Any) -> Any:
        """Async twin of :meth:`create_response`."""
        return await self.describe_call(client, prompt, stream=False).asend(client)

    def stream_ended(self, translator: Translator) -> None:
        """Called once a stream ended, however it ended (server timings, for instance)."""

    def _ended(self, translator: Translator) -> None:
        """Record what the response said of itself (its model, ...), then ``stream_ended``."""
        details = getattr(translator, "details", None)
        if details:
            self.set_response_details(details)
        self.stream_ended(translator)

    def _request_target(self, request: RequestTurns) -> Driver:
        """The pipe whose settings this request carries: ``self``, or a repaired copy
        (request preflight: ``UsageError`` before anything is sent when the provider would
        reject the settings, unless the conversation runs with ``repair=True``)."""
        target: Driver = request_pipe(self, repair=request.repair)
        return target

    def _adopt(self, target: Driver) -> None:
        """What building the request recorded on a repaired copy, kept on ``self`` (see
        ``ProviderPipe``)."""

    # ---------------------------------------------------------------------------- loops

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """Stream one turn with the sync client, yielding its events."""
        check_prompt(prompt)
        # The passback policy is resolved here, once: the builder reads these turns.
        request: Any = resolve_request(prompt, self)
        target = self._request_target(request)
        if not self.stream:
            yield from self._iter_response(request, target)
            return
        client = self.sync_client()
        translator = self.translator()
        self._request_sent()
        source = target.open_stream(client, request)
        self._adopt(target)
        recorded = source.response_id
        self.set_response_id(recorded)
        try:
            for chunk in source.chunks:
                events = translator.feed(chunk)
                # Most wires repeat the response's id on every chunk: record it when it changes.
                if translator.response_id != recorded and translator.response_id is not None:
                    recorded = translator.response_id
                    self.set_response_id(recorded)
                yield from events
            yield from translator.finish()
        except Exception:
            # What the translator still held is part of what was captured before the failure.
            self.set_response_id(translator.response_id)
            yield from translator.salvage()
            raise
        finally:
            try:
                self._ended(translator)
            finally:
                source.close()

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Stream one turn with the async client, event by event (see the batched twin)."""
        batches = self.aiter_event_batches(prompt)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            with anyio.CancelScope(shield=True):
                await batches.aclose()  # type: ignore[attr-defined]

    async def aiter_event_batches(self, prompt: Prompt) -> AsyncIterator[Sequence[Event]]:
        """Stream one turn with the async client, the events of each wire chunk together.

        ``arun()`` reads this loop. A given sync client runs in a worker thread, an event at a
        time.
        """
        check_prompt(prompt)
        request: Any = resolve_request(prompt, self)
        if not self.stream:
            async for event in self._aiter_response(request, self._request_target(request)):
                yield (event,)
            return
        if self.reads_in_threads:
            client, owned = self.sync_client(), False
        else:
            chosen = self._async_client()
            if chosen is None:
                threaded = Pipe.aiter_events(self, request)
                try:
                    async for event in threaded:
                        yield (event,)
                finally:
                    with anyio.CancelScope(shield=True):
                        await threaded.aclose()  # type: ignore[attr-defined]
                return
            client, owned = chosen
        translator = self.translator()
        source: AsyncSource | None = None
        try:
            target = self._request_target(request)
            self._request_sent()
            source = await target.aopen_stream(client, request)
            self._adopt(target)
            recorded = source.response_id
            self.set_response_id(recorded)
            async for chunk in source.chunks:
                events = translator.feed(chunk)
                if translator.response_id != recorded and translator.response_id is not None:
                    recorded = translator.response_id
                    self.set_response_id(recorded)
                if events:
                    yield events
            events = translator.finish()
            if events:
                yield events
        except Exception:
            self.set_response_id(translator.response_id)
            events = translator.salvage()
            if events:
                yield events
            raise
        finally:
            self._ended(translator)
            with anyio.CancelScope(shield=True):
                try:
                    if source is not None:
                        await source.aclose()
                finally:
                    if owned:
                        await self.aclose_client(client)

    def _parsed(self, response: Any) -> Any:
        """``response`` if the SDK parsed it; a body it left as text is a ``MalformedStreamError``.

        The SDKs hand back the raw text of a reply that is not JSON (an event stream a server
        sent although the request asked for none, an HTML page) instead of raising.
        """
        if not isinstance(response, str | bytes):
            return response
        text = response.decode("utf-8", "replace") if isinstance(response, bytes) else response
        raise unparsed_reply(self.provider or self.name, text)

    def _iter_response(self, prompt: Prompt, target: Driver) -> Iterator[Event]:
        """One non-streaming request with the sync client (``target``'s settings: this pipe or
        its repaired copy); its events, read at once."""
        client = self.sync_client()
        translator = self.translator()
        try:
            self._request_sent()
            response = target.create_response(client, prompt)
            self._adopt(target)
            events = translator.read_response(self._parsed(response))
        finally:
            self.set_response_id(translator.response_id)
            self._ended(translator)
        yield from events

    async def _aiter_response(self, prompt: Prompt, target: Driver) -> AsyncIterator[Event]:
        """Async twin of :meth:`_iter_response` (a given sync client runs in a thread)."""
        chosen = None if self.reads_in_threads else self._async_client()
        client, owned = (self.sync_client(), False) if chosen is None else chosen
        translator = self.translator()
        try:
            self._request_sent()
            if owned or self.is_async_client(client):
                response = await target.acreate_response(client, prompt)
            else:
                response = await anyio.to_thread.run_sync(target.create_response, client, prompt)
            self._adopt(target)
            events = translator.read_response(self._parsed(response))
        finally:
            self.set_response_id(translator.response_id)
            self._ended(translator)
            if owned:
                with anyio.CancelScope(shield=True):
                    await self.aclose_client(client)
        for event in events:
            yield event
