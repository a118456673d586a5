"""What a provider needs back from earlier turns: :class:`PassbackPolicy`, resolved per request.

A pipe's policy is resolved once per request (:meth:`PassbackPolicy.for_pipe`: the pipe's own
``passback``, else its provider's documented needs from the registry) and that one object is
handed to everything that request does with the history: scoping the turns, the provider's
preflight and its repair. Provider packages import this module for the class; it names no
provider and imports nothing above the registry.

>>> PassbackPolicy(states="tool_loop").gives_states(in_tool_loop=True)
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, cast, get_args

from .._endpoints import endpoint_of
from .._exceptions import UsageError
from ..profiles import ModelProfile, lookup

if TYPE_CHECKING:
    from ..providers._spec import PassbackRules

__all__ = [
    "PassbackPolicy",
    "ReasoningPassback",
    "StatePassback",
    "profile_of",
    "readable_passback",
    "state_passback",
]

StatePassback: TypeAlias = Literal["never", "tool_loop", "always"]
"""Which assistant turns get their opaque state back: none, the current tool loop, all."""

ReasoningPassback: TypeAlias = Literal["never", "tool_calls", "tool_turns", "tool_loop", "always"]
"""Which assistant turns get their readable reasoning back: none, tool-call turns, every
assistant message of a turn that used tools (its final answer too), the turns of the current
tool loop (after the last user message), all."""

_STATES = get_args(StatePassback)
_REASONING = get_args(ReasoningPassback)


@dataclass(frozen=True, slots=True)
class PassbackPolicy:
    """What a provider needs back from earlier assistant turns on the next request.

    Args:
        states: ``"never"``; ``"tool_loop"``: the assistant turns after the last user message
            (signed thinking during tool use); ``"always"``: every assistant turn (reasoning
            items, thought signatures).
        reasoning: the readable reasoning (the message's ``"thinking"``) as
            ``HistoryTurn.reasoning``: ``"never"``; ``"tool_calls"``: on assistant turns
            that called tools (a ``reasoning_content`` some hosts require); ``"tool_turns"``:
            on every assistant message of a turn (a user message and what answers it) that
            called tools, its final answer too (DeepSeek); ``"tool_loop"``:
            on the assistant turns of the current tool loop; ``"always"``.
        kinds: the ``ReasoningState.kind`` values the provider takes back; ``None`` for all.

    Either way only state and reasoning that the same provider and endpoint made, for the
    same model or one the pipe's profile ``reads_from``, are given back. A pipe picks its
    policy by carrying a ``passback`` attribute; without one, :meth:`for_pipe` derives it
    from the model's profile and the pipe's provider.

    >>> PassbackPolicy(states="always", kinds={"signature"})
    PassbackPolicy(states='always', reasoning='never', kinds=frozenset({'signature'}))
    """

    states: StatePassback = "never"
    reasoning: ReasoningPassback = "never"
    kinds: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.states not in _STATES:
            raise UsageError(f"PassbackPolicy.states must be one of {_STATES}, got {self.states!r}")
        if self.reasoning not in _REASONING:
            raise UsageError(
                f"PassbackPolicy.reasoning must be one of {_REASONING}, got {self.reasoning!r}"
            )
        if self.kinds is not None and not isinstance(self.kinds, frozenset):
            kinds: Iterable[str] = self.kinds
            if isinstance(kinds, str):
                kinds = (kinds,)
            object.__setattr__(self, "kinds", frozenset(kinds))

    @classmethod
    def of(cls, rules: PassbackRules) -> PassbackPolicy:
        """``rules`` as a policy: itself when it is one, else a policy with its three values.

        >>> PassbackPolicy.of(PassbackPolicy(states="always")).states
        'always'
        """
        if isinstance(rules, PassbackPolicy):
            return rules
        # Checked by __post_init__: a value outside the Literal is a UsageError there.
        return cls(
            cast(StatePassback, rules.states),
            cast(ReasoningPassback, rules.reasoning),
            rules.kinds,
        )

    @classmethod
    def for_provider(
        cls,
        provider: str | None,
        model: str | None = None,
        base_url: str | None = None,
        profile: ModelProfile | None = None,
    ) -> PassbackPolicy:
        """The documented needs of ``model`` on a provider API, by the pipe's ``provider`` id.

        The model's profile (``profile``, else ``profiles.lookup`` at ``base_url``) says what
        goes back: its ``passback`` and ``passback_details``; the provider's spec says how its
        wire carries it. An unknown provider gets nothing back.

        >>> PassbackPolicy.for_provider("no-such-provider")
        PassbackPolicy(states='never', reasoning='never', kinds=None)
        """
        # The registry is asked at call time: importing the package loads no part of it.
        from ..providers._spec import spec

        found = spec(provider)
        if found is None:
            return cls()
        if profile is None:
            profile = lookup(found.id, model or "", base_url, warn=False)
        return cls.of(found.passback(profile))

    @classmethod
    def for_pipe(cls, pipe: object) -> PassbackPolicy:
        """``pipe.passback`` when it has one, else the default for its provider and model.

        This is the resolution: a request calls it once and hands the result on. A pipe's
        explicit ``send_reasoning_back=True`` or ``False`` (the chat-completions pipes)
        overrides the default for readable reasoning.
        """
        chosen = getattr(pipe, "passback", None)
        if isinstance(chosen, PassbackPolicy):
            return chosen
        if chosen is not None:
            raise UsageError(
                f"{type(pipe).__name__}.passback must be a PassbackPolicy, "
                f"got {type(chosen).__name__}"
            )
        model = getattr(pipe, "model_id", None) or getattr(pipe, "model", None)
        own = getattr(pipe, "profile", None)
        policy = cls.for_provider(
            getattr(pipe, "provider", None),
            model,
            endpoint_of(pipe),
            own if isinstance(own, ModelProfile) else None,
        )
        send = getattr(pipe, "send_reasoning_back", None)
        if isinstance(send, bool):
            policy = cls(policy.states, "always" if send else "never", policy.kinds)
        return policy

    def gives_reasoning(
        self, calls_tools: bool, in_tool_loop: bool, in_tool_turn: bool = False
    ) -> bool:
        """Whether an assistant turn's readable reasoning goes back under this policy.

        ``in_tool_turn``: the message belongs to a turn (a user message and what answers it)
        in which the model called tools.

        >>> PassbackPolicy(reasoning="tool_calls").gives_reasoning(True, False)
        True
        >>> PassbackPolicy(reasoning="tool_turns").gives_reasoning(False, False, True)
        True
        """
        return (
            self.reasoning == "always"
            or (self.reasoning == "tool_calls" and calls_tools)
            or (self.reasoning == "tool_turns" and (calls_tools or in_tool_turn))
            or (self.reasoning == "tool_loop" and in_tool_loop)
        )

    def gives_states(self, in_tool_loop: bool) -> bool:
        """Whether an assistant turn's opaque states go back under this policy.

        >>> PassbackPolicy(states="tool_loop").gives_states(False)
        False
        """
        return self.states == "always" or (self.states == "tool_loop" and in_tool_loop)


def profile_of(pipe: object) -> ModelProfile:
    """The model profile a pipe's passback, scope and preflight read.

    ``pipe.profile`` when the pipe has one (provider pipes do), else the catalogue's answer
    for its ``provider`` and ``model`` at its endpoint. No unknown-model warning comes from
    here: the effort plan issues it.
    """
    found = getattr(pipe, "profile", None)
    if isinstance(found, ModelProfile):
        return found
    model = getattr(pipe, "model_id", None) or getattr(pipe, "model", None)
    provider = getattr(pipe, "provider", None)
    return lookup(str(provider or ""), str(model or ""), endpoint_of(pipe), warn=False)


def readable_passback(profile: ModelProfile) -> ReasoningPassback:
    """Which turns' readable reasoning goes back on a wire that carries it as a message
    field (``reasoning_content``, ``thinking``), from the profile's ``passback``
    and ``passback_details``.

    A model no row describes gets none: the field is not part of the chat format, and an
    unknown server may refuse it. ``tool_turns`` details keep it to turns that used tools
    (with ``final_answer``, every assistant message of such a turn).

    >>> readable_passback(ModelProfile(passback="always", known=True))
    'always'
    >>> details = ("tool_turns", "final_answer")
    >>> readable_passback(ModelProfile(passback="always", passback_details=details, known=True))
    'tool_turns'
    """
    if not profile.known or profile.passback == "never":
        return "never"
    if profile.passback == "tool_loop":
        return "tool_loop"
    if "tool_turns" in profile.passback_details:
        return "tool_turns" if "final_answer" in profile.passback_details else "tool_calls"
    return "always"


def state_passback(profile: ModelProfile) -> PassbackPolicy:
    """The policy of a wire that takes back opaque state (signed thinking, reasoning items,
    thought signatures) for the turns the profile's ``passback`` names, and no readable text.

    >>> state_passback(ModelProfile(passback="tool_loop"))
    PassbackPolicy(states='tool_loop', reasoning='never', kinds=None)
    """
    return PassbackPolicy(states=profile.passback)
