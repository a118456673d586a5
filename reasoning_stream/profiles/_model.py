"""What a profile says about one model: the frozen record and the checks its fields pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal, TypeAlias

from .._exceptions import UsageError
from ._ids import candidates, matches

__all__ = [
    "BINDINGS",
    "CONTROLS",
    "DISPLAYS",
    "DISPLAY_CONTROLS",
    "FIELDS",
    "LEVELS",
    "PASSBACK",
    "THINKING",
    "THINKING_REJECTS",
    "Inline",
    "ModelProfile",
    "Thinking",
    "conservative",
    "with_fields",
]

Thinking: TypeAlias = Literal["never", "optional", "default_on", "always"]
Passback: TypeAlias = Literal["always", "tool_loop", "never"]
Display: TypeAlias = Literal["full", "summarized", "omitted"]

THINKING: tuple[str, ...] = ("never", "optional", "default_on", "always")
"""``thinking``: cannot reason; off unless asked; on unless turned off; cannot be turned off."""
LEVELS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The seven effort levels, least first; a profile's ``efforts`` is a subsequence of them."""
DISPLAYS: tuple[str, ...] = ("full", "summarized", "omitted")
"""How much of the reasoning a provider shows: all of it, a summary, or nothing."""
PASSBACK: tuple[str, ...] = ("always", "tool_loop", "never")
"""Which earlier turns' reasoning goes back: every turn's, the current tool loop's, none."""
CONTROLS: tuple[str, ...] = (
    "budget_tokens",
    "adaptive",
    "adaptive_only",
    "thinking_budget",
    "thinking_level",
    "reasoning_effort",
    "reasoning_config",
    "thinking_type",
    "chat_template_kwargs",
    "enable_thinking",
)
"""How a model's reasoning is asked for on the wire, when its provider has more than one way
(``None``: the provider's usual field). Claude: ``budget_tokens`` (token budgets),
``adaptive`` (adaptive thinking with an effort level; budgets still accepted),
``adaptive_only`` (adaptive thinking only). Gemini: ``thinking_budget``, ``thinking_level``.
Chat-style APIs: ``reasoning_effort``; ``thinking_type`` (``thinking: {type: enabled |
disabled}``, with ``reasoning_effort`` where levels are documented); ``chat_template_kwargs``
(vLLM and SGLang's ``chat_template_kwargs.enable_thinking``); ``enable_thinking`` (a top-level
switch, as on DashScope). Bedrock Nova: ``reasoning_config``. A provider reads the controls its
wire has and ignores the others."""
DISPLAY_CONTROLS: tuple[str, ...] = ("google_thinking_config",)
"""How a ``reasoning_display`` is asked for on the wire where the provider's usual way does not
say it (``None``: the provider's usual field, or none). ``google_thinking_config``: Gemini's own
``thinking_config.include_thoughts`` inside the request body's ``extra_body.google``, on Gemini's
OpenAI-compatible endpoint (https://ai.google.dev/gemini-api/docs/openai#thinking). A provider
reads the display controls its wire has and ignores the others."""
BINDINGS: tuple[str, ...] = ("account", "prefix")
"""Extra scopes of opaque state: the account that made it; the unchanged request prefix."""
PASSBACK_DETAILS: tuple[str, ...] = (
    "tool_turns",
    "final_answer",
    "empty_on_tool_turns",
    "signatures",
    "signed_calls",
    "content_chunks",
)
"""Documented details of passback: only turns that called tools carry reasoning back; the
final answer of a tool-using turn carries it too; a tool turn without reasoning takes an empty
field; the state is a signature riding on the parts (Claude's signed thinking blocks, Gemini's
thought signatures), and a tool-use turn of the current tool loop must come back with it while
thinking is on; a function call of the current turn is refused without its signature
(``signed_calls``, Gemini 3 and later); the reasoning goes back inside the message's content
as the thinking chunk it came in (``content_chunks``, Mistral), not in a field of its own."""

THINKING_REJECTS: tuple[str, ...] = (
    "forced_tool_choice",
    "temperature",
    "top_p",
    "budget_at_max_tokens",
)
"""Request settings a provider documents as rejected while the model thinks: a forced tool
choice (``"required"`` or a tool's name: only ``auto`` and ``none`` go with thinking); a
``temperature``; a ``top_p`` (outside ``thinking_top_p`` when that is set); a thinking budget
not below ``max_tokens``. ``conversation.preflight`` reads them (request problems)."""


@dataclass(frozen=True, slots=True)
class Inline:
    """Reasoning written inline in the answer text: the tag names a model uses, whether its
    chat template opens the first tag itself (the stream then starts inside reasoning and
    holds only the close tag), and whether the tagged reasoning comes only at the start of
    the answer (``at_start``: Gemini's thought summary on its OpenAI-compatible endpoint):
    tags are then read only in an answer that opens with one (leading whitespace aside), and
    any other answer is plain text, a quoted tag and all."""

    tags: tuple[str, ...] = ()
    opens_inside: bool = False
    at_start: bool = False


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What one model can do, as its provider documents it (see ``sources``).

    ``known`` is ``False`` for the conservative profile an unknown model gets; ``pattern`` is
    the catalogue or registered pattern that matched (``None`` when none did).
    """

    thinking: Thinking = "optional"
    efforts: tuple[str, ...] = ("low", "medium", "high")
    displays: tuple[str, ...] = ()
    display_default: str | None = None
    passback: Passback = "tool_loop"
    passback_details: tuple[str, ...] = ()
    reads_from: tuple[str, ...] = ()
    binding: tuple[str, ...] = ()
    inline: Inline = field(default_factory=Inline)
    control: str | None = None
    display_control: str | None = None
    """How ``reasoning_display`` is sent where the provider's usual way does not say it
    (``DISPLAY_CONTROLS``)."""
    budget_range: tuple[int, int] | None = None
    """The documented thinking-budget range in tokens, ``(least, most)``, where it is bounded."""
    thinking_rejects: tuple[str, ...] = ()
    """What the provider rejects in a request while the model thinks (``THINKING_REJECTS``)."""
    thinking_top_p: tuple[float, float] | None = None
    """The ``top_p`` range a thinking request may carry when ``top_p`` is in
    ``thinking_rejects`` (``None``: no ``top_p`` at all)."""
    rejects_sources: tuple[str, ...] = ()
    """The doc pages that document ``thinking_rejects`` (a request problem cites them)."""
    sources: tuple[tuple[str, str], ...] = ()
    note: str = ""
    pattern: str | None = None
    known: bool = False

    @property
    def thinks_unasked(self) -> bool:
        """Whether the model reasons when the request does not ask it to: its ``thinking`` is
        ``default_on`` or ``always`` (read by ``prompting.native_thinking`` and the Responses
        preflight).

        >>> ModelProfile(thinking="default_on").thinks_unasked
        True
        """
        return self.thinking in ("default_on", "always")

    def reads(self, model: str, provider: str = "") -> bool:
        """Whether this model accepts opaque state ``model`` made, beyond its own: a
        ``reads_from`` pattern matches it (compared as the catalogue compares ids, Bedrock
        and gateway wrappers taken off for ``provider``).

        >>> ModelProfile(reads_from=("claude-opus-5*",)).reads("claude-opus-5.5")
        True
        """
        if not self.reads_from:
            return False
        forms = candidates(provider, model)
        return any(matches(pattern, forms) for pattern in self.reads_from)

    def nearest_effort(self, level: str) -> str | None:
        """The documented level closest to ``level`` on the seven-level scale (``level``
        itself when documented); on a tie the lower one wins. ``None`` when the model
        documents no levels.

        >>> ModelProfile(efforts=("low", "high")).nearest_effort("medium")
        'low'
        """
        if level not in LEVELS:
            raise UsageError(f"effort {level!r} is none of {', '.join(LEVELS)}")
        if not self.efforts:
            return None
        wanted = LEVELS.index(level)
        return min(self.efforts, key=lambda e: (abs(LEVELS.index(e) - wanted), LEVELS.index(e)))

    def nearest_display(self, display: str) -> str | None:
        """The documented display closest to ``display`` (``full`` > ``summarized`` >
        ``omitted``); on a tie the one that shows more wins. ``None`` when the model documents
        no displays.

        >>> ModelProfile(displays=("summarized", "omitted")).nearest_display("full")
        'summarized'
        """
        if display not in DISPLAYS:
            raise UsageError(f"reasoning_display {display!r} is none of {', '.join(DISPLAYS)}")
        if not self.displays:
            return None
        wanted = DISPLAYS.index(display)
        return min(
            self.displays, key=lambda d: (abs(DISPLAYS.index(d) - wanted), DISPLAYS.index(d))
        )


FIELDS: tuple[str, ...] = (
    "thinking",
    "efforts",
    "displays",
    "display_default",
    "passback",
    "passback_details",
    "reads_from",
    "binding",
    "inline",
    "control",
    "display_control",
    "budget_range",
    "thinking_rejects",
    "thinking_top_p",
    "rejects_sources",
    "sources",
    "note",
)
"""The fields a catalogue row, a profiles file or ``profiles.register`` may set."""


def conservative() -> ModelProfile:
    """The profile of a model no row describes: it may reason, at the three common levels,
    and its reasoning goes back within the current tool loop only."""
    return ModelProfile()


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise UsageError(f"{where}: {name} takes a list of strings, not {value!r}")
    for item in value:
        if not isinstance(item, str):
            raise UsageError(f"{where}: {name} takes a list of strings; {item!r} is not one")
    return tuple(value)


def _choices(value: Any, name: str, allowed: tuple[str, ...], where: str) -> tuple[str, ...]:
    items = _strings(value, name, where)
    for item in items:
        if item not in allowed:
            raise UsageError(f"{where}: {name} has {item!r}; choose from {', '.join(allowed)}")
    if len(set(items)) != len(items):
        raise UsageError(f"{where}: {name} lists a value twice: {list(items)!r}")
    return items


def _one(value: Any, name: str, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise UsageError(f"{where}: {name}={value!r}; choose one of {', '.join(allowed)}")
    return str(value)


def _inline(value: Any, where: str) -> Inline:
    if isinstance(value, Inline):
        return value
    if not isinstance(value, Mapping):
        raise UsageError(
            f"{where}: inline takes an Inline or a table "
            "{tags = [...], opens_inside = bool, at_start = bool}"
        )
    unknown = set(value) - {"tags", "opens_inside", "at_start"}
    if unknown:
        raise UsageError(
            f"{where}: inline has no {sorted(unknown)}; it takes tags, opens_inside, at_start"
        )
    switches = []
    for name in ("opens_inside", "at_start"):
        switch = value.get(name, False)
        if not isinstance(switch, bool):
            raise UsageError(f"{where}: inline.{name} takes true or false, not {switch!r}")
        switches.append(switch)
    return Inline(_strings(value.get("tags", ()), "inline.tags", where), *switches)


def _sources(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise UsageError(f"{where}: sources takes a list of (doc url, date checked) pairs")
    pairs: list[tuple[str, str]] = []
    for item in value:
        if isinstance(item, Mapping):
            pair = (item.get("url"), item.get("checked"))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            pair = (item[0], item[1])
        else:
            raise UsageError(f"{where}: a source is (doc url, date checked), not {item!r}")
        url, checked = pair
        if isinstance(checked, date):
            checked = checked.isoformat()
        if not isinstance(url, str) or not url:
            raise UsageError(f"{where}: a source needs its doc url (or 'issue N'), got {url!r}")
        if not isinstance(checked, str) or len(checked) != 10 or checked[4] != "-":
            raise UsageError(
                f"{where}: source {url} needs the date it was checked as YYYY-MM-DD, "
                f"got {checked!r}"
            )
        pairs.append((url, checked))
    return tuple(pairs)


def _budget_range(value: Any, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 < value[0] <= value[1]
    ):
        return (value[0], value[1])
    raise UsageError(f"{where}: budget_range takes [least, most] token counts, not {value!r}")


def _top_p_range(value: Any, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] <= value[1] <= 1
    ):
        return (float(value[0]), float(value[1]))
    raise UsageError(f"{where}: thinking_top_p takes [least, most] between 0 and 1, not {value!r}")


def with_fields(base: ModelProfile, fields: Mapping[str, Any], where: str) -> ModelProfile:
    """``base`` with ``fields`` checked and applied; a bad name or value raises a
    :class:`UsageError` that says what ``where`` must fix."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise UsageError(f"{where}: no profile field {unknown}; the fields are {', '.join(FIELDS)}")
    changes: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "thinking":
            changes[name] = _one(value, name, THINKING, where)
        elif name == "passback":
            changes[name] = _one(value, name, PASSBACK, where)
        elif name == "efforts":
            efforts = _choices(value, name, LEVELS, where)
            if list(efforts) != sorted(efforts, key=LEVELS.index):
                raise UsageError(f"{where}: efforts go least first, as in {', '.join(LEVELS)}")
            changes[name] = efforts
        elif name == "displays":
            changes[name] = _choices(value, name, DISPLAYS, where)
        elif name == "display_default":
            changes[name] = None if value is None else _one(value, name, DISPLAYS, where)
        elif name == "passback_details":
            changes[name] = _choices(value, name, PASSBACK_DETAILS, where)
        elif name == "binding":
            changes[name] = _choices(value, name, BINDINGS, where)
        elif name == "reads_from":
            changes[name] = tuple(p.lower() for p in _strings(value, name, where))
        elif name == "inline":
            changes[name] = _inline(value, where)
        elif name == "sources":
            changes[name] = _sources(value, where)
        elif name == "control":
            changes[name] = None if value is None else _one(value, name, CONTROLS, where)
        elif name == "display_control":
            changes[name] = None if value is None else _one(value, name, DISPLAY_CONTROLS, where)
        elif name == "budget_range":
            changes[name] = _budget_range(value, where)
        elif name == "thinking_rejects":
            changes[name] = _choices(value, name, THINKING_REJECTS, where)
        elif name == "thinking_top_p":
            changes[name] = _top_p_range(value, where)
        elif name == "rejects_sources":
            changes[name] = _strings(value, name, where)
        elif not isinstance(value, str):
            raise UsageError(f"{where}: note takes a string, not {value!r}")
        else:
            changes[name] = value
    profile = replace(base, **changes)
    if profile.thinking == "never" and profile.efforts:
        profile = replace(profile, efforts=()) if "efforts" not in fields else profile
    if profile.display_default is not None and profile.display_default not in profile.displays:
        raise UsageError(
            f"{where}: display_default {profile.display_default!r} is not among displays "
            f"{list(profile.displays)!r}"
        )
    return profile
