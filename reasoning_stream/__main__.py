"""The ``reasoning-stream`` command line (also ``python -m reasoning_stream``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ._stream import ReasoningStream

__all__ = ["build_parser", "main"]

_EFFORTS = ("low", "medium", "high")


def _split_command(args: argparse.Namespace) -> int:
    if args.file in (None, "-"):
        collected = sys.stdin.read()
    else:
        try:
            with open(args.file, encoding="utf-8") as source:
                collected = source.read()
        except OSError as error:
            sys.stderr.write(f"reasoning-stream: cannot read {args.file}: {error.strerror}\n")
            return 2
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
    from ._demo import run_demo

    return run_demo(args)


def _chat_command(args: argparse.Namespace) -> int:
    from ._cli import chat

    return chat(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    from ._cli import PROVIDERS

    parser = argparse.ArgumentParser(
        prog="reasoning-stream",
        description="Stream a reasoning model's thinking and answer through one channel.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="show the whole contract offline (no API key)")
    demo.add_argument(
        "--provider", choices=sorted(PROVIDERS), default=None, help="replay one provider"
    )
    demo.add_argument("--raw", action="store_true", help="print the marker-wrapped channel bytes")
    demo.set_defaults(handler=_demo_command)

    chat = commands.add_parser("chat", help="one live turn against a real endpoint")
    chat.add_argument("prompt")
    chat.add_argument("--provider", choices=sorted(PROVIDERS), required=True)
    chat.add_argument("--model", required=True)
    chat.add_argument("--base-url", default=None, help="the API root (default: the provider's)")
    chat.add_argument("--reasoning", choices=_EFFORTS, default=None, help="reasoning effort")
    chat.add_argument(
        "--no-stream-reasoning", action="store_true", help="capture reasoning but do not show it"
    )
    output = chat.add_mutually_exclusive_group()
    output.add_argument("--raw", action="store_true", help="print the channel bytes as they come")
    output.add_argument("--json", action="store_true", help="print one typed event per line")
    chat.set_defaults(handler=_chat_command)

    split = commands.add_parser("split", help="split collected channel text into JSON")
    split.add_argument("file", nargs="?", default="-", help="a file, or - for standard input")
    split.add_argument("--lossless", action="store_true", help="keep every byte and segment")
    split.add_argument(
        "--assume-open", action="store_true", help="the text starts inside reasoning"
    )
    split.set_defaults(handler=_split_command)
    from .web._serve import add_serve_command

    add_serve_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except BrokenPipeError:
        # The reader of our output went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return status


if __name__ == "__main__":
    sys.exit(main())
