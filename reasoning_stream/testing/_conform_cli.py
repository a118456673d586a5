"""``reasoning-stream conform``: the conformance probe on the command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

__all__ = ["add_conform_command", "conform_command"]


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {port}")
    return port


def add_conform_command(commands: Any) -> None:
    """Add ``conform`` to the command line's subcommands."""
    from reasoning_stream.testing._conform import conform_providers

    names = conform_providers()
    command = commands.add_parser(
        "conform",
        help="check that a gateway or proxy keeps reasoning intact",
        description=(
            "Drive multi-turn tool loops through a gateway (LiteLLM, a proxy of your own) and "
            "check each documented passback rule. Offline, a local upstream replays recorded "
            "provider streams: point the gateway's upstream for this provider at the URL it "
            "prints (fix it with --upstream-port). Exit status 0 only when every rule holds."
        ),
    )
    command.add_argument(
        "--provider", choices=names, required=True, metavar="NAME",
        help=f"the wire shape the gateway speaks: {', '.join(names)}",
    )  # fmt: skip
    command.add_argument(
        "--base-url", required=True, metavar="URL",
        help="the gateway's API root for that shape, as the provider's pipe takes it",
    )  # fmt: skip
    command.add_argument(
        "--model", default=None, metavar="M",
        help="the model name the gateway routes (default: the recorded streams' model)",
    )  # fmt: skip
    command.add_argument(
        "--json", default=None, metavar="FILE",
        help='write {"passed": ..., "rows": [...]} to FILE, for CI',
    )  # fmt: skip
    command.add_argument(
        "--live", action="store_true",
        help="send one small real tool loop through the gateway to the real API, with the key "
        "from the provider's usual variable",
    )  # fmt: skip
    command.add_argument(
        "--upstream-port", type=_port, default=None, metavar="P",
        help="the port the offline upstream listens on (default: a free one)",
    )  # fmt: skip
    command.set_defaults(handler=conform_command)


def conform_command(
    args: argparse.Namespace, *, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Run the probe; 0 when every rule held, 1 when one did not, 2 on a usage error."""
    from reasoning_stream import ReasoningStreamError, UsageError
    from reasoning_stream.testing._conform import run_probe
    from reasoning_stream.testing._conform_report import render_report

    out = out or sys.stdout
    err = err or sys.stderr
    if args.live and args.upstream_port is not None:
        err.write("reasoning-stream: --upstream-port is for the offline upstream, not --live\n")
        return 2

    def announce(url: str) -> None:
        out.write(f"upstream: {url}  (the gateway's {args.provider} upstream must point here)\n")
        out.flush()

    try:
        report = run_probe(
            args.provider,
            args.base_url,
            model=args.model,
            upstream_port=args.upstream_port,
            live=args.live,
            on_upstream=announce,
        )
    except UsageError as error:
        err.write(f"reasoning-stream: {error}\n")
        return 2
    except ReasoningStreamError as error:
        err.write(f"reasoning-stream: conform failed: {error}\n")
        return 1
    out.write(render_report(report.rows))
    if not args.live and not report.requests:
        err.write(
            f"reasoning-stream: the upstream at {report.upstream_url} received no request: is "
            f"the gateway at {args.base_url} running, and does its {args.provider} upstream "
            "point there? (--upstream-port fixes the port)\n"
        )
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump(report.to_json(), file, ensure_ascii=False, indent=2)
                file.write("\n")
        except OSError as error:
            err.write(f"reasoning-stream: cannot write {args.json}: {error.strerror}\n")
            return 2
    return 0 if report.passed else 1
