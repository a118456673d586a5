"""Encoder for the AWS event-stream binary framing (``application/vnd.amazon.eventstream``).

Bedrock's streaming operations (``ConverseStream``, ``InvokeModelWithResponseStream``)
answer with a sequence of these frames rather than SSE.  The encoder here is just
enough to replay recorded Bedrock streams to a real ``boto3`` client:

``total length (u32) | headers length (u32) | prelude CRC (u32) | headers | payload | CRC (u32)``

All integers are big-endian and both checksums are CRC32 (``zlib.crc32``); the
message CRC covers every byte before it, including the prelude and its CRC.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = [
    "HeaderValue",
    "chunk_payload",
    "encode_frame",
    "encode_headers",
    "error_frame",
    "event_frame",
    "exception_frame",
]

HeaderValue = str | bytes | bool | int
"""Types a header value may take; ``int`` is sent as int32 when it fits, else int64."""

# Header value type tags from the event-stream specification.
_TYPE_TRUE = 0
_TYPE_FALSE = 1
_TYPE_INT32 = 4
_TYPE_INT64 = 5
_TYPE_BYTES = 6
_TYPE_STRING = 7

_PRELUDE_LENGTH = 12
_CRC_LENGTH = 4
# Decoders (botocore included) refuse anything bigger, so fail at encode time instead.
_MAX_HEADERS_LENGTH = 128 * 1024
_MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024


def _compact_json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    if not 0 < len(raw_name) <= 255:
        raise ValueError(f"event-stream header name must be 1..255 bytes: {name!r}")
    head = struct.pack("!B", len(raw_name)) + raw_name
    # bool first: it is a subclass of int and must not be sent as a number.
    if isinstance(value, bool):
        return head + struct.pack("!B", _TYPE_TRUE if value else _TYPE_FALSE)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return head + struct.pack("!Bi", _TYPE_INT32, value)
        return head + struct.pack("!Bq", _TYPE_INT64, value)
    if isinstance(value, str):
        tag, data = _TYPE_STRING, value.encode("utf-8")
    else:
        tag, data = _TYPE_BYTES, bytes(value)
    if len(data) > 0x7FFF:
        raise ValueError(f"event-stream header {name!r} value too long ({len(data)} bytes)")
    return head + struct.pack("!BH", tag, len(data)) + data


def encode_headers(headers: Mapping[str, HeaderValue]) -> bytes:
    """Encode the headers section of one frame, in the mapping's order."""
    return b"".join(_encode_header(name, value) for name, value in headers.items())


def encode_frame(headers: Mapping[str, HeaderValue], payload: bytes = b"") -> bytes:
    """Encode one complete event-stream frame (prelude, headers, payload and both CRCs)."""
    raw_headers = encode_headers(headers)
    if len(raw_headers) > _MAX_HEADERS_LENGTH:
        raise ValueError(f"event-stream headers too long ({len(raw_headers)} bytes)")
    if len(payload) > _MAX_PAYLOAD_LENGTH:
        raise ValueError(f"event-stream payload too long ({len(payload)} bytes)")
    total = _PRELUDE_LENGTH + len(raw_headers) + len(payload) + _CRC_LENGTH
    lengths = struct.pack("!II", total, len(raw_headers))
    prelude = lengths + struct.pack("!I", zlib.crc32(lengths))
    body = prelude + raw_headers + payload
    return body + struct.pack("!I", zlib.crc32(body))


def event_frame(event_type: str, payload: bytes) -> bytes:
    """Encode a normal event frame, as Bedrock sends e.g. ``contentBlockDelta``."""
    return _json_frame("event", event_type, payload)


def exception_frame(exception_type: str, payload: bytes) -> bytes:
    """Encode a modelled in-stream exception, e.g. ``modelStreamErrorException``."""
    return _json_frame("exception", exception_type, payload)


def _json_frame(message_type: str, name: str, payload: bytes) -> bytes:
    """A JSON frame of ``message_type`` (``event`` or ``exception``) named ``name``, its
    headers in the order the service writes them."""
    headers = {
        f":{message_type}-type": name,
        ":content-type": "application/json",
        ":message-type": message_type,
    }
    return encode_frame(headers, payload)


def error_frame(error_code: str, error_message: str) -> bytes:
    """Encode an unmodelled service error frame (``:message-type`` = ``error``)."""
    return encode_frame(
        {
            ":error-code": error_code,
            ":error-message": error_message,
            ":message-type": "error",
        }
    )


def chunk_payload(inner: Any) -> bytes:
    """Payload of an ``InvokeModelWithResponseStream`` ``chunk`` event wrapping ``inner``.

    The service nests the model's own JSON event base64-encoded inside
    ``{"bytes": ...}``; botocore decodes the blob back to raw bytes for the caller.
    """
    return _compact_json({"bytes": base64.b64encode(_compact_json(inner)).decode("ascii")})
