"""``reasoning-stream chat``: one live turn against a real endpoint, rendered or as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any

from ._events import Event, OpaqueState
from ._exceptions import CallbackError, ProviderError, ReasoningStreamError, UsageError
from ._pipe import Pipe, PipeResult
from ._render import ChannelRenderer, is_terminal

if TYPE_CHECKING:
    from .providers._spec import ApiRoot, ProviderSpec

__all__ = [  # noqa: F822 (PROVIDERS comes from the registry, lazily)
    "PROVIDERS",
    "CommandError",
    "build_pipe",
    "chat",
    "endpoint_hint",
    "event_to_json",
    "fitted",
    "parse_reasoning",
    "summary_line",
    "wrap_parts",
]

WIDTH = 80
"""The widest line the command writes itself (model output is never re-wrapped)."""


def __getattr__(name: str) -> Any:
    if name == "PROVIDERS":
        return _providers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _providers() -> dict[str, ProviderSpec]:
    """The ``--provider`` choices, from the provider registry: name -> spec."""
    from .providers._spec import specs

    return {spec.name: spec for spec in specs()}


# ------------------------------------------------------------------------- building a pipe


class CommandError(Exception):
    """A one-line error for the user, with the exit status to leave with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def parse_reasoning(value: str) -> bool | str | int:
    """``--reasoning``: ``off``/``on``, a level, or a token budget (an integer)."""
    word = value.strip().lower()
    if word in ("off", "false", "none", "no"):
        return False
    if word in ("on", "true", "yes"):
        return True
    if word in ("minimal", "low", "medium", "high", "xhigh", "max"):
        return word
    try:
        budget = int(word)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not off, on, minimal, low, medium, high, xhigh, max or a token budget"
        ) from None
    if budget < 0:
        raise argparse.ArgumentTypeError(f"a token budget cannot be negative ({budget})")
    return budget


def positive_int(value: str) -> int:
    """``--max-tokens``: a positive integer."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def build_pipe(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    reasoning: Any = None,
    max_tokens: int | None = None,
    on_callback_error: Callable[[Exception, object], object] | None = None,
    environ: Mapping[str, str] | None = None,
    stream: bool = True,
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
    if max_tokens is not None:
        if spec.max_tokens is None:
            raise CommandError(f"--max-tokens is not supported for {provider} yet")
        options.update(spec.max_tokens(max_tokens, base_url))
    if on_callback_error is not None:
        options["on_callback_error"] = on_callback_error
    if not stream:
        options["stream"] = False
    try:
        pipe: Pipe = cls(model, **options)
    except (TypeError, ValueError) as error:
        if isinstance(error, UsageError) and not isinstance(error, ValueError):
            raise  # a misuse of the pipe by this module, not a value the user typed
        message = str(error)  # a pipe's own message names its provider already; don't double it
        raise CommandError(message if provider in message else f"{provider}: {message}") from error
    return pipe


def effective_base_url(
    provider: str, base_url: str | None, environ: Mapping[str, str]
) -> str | None:
    """The API root a run talks to: ``--base-url``, else the variable, else the default."""
    root = _root(provider)
    if root is None:
        return base_url
    from_env = environ.get(root.env) if root.env else None
    return base_url or from_env or root.default


def endpoint_hint(provider: str, error: ProviderError, url: str) -> str | None:
    """What to check when a request to ``url`` failed with a 404 or never connected."""
    from .providers._errors import endpoint_hint as hint

    return hint(provider, error, url, _root(provider), model="--model")


def _root(provider: str) -> ApiRoot | None:
    """The API root facts of the ``--provider`` choice ``provider``, from its spec."""
    spec = _providers().get(provider)
    return None if spec is None else spec.api_root


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and what caused it, ``__cause__`` first, each once."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def fitted(message: object) -> str:
    """``reasoning-stream: message`` on lines of at most :data:`WIDTH` columns (a URL or
    another word longer than a line stays whole), continuation lines indented."""
    text = " ".join(str(message).split())
    return textwrap.fill(
        f"reasoning-stream: {text}",
        WIDTH,
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


# ------------------------------------------------------------------------------ rendering


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


def wrap_parts(
    first: str, parts: Iterable[str], *, width: int = WIDTH, indent: str = "  ", sep: str = " · "
) -> str:
    """``first`` then ``parts`` joined by ``sep``, broken between parts to fit ``width``."""
    lines: list[str] = []
    line = first
    for part in parts:
        candidate = line + sep + part
        if len(candidate) <= width:
            line = candidate
        else:
            lines.append(line)
            line = indent + part
    lines.append(line)
    return "\n".join(lines)


def summary_line(result: PipeResult, *, width: int = WIDTH) -> str:
    """Usage and timings of one result, wrapped to ``width`` columns."""
    usage, timings = result.usage, result.timings
    parts: list[str] = []
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(f"tokens in {usage.input_tokens} out {usage.output_tokens}")
    if usage.reasoning_tokens is not None:
        parts.append(f"reasoning {usage.reasoning_tokens}")
    if usage.cache_read_tokens:
        parts.append(f"cached {usage.cache_read_tokens}")
    cost = result.cost
    if cost is not None:
        parts.append(f"cost ${cost:.6f}")
    if timings.time_to_first_reasoning is not None:
        parts.append(f"first reasoning {timings.time_to_first_reasoning:.2f} s")
    if timings.time_to_first_text is not None:
        parts.append(f"first text {timings.time_to_first_text:.2f} s")
    parts.append(f"thinking {timings.reasoning_duration:.2f} s")
    parts.append(f"total {timings.total:.2f} s")
    return wrap_parts(f"{result.source or 'pipe'}: {result.status}", parts, width=width)


def status_notice(result: PipeResult) -> str | None:
    """A line for a run that did not end normally with an answer, or ``None``."""
    if result.status != "length":
        return None
    if result.reasoning_exhausted:
        return (
            "the model used its whole output limit reasoning and wrote no answer (status "
            "length): raise --max-tokens or lower --reasoning"
        )
    return "the answer was cut at the output limit (status length): raise --max-tokens"


# ------------------------------------------------------------------------------- the turn


class _ReaderLeft(Exception):
    """The reader of standard output went away; the run stops."""


def _stop_when_reader_leaves(error: Exception, chunk: object) -> None:
    """``on_callback_error`` for the CLI: a broken pipe stops the run, anything else is logged."""
    if isinstance(error, BrokenPipeError):
        raise _ReaderLeft("standard output was closed") from error
    logging.getLogger("reasoning_stream.callbacks").warning(
        "streaming callback raised; the stream goes on", exc_info=error
    )


_QUIET_LOGGERS = ("reasoning_stream", "reasoning_stream.callbacks", "reasoning_stream.pipe")
"""Where a record about the reader having left can be logged."""


class _QuietBrokenPipe(logging.Filter):
    """Drop log records about the reader having left: that is how ``| head`` works."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not any(isinstance(link, BrokenPipeError | _ReaderLeft) for link in _chain(error))


class _Notes:
    """Warnings and notes for the user: one line each, each said once."""

    def __init__(self, err: IO[str]) -> None:
        self._err = err
        self._said: set[str] = set()

    def say(self, message: str) -> None:
        text = " ".join(str(message).split())
        if text and text not in self._said:
            self._said.add(text)
            self._err.write(fitted(text) + "\n")

    def showwarning(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: IO[str] | None = None,
        line: str | None = None,
    ) -> None:
        self.say(str(message))


def reader_left(out: IO[str]) -> int:
    """Stop quietly after the reader of ``out`` went away (``| head``); the exit status."""
    if out is sys.stdout:
        # Later flushes (at exit) must not fail again and print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by `| head`


def chat(
    args: argparse.Namespace, *, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Run one live turn; one-line errors, no tracebacks."""
    out = out or sys.stdout
    err = err or sys.stderr
    notes = _Notes(err)
    quiet = _QuietBrokenPipe()
    # A logger's filter sees only the records logged on that logger itself, not its children's.
    loggers = [logging.getLogger(name) for name in _QUIET_LOGGERS]
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", UserWarning)
            warnings.showwarning = notes.showwarning
            return _chat(args, out, err, notes)
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


def _chat(args: argparse.Namespace, out: IO[str], err: IO[str], notes: _Notes) -> int:
    try:
        pipe = build_pipe(
            args.provider,
            args.model,
            base_url=args.base_url,
            reasoning=args.reasoning,
            max_tokens=getattr(args, "max_tokens", None),
            on_callback_error=_stop_when_reader_leaves,
            stream=not getattr(args, "no_stream", False),
        )
        _say_plan(pipe, notes)
    except (CommandError, UsageError) as error:
        err.write(fitted(error) + "\n")
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
        _close(renderer)
        captured = pipe.last_result
        report = "interrupted"
        if captured is not None:
            report += (
                f"; captured {len(captured.model_reasoning)} characters of reasoning and "
                f"{len(captured.text)} of answer ({captured.status})"
            )
        err.write("\n" + textwrap.fill(report, WIDTH, subsequent_indent="  ") + "\n")
        return 130
    except CallbackError as error:
        _close(renderer)
        if any(isinstance(link, BrokenPipeError) for link in _chain(error)):
            return reader_left(out)
        err.write("\n" + fitted(error) + "\n")
        return 1
    except ProviderError as error:
        # One line for the error (the library's own hint left out), one for what to check.
        message = str(error)
        if error.hint and message.endswith(f"; {error.hint}"):
            message = message.removesuffix(f"; {error.hint}")
        _stop_rendering(out, err, renderer, message)
        url = effective_base_url(args.provider, args.base_url, os.environ)
        hint = endpoint_hint(args.provider, error, url) if url else None
        if hint:
            err.write(fitted(hint) + "\n")
        return 1
    except ReasoningStreamError as error:
        _stop_rendering(out, err, renderer, error)
        return 2
    try:
        _close(renderer)
        _end_line(out, renderer)
    except BrokenPipeError:
        return reader_left(out)
    notice = status_notice(result)
    if notice:
        notes.say(notice)
    if renderer is not None and not args.raw:
        err.write("\n" + summary_line(result) + "\n")  # a blank line after the answer
    return 0


def _close(renderer: ChannelRenderer | None) -> None:
    if renderer is not None:
        renderer.close()


def _stop_rendering(
    out: IO[str], err: IO[str], renderer: ChannelRenderer | None, error: BaseException | str
) -> None:
    """A run failed: close the rendering, end its line, and say what failed (fitted)."""
    _close(renderer)
    _end_line(out, renderer)
    err.write(fitted(error) + "\n")


def _end_line(out: IO[str], renderer: ChannelRenderer | None) -> None:
    """Leave the cursor on a fresh line: after rendered output always, after raw bytes only on
    a terminal (into a pipe ``--raw`` is exactly the channel)."""
    if renderer is None or renderer.reader_gone:
        return
    if (not renderer.raw or is_terminal(out)) and not renderer.at_line_start:
        out.write("\n")
        out.flush()


def _say_plan(pipe: Pipe, notes: _Notes) -> None:
    """Say, before any request, what ``--reasoning`` becomes for this model and what is lost."""
    plan_for = getattr(pipe, "reasoning_plan", None)
    if not callable(plan_for) or getattr(pipe, "reasoning", None) is None:
        return
    try:
        plan = plan_for()
    except ValueError as error:
        raise CommandError(str(error)) from error
    for note in plan.warnings:
        notes.say(note)


def _json_lines(out: IO[str]) -> Callable[[Event], None]:
    gone = False

    def write(event: Event) -> None:
        nonlocal gone
        if gone:
            return
        try:
            out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
            out.flush()
        except BrokenPipeError:
            gone = True  # say it once; the run stops, later events are dropped
            raise

    return write
