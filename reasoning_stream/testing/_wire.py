"""A loopback HTTP server that replays recorded provider wire transcripts.

``WireServer`` lets tests and demos point the *real* provider SDKs (``openai``,
``anthropic``, ``ollama``, ``boto3``'s ``bedrock-runtime``, plain ``httpx``) at
recorded response bytes, so the SDKs' own HTTP and stream parsing runs exactly as
it would against the provider.  Bodies can be re-chunked down to single bytes,
delayed, cut off mid-frame or stalled, to exercise the unhappy paths of a
streaming client.

The server is a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` in a daemon
thread, so it serves sync clients and async ones (asyncio or trio) alike.  What
a transcript is and how its events become bytes per wire format lives in
``_transcript``; this module routes requests to replies and delivers them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from typing import Any, Self, TypedDict, Unpack
from urllib.parse import unquote

from reasoning_stream.testing._transcript import Transcript, TranscriptFormat, compact_json

__all__ = [
    "RecordedRequest",
    "Reply",
    "ReplyOptions",
    "Transcript",
    "TranscriptFormat",
    "WireServer",
]

# How often a stalled handler looks for the client having gone away.
_HANG_POLL_SECONDS = 0.02
# serve_forever's poll interval bounds how long stop() waits for the accept loop.
_ACCEPT_POLL_SECONDS = 0.05
_THREAD_JOIN_SECONDS = 2.0


class ReplyOptions(TypedDict, total=False):
    """Keyword options of :class:`Reply`, accepted by :meth:`WireServer.add`."""

    delay: float
    chunk_size: int | None
    cut_points: Sequence[int] | None
    disconnect_after: int | None
    disconnect_at_byte: int | None
    hang_after: int | None


@dataclass
class Reply:
    """A transcript plus how to deliver it.

    The body is split into *pieces*: the transcript's natural chunks, or
    ``chunk_size``-byte slices, or the slices between ``cut_points``.  Each piece is
    one HTTP chunk, written and flushed after ``delay`` seconds.  At most one of
    ``disconnect_after`` (pieces), ``disconnect_at_byte`` (body bytes) and
    ``hang_after`` (pieces) may be set to end the reply abnormally.
    """

    transcript: Transcript
    _: KW_ONLY
    delay: float = 0.0
    chunk_size: int | None = None
    cut_points: Sequence[int] | None = None
    disconnect_after: int | None = None
    disconnect_at_byte: int | None = None
    hang_after: int | None = None

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("delay must be >= 0")
        if self.chunk_size is not None and self.cut_points is not None:
            raise ValueError("give chunk_size or cut_points, not both")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        if self.cut_points is not None:
            self.cut_points = tuple(self.cut_points)
            if any(b <= a for a, b in pairwise(self.cut_points)) or any(
                point <= 0 for point in self.cut_points
            ):
                raise ValueError("cut_points must be strictly increasing positive offsets")
        endings = [self.disconnect_after, self.disconnect_at_byte, self.hang_after]
        if sum(option is not None for option in endings) > 1:
            raise ValueError("give at most one of disconnect_after, disconnect_at_byte, hang_after")
        if any(option is not None and option < 0 for option in endings):
            raise ValueError("disconnect_after, disconnect_at_byte and hang_after must be >= 0")

    def pieces(self) -> list[bytes]:
        """The body pieces that will actually be written, in order."""
        if self.chunk_size is not None:
            body = self.transcript.encode()
            size = self.chunk_size
            pieces = [body[start : start + size] for start in range(0, len(body), size)]
        elif self.cut_points is not None:
            body = self.transcript.encode()
            if self.cut_points and self.cut_points[-1] >= len(body):
                raise ValueError(
                    f"cut point {self.cut_points[-1]} is not inside the {len(body)}-byte body"
                )
            bounds = [0, *self.cut_points, len(body)]
            pieces = [body[start:end] for start, end in pairwise(bounds)]
        else:
            pieces = [piece for piece in self.transcript.chunks() if piece]
        if self.disconnect_at_byte is not None:
            pieces = _truncate(pieces, self.disconnect_at_byte)
        return pieces

    @property
    def pieces_before_end(self) -> int | None:
        """How many pieces are written before an abnormal end, or None for a normal end."""
        if self.disconnect_after is not None:
            return self.disconnect_after
        return self.hang_after


def _truncate(pieces: list[bytes], limit: int) -> list[bytes]:
    kept: list[bytes] = []
    remaining = limit
    for piece in pieces:
        if remaining <= 0:
            break
        kept.append(piece[:remaining])
        remaining -= len(kept[-1])
    return kept


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    """The request target as sent: path plus query string, still percent-encoded."""
    headers: dict[str, str]
    """Header names lower-cased; repeated headers joined with ``", "``."""
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def _compile_route(pattern: str) -> re.Pattern[str]:
    """Turn ``/model/{modelId}/converse-stream`` into a regex over the path.

    A ``{name}`` matches one or more characters other than ``/``, as few as
    needed, so literal text after it within the same segment (Gemini's
    ``{model}:streamGenerateContent``) still has to match.
    """
    parts = re.split(r"\{[A-Za-z_][A-Za-z0-9_]*\}", pattern.split("?", 1)[0])
    return re.compile("[^/]+?".join(re.escape(part) for part in parts))


@dataclass
class _Route:
    method: str
    pattern: str
    regex: re.Pattern[str]
    replies: list[Reply]
    served: int = 0

    def matches(self, method: str, target: str) -> bool:
        if method != self.method:
            return False
        path = target.split("?", 1)[0]
        # Clients percent-encode some characters (boto3 turns ':' in model ids
        # into %3A), so a pattern written with the literal character also counts.
        return bool(self.regex.fullmatch(path) or self.regex.fullmatch(unquote(path)))

    def take(self) -> Reply:
        reply = self.replies[min(self.served, len(self.replies) - 1)]
        self.served += 1
        return reply


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections beyond it in a burst; load tests
    # open hundreds of streams at once.
    request_queue_size = 1024

    def __init__(self, wire: WireServer, port: int = 0) -> None:
        self.wire = wire
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a reverse DNS lookup
        # that can take seconds on a badly configured machine; we know our name.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = int(self.socket.getsockname()[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up early is routine in these tests; only real bugs in
        # the handler deserve a traceback.
        error = sys.exc_info()[1]
        if isinstance(error, OSError) or self.wire._stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: test output should not fill with access logs."""

    def setup(self) -> None:
        super().setup()
        # Without TCP_NODELAY the kernel may coalesce our small writes, and the
        # client would never see the pieces arrive separately.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.wire._register(self.connection)

    def finish(self) -> None:
        self.server.wire._unregister(self.connection)
        super().finish()

    def _serve(self) -> None:
        body = self._read_body()
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            name = key.lower()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        wire = self.server.wire
        request = RecordedRequest(self.command, self.path, headers, body)
        wire._record(request)
        reply = wire._reply_for(request)
        if reply is None:
            self._send_not_found()
        else:
            self._send_reply(reply)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # Skip optional trailers up to the blank line ending the body.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_not_found(self) -> None:
        message = f"WireServer has no reply for {self.command} {self.path}"
        payload = compact_json(
            {"error": {"message": message, "type": "not_found", "path": self.path}}
        ).encode("utf-8")
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_reply(self, reply: Reply) -> None:
        transcript = reply.transcript
        pieces = reply.pieces()
        # A single JSON document is framed like a real non-streaming response;
        # everything else streams as HTTP chunks so the pieces stay visible.
        chunked = transcript.format != "json"
        self.send_response(transcript.status)
        for key, value in transcript.response_headers().items():
            self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(transcript.encode())))
        self.end_headers()

        stopping = self.server.wire._stopping
        limit = reply.pieces_before_end
        try:
            for index, piece in enumerate(pieces):
                if limit is not None and index >= limit:
                    break
                if reply.delay and stopping.wait(reply.delay):
                    self._drop()
                    return
                frame = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
                self.wfile.write(frame)
            if reply.hang_after is not None:
                self._hang()
                self._drop()
            elif reply.disconnect_after is not None or reply.disconnect_at_byte is not None:
                self._drop()
            elif chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            # The client left mid-reply; there is nobody to finish the body for.
            self.close_connection = True

    def _hang(self) -> None:
        """Keep the connection open and silent until the server stops or the client leaves."""
        stopping = self.server.wire._stopping
        sock = self.connection
        while not stopping.wait(_HANG_POLL_SECONDS):
            try:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    return
            except (OSError, ValueError):
                return

    def _drop(self) -> None:
        """End the connection abruptly: no terminating chunk, no further requests."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class WireServer:
    """An in-process HTTP server on 127.0.0.1 replaying transcripts to real clients.

    Replies are routed by method and path pattern (``{name}`` matches one path
    segment or the part of it before following literal text; the query string is
    ignored).  Several replies on one route are served in order and the last one
    repeats.  Unmatched requests get a 404 JSON error.  Every request, matched or
    not, is appended to :attr:`requests`.

    ``port`` fixes the port (default: a free one), so a gateway's config can name it ahead;
    ``responder`` chooses a reply from the whole request (its body included) before the
    routes are asked: it returns a :class:`Reply` or :class:`Transcript`, or ``None`` to let
    the routes answer.

    Use it as a context manager, sync or async::

        with WireServer("openai_chat_reasoning") as server:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="k")
    """

    def __init__(
        self,
        *replies: Transcript | Reply | str | os.PathLike[str],
        port: int = 0,
        responder: Callable[[RecordedRequest], Reply | Transcript | None] | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0 (any free port) or 1-65535, got {port}")
        self.requests: list[RecordedRequest] = []
        self._port = port
        self._responder = responder
        self._routes: list[_Route] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[socket.socket, threading.Thread] = {}
        for reply in replies:
            self.add(reply)

    def add(
        self,
        reply: Transcript | Reply | str | os.PathLike[str],
        **options: Unpack[ReplyOptions],
    ) -> Self:
        """Queue a reply on its transcript's route; ``options`` are :class:`Reply` fields.

        A string or path is a transcript name or file for :meth:`Transcript.load`.
        """
        if isinstance(reply, str | os.PathLike):
            reply = Transcript.load(reply)
        if isinstance(reply, Transcript):
            reply = Reply(reply, **options)
        elif options:
            reply = replace(reply, **options)
        transcript = reply.transcript
        pattern = transcript.path.split("?", 1)[0]
        with self._lock:
            for route in self._routes:
                if route.method == transcript.method and route.pattern == pattern:
                    route.replies.append(reply)
                    break
            else:
                self._routes.append(
                    _Route(transcript.method, pattern, _compile_route(pattern), [reply])
                )
        return self

    @property
    def url(self) -> str:
        """Base URL, ``http://127.0.0.1:PORT`` without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def port(self) -> int:
        """The ephemeral port the server listens on."""
        if self._server is None:
            raise RuntimeError("WireServer is not running; call start() first")
        return self._server.server_port

    def start(self) -> Self:
        """Bind to 127.0.0.1 (the given port, else a free one) and serve from a daemon thread."""
        if self._server is not None:
            raise RuntimeError("WireServer is already running")
        self._stopping.clear()
        try:
            server = _HTTPServer(self, self._port)
        except OSError as error:
            raise OSError(
                error.errno, f"WireServer cannot listen on 127.0.0.1:{self._port}: {error.strerror}"
            ) from error
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _ACCEPT_POLL_SECONDS},
            name=f"WireServer:{server.server_port}",
            daemon=True,
        )
        self._server, self._thread = server, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, stalled replies included.

        Returns promptly; safe to call twice.
        """
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = dict(self._connections)
        for sock in connections:
            # Wakes handlers blocked reading an idle keep-alive connection.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        thread.join(_THREAD_JOIN_SECONDS)
        for handler in connections.values():
            handler.join(_THREAD_JOIN_SECONDS)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        # stop() blocks for at most one accept-poll interval plus thread joins
        # that the shutdown has already unblocked, so no worker thread is needed.
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"<WireServer {where} routes={len(self._routes)}>"

    def routes(self) -> list[tuple[str, str, int]]:
        """``(method, pattern, reply count)`` for each route, in matching order."""
        with self._lock:
            return [(r.method, r.pattern, len(r.replies)) for r in self._routes]

    # The methods below run on handler threads, hence the lock around shared state.

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _reply_for(self, request: RecordedRequest) -> Reply | None:
        if self._responder is not None:
            chosen = self._responder(request)
            if chosen is not None:
                return chosen if isinstance(chosen, Reply) else Reply(chosen)
        return self._next_reply(request.method, request.path)

    def _next_reply(self, method: str, target: str) -> Reply | None:
        with self._lock:
            for route in self._routes:
                if route.matches(method, target):
                    return route.take()
        return None

    def _register(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections[sock] = threading.current_thread()
        if self._stopping.is_set():
            # Accepted just as stop() ran, after it took its snapshot: cut it here.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _unregister(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.pop(sock, None)
