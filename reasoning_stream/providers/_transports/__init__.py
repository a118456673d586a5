"""How chunks reach a provider pipe: one module per transport, the decoders pure.

A provider describes its request once as a :class:`~.base.Call`; the driver sends it sync or
async, streaming or one-shot, and reads a :class:`~.base.Source` (sync) or
:class:`~.base.AsyncSource`: the chunks, a way to release the response on every exit path,
and the id the transport learned before the first chunk (Bedrock's request id). The driver
(:mod:`.._driver`) owns the loops; translators own the meaning of the chunks.

- :mod:`.sdk`: :class:`~.sdk.SdkCall`, an official SDK's method (openai, anthropic, ollama),
  its stream closed completely, generators included.
- :mod:`.lean`: :class:`~.lean.HttpCall`, a URL, headers and a JSON body sent with httpx
  (``transport="httpx"`` of OpenAI Chat, Responses, Anthropic and Ollama; the only transport
  of Gemini and OpenRouter), its one read loop pair; the lean clients.
- :mod:`.sse` and :mod:`.ndjson`: the pure decoders that loop feeds (``text/event-stream``
  with its ``[DONE]``, newline-delimited JSON), bytes in, decoded chunks out.
- :mod:`.wire`: the reply's bytes, through as few of httpx's layers as it allows.
- :mod:`.eventstream`: :class:`~.eventstream.Boto3Call`, a boto3 ``EventStream``, read by a
  thread of its own for ``arun()``.
"""

from __future__ import annotations

from .base import (
    SKIP,
    AsyncSource,
    Call,
    Decode,
    DecodeEvent,
    PayloadDecoder,
    Source,
    StatusError,
    decode_json,
    payload_text,
)
from .eventstream import Boto3Call, aevent_stream_source, event_stream_source
from .lean import (
    TRANSPORTS,
    HttpCall,
    check_lean_client,
    lean_client,
    lean_endpoint,
    lean_url,
)
from .ndjson import NDJSONDecoder
from .sdk import SdkCall, andjson_source, asdk_source, ndjson_source, sdk_source
from .sse import SSEJsonDecoder, SSEReader
from .wire import awire_bytes, wire_bytes

__all__ = [
    "SKIP",
    "TRANSPORTS",
    "AsyncSource",
    "Boto3Call",
    "Call",
    "Decode",
    "DecodeEvent",
    "HttpCall",
    "NDJSONDecoder",
    "PayloadDecoder",
    "SSEJsonDecoder",
    "SSEReader",
    "SdkCall",
    "Source",
    "StatusError",
    "aevent_stream_source",
    "andjson_source",
    "asdk_source",
    "awire_bytes",
    "check_lean_client",
    "decode_json",
    "event_stream_source",
    "lean_client",
    "lean_endpoint",
    "lean_url",
    "ndjson_source",
    "payload_text",
    "sdk_source",
    "wire_bytes",
]
