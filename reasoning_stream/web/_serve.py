"""``reasoning-stream serve``: one page on 127.0.0.1 that shows a run's reasoning live.

The page (one HTML file, no build step) posts a prompt, then follows the run through the
hub with ``EventSource``: reasoning streams into a "Thinking… 4.2 s" block above the answer,
which collapses when the answer starts. By default the runs replay the offline demo
transcripts through the real SDK clients (no key, no network); ``--provider`` and
``--model`` run a live model instead, configured as for ``reasoning-stream chat``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from importlib import resources
from typing import IO, Any

from .._pipe import Prompt
from .._pipeline import Pipeline
from ..hub import Hub, MemoryHub, Runnable

__all__ = ["add_serve_command", "build_app", "demo_starter", "page_html", "serve"]

DEMO_DELAY = 0.03
"""Seconds between wire chunks of the demo replay, so the page is watchable."""


def page_html() -> str:
    """The page, as shipped in the package."""
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


@contextlib.contextmanager
def demo_starter(delay: float = DEMO_DELAY) -> Iterator[Callable[[Prompt], Runnable]]:
    """Builds the offline demo pipeline (DeepSeek-style writer, Anthropic critic) per prompt.

    A local :class:`~reasoning_stream.testing.WireServer` replays the bundled transcripts to
    the official SDK clients while the context is open.
    """
    from .._demo import build_demo_pipe
    from ..testing import Reply, Transcript, WireServer

    with WireServer() as server:
        server.add(Reply(Transcript.load("demo_deepseek"), delay=delay))
        server.add(Reply(Transcript.load("demo_anthropic"), delay=delay))

        def start(prompt: Prompt) -> Runnable:
            writer = build_demo_pipe("openai", "deepseek-reasoner", server.url, name="writer")
            critic = build_demo_pipe("anthropic", "claude-sonnet-4-6", server.url, name="critic")
            return Pipeline(writer, critic)

        start("")  # builds the pipes once now: their SDKs load before the first request
        yield start


def build_app(hub: Hub, start: Callable[[Prompt], Runnable]) -> Any:
    """The served app: the page at ``/``, the hub's streams, and ``POST`` to start a run."""
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from ._app import create_app

    html = page_html()

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse(html)

    return create_app(hub, start=start, routes=[Route("/", page)])


@contextlib.contextmanager
def _reasons_to(out: IO[str]) -> Iterator[None]:
    """Print the web app's log lines (a failed run's reason) on ``out`` while serving."""
    import logging

    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("reasoning-stream serve: %(message)s"))
    log = logging.getLogger("reasoning_stream.web")
    log.addHandler(handler)
    previous = log.level
    if not log.isEnabledFor(logging.WARNING):
        log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(previous)


def add_serve_command(commands: Any) -> None:
    """Register ``serve`` on the command line's subparsers."""
    from .._cli import PROVIDERS

    parser = commands.add_parser(
        "serve",
        help="a web page showing reasoning live (127.0.0.1)",
        description="Serve a page on 127.0.0.1 that starts a run and shows its reasoning live, "
        "above the answer, through the hub (the offline demo unless --provider is given).",
    )
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument(
        "--provider", choices=sorted(PROVIDERS), default=None, help="a live provider (needs a key)"
    )
    parser.add_argument("--model", default=None, help="the model, with --provider")
    parser.add_argument("--base-url", default=None, help="the API root (default: the provider's)")
    parser.set_defaults(handler=serve)


def serve(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    """Serve the page until interrupted."""
    out = out or sys.stderr
    try:
        import uvicorn
    except ImportError:
        out.write("reasoning-stream serve needs: pip install 'reasoning-stream[web]'\n")
        return 2
    hub = MemoryHub()
    with contextlib.ExitStack() as stack:
        if args.provider is None:
            start = stack.enter_context(demo_starter())
            what = "the offline demo (recorded transcripts through the real SDKs)"
        else:
            from .._cli import CommandError, build_pipe

            if not args.model:
                out.write("reasoning-stream: --model is required with --provider\n")
                return 2
            try:
                build_pipe(args.provider, args.model, base_url=args.base_url)
            except CommandError as error:
                out.write(f"reasoning-stream: {error}\n")
                return error.status

            def start(prompt: Prompt) -> Runnable:
                return build_pipe(args.provider, args.model, base_url=args.base_url)

            what = f"{args.provider} {args.model}"
        # The app's safety defaults hold (loopback names only, JSON from this page only);
        # a failed run's reason reaches this terminal as well as the page.
        config = uvicorn.Config(
            build_app(hub, start), host="127.0.0.1", port=args.port, log_level="warning"
        )
        stack.enter_context(_reasons_to(out))
        server = uvicorn.Server(config)
        out.write(f"reasoning-stream serve: {what}\n")

        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets)
            for listener in server.servers:
                for sock in listener.sockets:
                    host, port = sock.getsockname()[:2]
                    out.write(f"open http://{host}:{port}/  (Ctrl-C to stop)\n")
                    out.flush()

        server.startup = startup  # type: ignore[method-assign]
        server.run()
    return 0
