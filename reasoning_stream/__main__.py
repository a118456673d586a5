"""The ``reasoning-stream`` command line (also ``python -m reasoning_stream``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import IO

from ._stream import ReasoningStream

__all__ = ["build_parser", "main"]

_DEMO_PIPELINE = ("openai", "anthropic")
"""The providers the default demo (a two-pipe Pipeline) replays."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reasoning-stream")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from . import __version__

        return __version__


def _decode(data: bytes, where: str, err: IO[str]) -> str:
    """UTF-8 text from ``data``; bytes that are not UTF-8 become U+FFFD, and we say where."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = data[error.start]
        err.write(
            f"reasoning-stream: {where} is not valid UTF-8 (byte 0x{bad:02x} at offset "
            f"{error.start}); each undecodable byte is shown as U+FFFD\n"
        )
        return data.decode("utf-8", errors="replace")


def _split_command(args: argparse.Namespace) -> int:
    if args.file in (None, "-"):
        stdin = sys.stdin
        if stdin.isatty():
            sys.stderr.write(
                "reasoning-stream split: reading channel text from standard input; "
                "end it with Ctrl-D (or pass a FILE)\n"
            )
        raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
        collected = _decode(raw, "standard input", sys.stderr)
    else:
        try:
            with open(args.file, "rb") as source:
                raw = source.read()
        except OSError as error:
            sys.stderr.write(f"reasoning-stream: cannot read {args.file}: {error.strerror}\n")
            return 2
        collected = _decode(raw, args.file, sys.stderr)
    assume_open: bool | None = True if args.assume_open else None
    result = ReasoningStream.split(collected, lossless=args.lossless, assume_open=assume_open)
    json.dump(
        {
            "reasoning": result.reasoning,
            "text": result.text,
            "segments": list(result.segments),
            "truncated": result.truncated,
        },
        sys.stdout,
        ensure_ascii=False,
        indent=2,
    )
    sys.stdout.write("\n")
    return 0


def _demo_command(args: argparse.Namespace) -> int:
    from ._exceptions import UsageError

    try:
        from ._demo import run_demo

        return run_demo(args)
    except (ImportError, UsageError) as error:
        # A missing SDK surfaces as ImportError, or as the pipes' UsageError caused by one.
        cause = error if isinstance(error, ImportError) else error.__cause__
        missing = cause.name if isinstance(cause, ImportError) else None
        if not missing or missing.startswith("reasoning_stream"):
            raise  # not a missing optional SDK
        from .providers._spec import by_name

        names = _DEMO_PIPELINE if args.provider is None else (args.provider,)
        extras = ",".join(spec.extra for spec in map(by_name, names) if spec and spec.extra)
        sys.stderr.write(
            f"reasoning-stream: the demo needs the {missing} package: "
            f"pip install 'reasoning-stream[{extras}]'\n"
        )
        return 2


def _chat_command(args: argparse.Namespace) -> int:
    from ._cli import chat

    return chat(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    from ._cli import PROVIDERS, parse_reasoning, positive_int

    providers = ", ".join(sorted(PROVIDERS))
    parser = argparse.ArgumentParser(
        prog="reasoning-stream",
        description="Stream a reasoning model's thinking and answer through one channel.",
        epilog="Run 'reasoning-stream COMMAND --help' for a command's options.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_version()}",
        help="print the version and exit",
    )  # fmt: skip
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", help="what to do"
    )

    demo = commands.add_parser(
        "demo",
        help="show the whole contract offline (no API key)",
        description="Replay recorded provider streams through the real SDKs, offline.",
    )
    demo.add_argument(
        "--provider", choices=sorted(PROVIDERS), default=None, metavar="NAME",
        help=f"replay one provider ({providers}) instead of the two-pipe pipeline",
    )  # fmt: skip
    demo.add_argument(
        "--raw", action="store_true",
        help="print the channel bytes (markers and escapes) instead of rendering them",
    )  # fmt: skip
    demo.set_defaults(handler=_demo_command)

    chat = commands.add_parser(
        "chat",
        help="one live turn against a real endpoint",
        description="Send one prompt to a provider and stream its reasoning and answer.",
    )
    chat.add_argument("prompt", help="the message to send")
    chat.add_argument(
        "--provider", choices=sorted(PROVIDERS), required=True, metavar="NAME",
        help=f"the provider API: {providers}",
    )  # fmt: skip
    chat.add_argument("--model", required=True, help="the model id, as the provider names it")
    chat.add_argument(
        "--base-url", default=None, metavar="URL",
        help="the API root (default: the provider's; see README 'Base URLs')",
    )  # fmt: skip
    chat.add_argument(
        "--reasoning", type=parse_reasoning, default=None, metavar="LEVEL",
        help="off, on, low, medium, high, or a token budget (e.g. 4096); "
        "default: the provider's own",
    )  # fmt: skip
    chat.add_argument(
        "--max-tokens", type=positive_int, default=None, metavar="N",
        help="the output limit in tokens (reasoning counts toward it on most providers)",
    )  # fmt: skip
    chat.add_argument(
        "--no-stream", action="store_true",
        help="one non-streaming request: the whole reply comes at once (stream=False)",
    )  # fmt: skip
    chat.add_argument(
        "--no-stream-reasoning", action="store_true",
        help="capture reasoning but do not show it",
    )  # fmt: skip
    output = chat.add_mutually_exclusive_group()
    output.add_argument(
        "--raw", action="store_true",
        help="print the channel bytes as they come, markers included (input for split)",
    )  # fmt: skip
    output.add_argument("--json", action="store_true", help="print one typed event per line")
    chat.set_defaults(handler=_chat_command)

    split = commands.add_parser(
        "split",
        help="split collected channel text into JSON",
        description="Read collected channel text and print its reasoning and answer as JSON.",
    )
    split.add_argument(
        "file", nargs="?", default="-", metavar="FILE",
        help="a file of channel text, or - for standard input (the default)",
    )  # fmt: skip
    split.add_argument(
        "--lossless", action="store_true",
        help="keep the text and every segment byte for byte, empty segments too (no "
        "trimming); markers are still removed, and nested open tags and stray close tags "
        "are dropped",
    )  # fmt: skip
    split.add_argument(
        "--assume-open", action="store_true",
        help="the text starts inside reasoning (a template wrote the open tag)",
    )  # fmt: skip
    split.set_defaults(handler=_split_command)
    from .web._serve import add_serve_command

    add_serve_command(commands)
    from .testing._conform_cli import add_conform_command

    add_conform_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            parser.print_help()
            return 0
        status: int = args.handler(args)
    except KeyboardInterrupt:
        # Ctrl-C: stop quietly with the conventional status (128 + SIGINT).
        if sys.stderr.isatty():
            sys.stderr.write("\n")
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`| head`): stop quietly, as Unix tools do.
        from ._cli import reader_left

        return reader_left(sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
