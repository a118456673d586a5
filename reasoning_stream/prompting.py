"""Prompt strategies: visible reasoning from models that have no native thinking.

A strategy asks the model to reason in the channel's own tags before it answers, so the drafts
become reasoning segments live, through the same scanner that reads ``<think>`` tags anywhere
else: callbacks see ``OPEN_TAG``, the drafts, ``CLOSE_TAG``, then the answer, and the result
separates ``model_reasoning`` from ``text``. It works on any pipe, without touching it:

>>> from reasoning_stream import TextDelta
>>> from reasoning_stream.prompting import ChainOfDraft
>>> from reasoning_stream.testing import ScriptedPipe
>>> model = ScriptedPipe([TextDelta("<think>20 - 12 = 8\\n8 / 2 = 4</think>4")])
>>> result = ChainOfDraft(max_words=5).apply(model).run("Half of what is left of 20 after 12?")
>>> result.model_reasoning, result.text, result.steps_over_limit
('20 - 12 = 8\\n8 / 2 = 4', '4', ())

- :class:`ChainOfDraft` (Xu et al., 2025, "Chain of Draft: Thinking Faster by Writing Less"):
  a minimal draft per step, at most ``max_words`` words. Steps over the limit are not hidden:
  they are listed in ``result.steps_over_limit``.
- :class:`ChainOfThought`: the classic step-by-step explanation, for comparison.

``strategy.apply(pipe)`` returns a :class:`StrategyPipe`: a pipe in its own right (callbacks,
``run``/``arun``, pipelines, ``Conversation.run``, stores), which adds the instruction to the
system message of each request and reads the tags out of the answer text as it streams. Pipes
that read inline tags themselves (``OpenAIChatPipe``, ``OllamaPipe`` with their default
``inline_tags``) already split them; for the others (Anthropic, Gemini, ...) the strategy pipe
does. Its results are :class:`StrategyResult` objects: a ``PipeResult`` plus the drafted steps.

A model that thinks natively (a pipe asked for ``reasoning=``, a model that starts inside
reasoning, or one whose profile row says it thinks unasked: ``thinking`` ``default_on`` or
``always``, such as DeepSeek-R1, QwQ, o3, gpt-5, Gemini 2.5 Flash or Qwen3) gets a
:class:`~reasoning_stream.ReasoningWarning` and nothing changes: the prompt goes as it is.
``force=True`` applies the strategy anyway; ``profiles.register`` decides for a model the
catalogue does not know.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ._callbacks import CallbackErrorHandler
from ._effort import ReasoningWarning
from ._events import Event, TextDelta
from ._exceptions import ProviderError, UsageError
from ._pipe import Pipe, PipeResult, Prompt
from ._sources import close_source
from ._stream import ReasoningStream
from .conversation import Conversation
from .profiles import ModelProfile, lookup

__all__ = [
    "ChainOfDraft",
    "ChainOfThought",
    "PromptStrategy",
    "StrategyPipe",
    "StrategyResult",
    "draft_steps",
    "native_thinking",
]

_OPEN, _CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class StrategyResult(PipeResult):
    """A :class:`~reasoning_stream.PipeResult` from a :class:`StrategyPipe`, with its steps.

    ``strategy`` names the strategy that shaped the prompt (``None`` when it was not applied
    because the model thinks natively). ``steps`` are the reasoning's steps (see
    :func:`draft_steps`); ``max_words`` the strategy's limit per step (``None`` for none);
    ``steps_over_limit`` the steps that exceeded it, in order.
    """

    strategy: str | None = None
    steps: tuple[str, ...] = ()
    max_words: int | None = None
    steps_over_limit: tuple[str, ...] = ()


_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d+[.):]|step\s+\d+[.):]?)\s+", re.IGNORECASE)


def draft_steps(reasoning: str) -> tuple[str, ...]:
    """The steps of a reasoning text: its non-empty lines, list markers removed.

    >>> draft_steps("1. 20 - 12 = 8\\n\\n- 8 / 2 = 4\\n")
    ('20 - 12 = 8', '8 / 2 = 4')
    """
    steps = []
    for line in reasoning.splitlines():
        step = _LIST_MARKER.sub("", line, count=1).strip()
        if step:
            steps.append(step)
    return tuple(steps)


def _words(step: str) -> int:
    return len(step.split())


# ---------------------------------------------------------------------- native thinking


def native_thinking(pipe: object) -> str | None:
    """Why ``pipe``'s model thinks natively, or ``None`` when nothing says it does.

    Looked at, in order: the pipe's ``reasoning`` knob (anything but ``None``/``False``), its
    ``start_in_reasoning`` flag, then the model's profile (:mod:`reasoning_stream.profiles`:
    the pipe's ``profile``, else ``profiles.lookup(pipe.provider, pipe.model)``): a model whose
    ``thinking`` is ``default_on`` or ``always`` thinks unasked, and so does one whose chat
    template opens inside reasoning. The model id itself is never guessed from: a model no row
    describes does not think natively here (``profiles.register`` describes it).

    >>> from types import SimpleNamespace
    >>> native_thinking(SimpleNamespace(provider="openai-chat", model="gemma-3-270m-it")) is None
    True
    >>> native_thinking(SimpleNamespace(provider="openai-chat", model="o3-mini"))
    "model 'o3-mini' thinks natively: its profile (o3*) says thinking='always'"
    """
    reasoning = getattr(pipe, "reasoning", None)
    if reasoning is not None and reasoning is not False:
        return f"the pipe asks for native reasoning (reasoning={reasoning!r})"
    if getattr(pipe, "start_in_reasoning", False) is True:
        return "the model starts inside reasoning (start_in_reasoning=True)"
    model = getattr(pipe, "model", None)
    profile = _profile_of(pipe, model)
    if profile is None or not profile.known:
        return None
    if profile.thinks_unasked:
        return (
            f"model {model!r} thinks natively: its profile ({profile.pattern}) says "
            f"thinking={profile.thinking!r}"
        )
    if profile.inline.opens_inside:
        return (
            f"model {model!r} thinks natively: its profile ({profile.pattern}) says its chat "
            "template opens inside reasoning"
        )
    return None


def _profile_of(pipe: object, model: object) -> ModelProfile | None:
    """The pipe's profile (provider pipes have one), else the catalogue's answer for its
    provider and model; ``None`` when the pipe names neither."""
    profile = getattr(pipe, "profile", None)
    if isinstance(profile, ModelProfile):
        return profile
    provider = getattr(pipe, "provider", None)
    if not (isinstance(provider, str) and provider and isinstance(model, str) and model):
        return None
    return lookup(provider, model, warn=False)


# ---------------------------------------------------------------------------- strategies


class PromptStrategy:
    """A way of asking a model to reason in the channel's tags before it answers.

    Subclasses give :attr:`name`, :meth:`instruction` and, when they limit a step's length,
    :attr:`max_words`.
    """

    name: ClassVar[str] = "strategy"
    max_words: int | None = None
    force: bool = False

    def instruction(self) -> str:
        """The system instruction added to each request."""
        raise NotImplementedError

    def apply(self, pipe: Pipe) -> StrategyPipe:
        """``pipe`` with this strategy: a new pipe; ``pipe`` itself is not changed."""
        return StrategyPipe(pipe, self)


@dataclass(frozen=True)
class ChainOfDraft(PromptStrategy):
    """Think in minimal drafts: at most ``max_words`` words per step, then the answer.

    Args:
        max_words: the limit per step asked of the model (the paper uses 5). Steps that
            exceed it are listed in ``StrategyResult.steps_over_limit``.
        force: apply even to a model that thinks natively (normally: a warning, no change).
    """

    max_words: int | None = 5
    force: bool = False
    name: ClassVar[str] = "chain-of-draft"

    def __post_init__(self) -> None:
        if not isinstance(self.max_words, int) or isinstance(self.max_words, bool):
            raise UsageError(f"max_words is a positive int, got {self.max_words!r}")
        if self.max_words < 1:
            raise UsageError(f"max_words must be 1 or more, got {self.max_words}")

    def instruction(self) -> str:
        return (
            "Think step by step, but write only a minimal draft of each step: "
            f"{self.max_words} words at most per step, one step per line, equations and "
            f"numbers instead of sentences. Put all the drafts between {_OPEN} and {_CLOSE}. "
            f"After {_CLOSE}, write only the final answer."
        )


@dataclass(frozen=True)
class ChainOfThought(PromptStrategy):
    """Think step by step, explaining each step, then the answer (the comparison baseline).

    Args:
        force: apply even to a model that thinks natively (normally: a warning, no change).
    """

    force: bool = False
    name: ClassVar[str] = "chain-of-thought"

    def instruction(self) -> str:
        return (
            "Think step by step and explain your reasoning, one step per line, between "
            f"{_OPEN} and {_CLOSE}. After {_CLOSE}, write only the final answer."
        )


# ------------------------------------------------------------------------------- the pipe


class StrategyPipe(Pipe):
    """A pipe run with a prompt strategy: ``strategy.apply(pipe)`` builds it.

    Each request gets the strategy's instruction in its system message (merged into an
    existing string system message, else a new first message); a
    :class:`~reasoning_stream.Conversation` keeps its provider state. Answer text is read
    through the tag scanner, so drafts in ``<think>`` tags become reasoning segments live
    whichever provider the wrapped pipe speaks. Results are :class:`StrategyResult`.

    The strategy pipe takes the wrapped pipe's name (events carry it as ``source``), its
    provider, model and endpoint (passback and stored turns are scoped to them), and its
    escaping, gate and error-handler settings, unless ``name=``, ``escape_markers=``,
    ``on_callback_error=`` or ``stream_model_reasoning=`` say otherwise (the keywords every
    pipe takes); set callbacks and retries on the strategy pipe. Other attributes
    (``reasoning_plan()``, ``close()``, ...) are the wrapped pipe's.
    """

    def __init__(
        self,
        pipe: Pipe,
        strategy: PromptStrategy,
        *,
        name: str | None = None,
        escape_markers: bool | None = None,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool | None = None,
    ) -> None:
        if not isinstance(pipe, Pipe):
            raise UsageError(f"a strategy applies to a Pipe, got {type(pipe).__name__}")
        if not isinstance(strategy, PromptStrategy):
            raise UsageError(f"strategy must be a PromptStrategy, got {type(strategy).__name__}")
        super().__init__(
            name=name if name is not None else pipe.name,
            escape_markers=pipe.escape_markers if escape_markers is None else escape_markers,
            on_callback_error=on_callback_error or pipe.on_callback_error,
            stream_model_reasoning=(
                pipe.stream_model_reasoning
                if stream_model_reasoning is None
                else stream_model_reasoning
            ),
        )
        self.pipe = pipe
        self.strategy = strategy
        self.provider = pipe.provider
        self.model = pipe.model
        self.endpoint = pipe.endpoint
        self._warned = False

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the strategy pipe lacks: they are the wrapped pipe's.
        if name == "pipe" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.pipe, name)

    def __repr__(self) -> str:
        return f"StrategyPipe({self.pipe!r}, {self.strategy!r})"

    # ------------------------------------------------------------------ applying

    @property
    def applied(self) -> bool:
        """Whether the strategy shapes the prompt (not for a natively thinking model)."""
        return self.strategy.force or native_thinking(self.pipe) is None

    def _shapes_this_run(self) -> bool:
        """:attr:`applied`, warning once per strategy pipe when it is not."""
        if self.applied:
            return True
        if not self._warned:
            self._warned = True
            warnings.warn(
                ReasoningWarning(
                    f"{self.strategy.name} not applied to {self.pipe.name}: "
                    f"{native_thinking(self.pipe)}; its own thinking streams as it is "
                    "(force=True applies the strategy anyway)"
                ),
                stacklevel=2,
            )
        return False

    def prompt_for(self, prompt: Prompt | Conversation) -> Prompt | Conversation:
        """``prompt`` with the strategy's instruction in its system message."""
        instruction = self.strategy.instruction()
        if isinstance(prompt, Conversation):
            data = prompt.to_json()
            messages, records = data["messages"], data["records"]
            if messages and _is_text_system(messages[0]):
                messages[0] = {**messages[0], "content": _joined(messages[0], instruction)}
            else:
                messages.insert(0, {"role": "system", "content": instruction})
                records.insert(0, None)
            return Conversation.from_json(data)
        if isinstance(prompt, str):
            return [
                {"role": "system", "content": instruction},
                {"role": "user", "content": prompt},
            ]
        if not isinstance(prompt, Sequence):
            raise UsageError(
                f"a prompt is a str or a list of message dicts, got {type(prompt).__name__}"
            )
        history: list[dict[str, Any]] = []
        for message in prompt:
            if not isinstance(message, Mapping):
                raise UsageError(f"a message is a dict, got {type(message).__name__}")
            history.append(dict(message))
        if history and _is_text_system(history[0]):
            history[0]["content"] = _joined(history[0], instruction)
        else:
            history.insert(0, {"role": "system", "content": instruction})
        return history

    # ------------------------------------------------------------------ events

    def iter_events(self, prompt: Prompt) -> Iterator[Event]:
        """The wrapped pipe's events for the shaped prompt, tags in text read as reasoning."""
        # What the wrapped pipe records beside its events (the response id) is this run's.
        self.pipe._forward_records(self)
        try:
            if not self._shapes_this_run():
                yield from self.pipe.iter_events(prompt)
                return
            scanner = ReasoningStream.scanner()
            source = self.pipe.iter_events(self.prompt_for(prompt))
            try:
                for event in source:
                    if isinstance(event, TextDelta):
                        yield from scanner.feed(event.text)
                    else:
                        yield event
            except Exception:
                yield from scanner.flush()  # what the scanner held is captured, not lost
                raise
            finally:
                close_source(source)
            yield from scanner.flush()
        finally:
            self.pipe._forward_records(None)

    async def aiter_events(self, prompt: Prompt) -> AsyncIterator[Event]:
        """Async twin of :meth:`iter_events`."""
        self.pipe._forward_records(self)
        try:
            if not self._shapes_this_run():
                async for event in self.pipe.aiter_events(prompt):
                    yield event
                return
            scanner = ReasoningStream.scanner()
            source = self.pipe.aiter_events(self.prompt_for(prompt))
            try:
                async for event in source:
                    if isinstance(event, TextDelta):
                        for scanned in scanner.feed(event.text):
                            yield scanned
                    else:
                        yield event
            except Exception:
                for scanned in scanner.flush():
                    yield scanned
                raise
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()
            for scanned in scanner.flush():
                yield scanned
        finally:
            self.pipe._forward_records(None)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """The wrapped pipe's mapping of a provider failure."""
        return self.pipe.wrap_error(error)

    def redact_secrets(self, error: BaseException) -> None:
        """The wrapped pipe's credentials are blanked out of ``error``."""
        self.pipe.redact_secrets(error)

    # ------------------------------------------------------------------ drivers

    def run(self, prompt: Prompt) -> StrategyResult:
        """Run the wrapped pipe with the strategy; the result lists the drafted steps."""
        result = super().run(prompt)
        assert isinstance(result, StrategyResult)
        return result

    async def arun(self, prompt: Prompt) -> StrategyResult:
        """:meth:`run` on the running event loop."""
        result = await super().arun(prompt)
        assert isinstance(result, StrategyResult)
        return result

    def _finish_result(self, result: PipeResult) -> StrategyResult:
        # Pipe's seam for the result every attempt records (run, arun, a Pipeline's turn,
        # every exit path): a StrategyResult, on the pipe and on the error alike.
        if isinstance(result, StrategyResult):
            return result
        applied = self.applied
        steps = draft_steps(result.model_reasoning) if applied else ()
        limit = self.strategy.max_words if applied else None
        over = tuple(step for step in steps if limit is not None and _words(step) > limit)
        return StrategyResult(
            **{item.name: getattr(result, item.name) for item in fields(PipeResult)},
            strategy=self.strategy.name if applied else None,
            steps=steps,
            max_words=limit,
            steps_over_limit=over,
        )


def _is_text_system(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "system" and isinstance(message.get("content"), str)


def _joined(message: Mapping[str, Any], instruction: str) -> str:
    content = str(message.get("content") or "")
    return f"{content}\n\n{instruction}" if content else instruction
