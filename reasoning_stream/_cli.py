"""``reasoning-stream chat``: one live turn against a real endpoint, rendered or as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ._events import Event, OpaqueState
from ._exceptions import ProviderError, ReasoningStreamError, UsageError
from ._pipe import Pipe, PipeResult
from ._render import ChannelRenderer

if TYPE_CHECKING:
    from .providers._spec import ProviderSpec

__all__ = [  # noqa: F822 (PROVIDERS comes from the registry, lazily)
    "PROVIDERS",
    "build_pipe",
    "chat",
    "event_to_json",
    "summary_line",
]


def __getattr__(name: str) -> Any:
    if name == "PROVIDERS":
        return _providers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _providers() -> dict[str, ProviderSpec]:
    """The ``--provider`` choices, from the provider registry: name -> spec."""
    from .providers._spec import specs

    return {spec.name: spec for spec in specs()}


class CommandError(Exception):
    """A one-line error for the user, with the exit status to leave with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def build_pipe(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    reasoning: Any = None,
    environ: dict[str, str] | None = None,
) -> Pipe:
    """The pipe for ``--provider``, configured from arguments and the usual variables."""
    env = dict(os.environ if environ is None else environ)
    spec = _providers()[provider]
    base_url = base_url or (env.get(spec.base_url_env) if spec.base_url_env else None)
    api_key = next((env[name] for name in spec.key_env if env.get(name)), None)
    if spec.key_needed and api_key is None:
        if base_url is None:
            names = " or ".join(spec.key_env)
            raise CommandError(f"set {names} to talk to {provider} (or pass --base-url)")
        api_key = "not-needed"  # a local OpenAI-compatible server takes any key
    cls = spec.pipe_class()
    options: dict[str, Any] = {}
    if base_url:
        options["base_url"] = base_url
    if api_key and spec.key_needed:
        options["api_key"] = api_key
    if reasoning is not None:
        options["reasoning"] = reasoning
    try:
        pipe: Pipe = cls(model, **options)
    except TypeError as error:
        raise CommandError(f"{provider}: {error}") from error
    return pipe


def event_to_json(event: Event) -> dict[str, Any]:
    """One typed event as a JSON-safe dict (``kind`` first); opaque payloads never appear."""
    if isinstance(event, OpaqueState):
        state = event.state
        return {"kind": event.kind, "provider": state.provider, "state_kind": state.kind}
    data: dict[str, Any] = {"kind": event.kind}
    for item in dataclasses.fields(event):
        value = getattr(event, item.name)
        is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
        data[item.name] = dataclasses.asdict(value) if is_instance else value
    return data


def summary_line(result: PipeResult) -> str:
    """Usage and timings of one result, on one line."""
    usage, timings = result.usage, result.timings
    parts = [f"{result.source or 'pipe'}: {result.status}"]
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(f"tokens in {usage.input_tokens} out {usage.output_tokens}")
    if usage.reasoning_tokens is not None:
        parts.append(f"reasoning {usage.reasoning_tokens}")
    if timings.time_to_first_reasoning is not None:
        parts.append(f"first reasoning {timings.time_to_first_reasoning:.2f} s")
    if timings.time_to_first_text is not None:
        parts.append(f"first text {timings.time_to_first_text:.2f} s")
    parts.append(f"thinking {timings.reasoning_duration:.2f} s")
    parts.append(f"total {timings.total:.2f} s")
    return " · ".join(parts)


def chat(
    args: argparse.Namespace, *, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Run one live turn; one-line errors, no tracebacks."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        pipe = build_pipe(
            args.provider, args.model, base_url=args.base_url, reasoning=args.reasoning
        )
    except (CommandError, UsageError) as error:
        err.write(f"reasoning-stream: {error}\n")
        return error.status if isinstance(error, CommandError) else 2
    if args.no_stream_reasoning:
        pipe.set_stream_model_reasoning(False)
    renderer: ChannelRenderer | None = None
    if args.json:
        pipe.set_event_callback(_json_lines(out))
    else:
        renderer = ChannelRenderer(out, raw=args.raw)
        pipe.set_streaming_callback(renderer)
    try:
        result = pipe.run(args.prompt)
    except KeyboardInterrupt:
        if renderer is not None:
            renderer.close()
        captured = pipe.last_result
        err.write("\ninterrupted")
        if captured is not None:
            err.write(f"; captured {len(captured.model_reasoning)} characters of reasoning")
            err.write(f" and {len(captured.text)} of answer ({captured.status})")
        err.write("\n")
        return 130
    except ProviderError as error:
        if renderer is not None:
            renderer.close()
        err.write(f"\nreasoning-stream: {error}\n")
        return 1
    except ReasoningStreamError as error:
        err.write(f"\nreasoning-stream: {error}\n")
        return 2
    if renderer is not None:
        renderer.close()
        if not args.raw:
            out.write("\n")
            err.write(summary_line(result) + "\n")
    return 0


def _json_lines(out: IO[str]) -> Callable[[Event], None]:
    def write(event: Event) -> None:
        out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
        out.flush()

    return write
