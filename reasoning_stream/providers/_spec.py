"""What core asks of a provider: one :class:`ProviderSpec` per provider API, and the registry.

The one provider list. Core (the conversation's passback rules, the effort knob, the CLI and
the demo), ``reasoning_stream.providers``' exports and the tests name no provider: they ask
this registry for the spec of a pipe's ``provider`` id or of a ``--provider`` choice. Each
provider package's ``__init__.py`` defines its ``SPEC``; the registry below lists the
packages, one line per provider, in the order tables show them. Importing this module
imports no provider package; :func:`spec` imports one when asked.

The registry sits below core and the provider packages: it imports the data types it names
(``_turns``, ``_effort_planner``) and nothing above them; what it holds from above (a
passback policy, a pipe) it names through :class:`PassbackRules` and ``Any``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .._effort_planner import EffortPlanner
from ..profiles import ModelProfile

if TYPE_CHECKING:
    from .._turns import HistoryTurn, PassbackProblem, PreflightTurn

__all__ = [
    "ApiRoot",
    "Demo",
    "MaxTokens",
    "PassbackRules",
    "Preflight",
    "ProviderSpec",
    "Repair",
    "ThinkingRequest",
    "by_name",
    "logger_for",
    "pipe_class",
    "pipe_names",
    "provider_ids",
    "spec",
    "specs",
]


class _Entry(NamedTuple):
    package: str
    """The package under ``reasoning_stream.providers`` that defines the provider's ``SPEC``."""
    pipe: str
    """The pipe class that package defines and ``reasoning_stream.providers`` exports."""


# provider id -> its package and pipe class: one line per provider, in table order.
_REGISTRY: dict[str, _Entry] = {
    "openai-chat": _Entry("openai_chat", "OpenAIChatPipe"),
    "openai-responses": _Entry("openai_responses", "OpenAIResponsesPipe"),
    "openrouter": _Entry("openrouter", "OpenRouterPipe"),
    "anthropic": _Entry("anthropic", "AnthropicPipe"),
    "bedrock": _Entry("bedrock", "BedrockPipe"),
    "gemini": _Entry("gemini", "GeminiPipe"),
    "ollama": _Entry("ollama", "OllamaPipe"),
}


class PassbackRules(Protocol):
    """What a provider's ``passback`` returns: ``conversation.PassbackPolicy`` is the one kind.

    The policy class lives above the registry (it resolves a pipe's policy through it), so
    the registry names it by what it reads.
    """

    @property
    def states(self) -> str:
        """Which assistant turns get their opaque state back."""
        ...

    @property
    def reasoning(self) -> str:
        """Which assistant turns get their readable reasoning back."""
        ...

    @property
    def kinds(self) -> frozenset[str] | None:
        """The state kinds the provider takes back; ``None`` for all."""
        ...


Preflight = Callable[[Any, "Sequence[PreflightTurn]", PassbackRules], "list[PassbackProblem]"]
"""``(pipe, turns, policy) -> problems``: what the provider is documented to reject."""

Repair = Callable[
    [Any, "Sequence[PreflightTurn]", PassbackRules], "tuple[list[HistoryTurn], list[str]]"
]
"""``(pipe, turns, policy) -> (turns, notes)``: the turns with what the docs allow fixed."""


@dataclass(frozen=True, slots=True)
class Demo:
    """What ``reasoning-stream demo --provider NAME`` replays, and how it points a pipe at it.

    ``build(model, url, name)`` returns the provider's pipe (a ``Pipe``) with its official
    client (or httpx) talking to the local ``WireServer`` at ``url``.
    """

    transcript: str
    model: str
    build: Callable[[str, str, str | None], Any]


@dataclass(frozen=True, slots=True)
class ApiRoot:
    """Where a provider's API lives and the shape a base URL for it must have.

    The CLI defaults ``--base-url`` to ``default``, and names the shape when a request gets a
    404 or never connects (a root missing from the URL, or doubled in it).

    Attributes:
        default: the provider's own API root (``https://api.openai.com/v1``).
        env: the variable the SDK or the pipe reads a base URL from, if any.
        ends_with: the path a base URL must end with (``/v1``); empty when it is a server root.
        not_ends_with: a path the client adds itself, so a base URL must not end with it
            (``/v1`` for Anthropic). With neither set, a base URL has no path at all.
        local: a local server's base URL of that shape, when there is a usual one.
    """

    default: str
    env: str | None = None
    ends_with: str = ""
    not_ends_with: str = ""
    local: str = ""


ThinkingRequest = Callable[[Any], tuple[bool, "int | None"]]
"""``pipe -> (on, budget)``: whether the pipe's request thinks, and its thinking budget."""

MaxTokens = Callable[[int, str | None], dict[str, Any]]
"""``(n, base_url) -> constructor options`` that cap the output at ``n`` tokens."""


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """Everything core needs to know about one provider API.

    Attributes:
        id: the pipes' ``provider`` attribute (``"openai-chat"``); scopes opaque state.
        name: the command line's ``--provider`` choice (``"openai"``).
        pipe: the class name ``reasoning_stream.providers`` exports.
        extra: the package extra that installs its SDK.
        key_env: environment variables holding its key, in the order they are read.
        base_url_env: the environment variable naming its API root, if it has one.
        key_needed: whether a request needs a key (Bedrock and Ollama do without).
        passback: ``profile -> PassbackPolicy``: how its wire carries back what the model's
            profile (``profiles.lookup``) says earlier assistant turns must carry back.
        effort: its reasoning-effort planner (see ``_effort_planner``).
        demo: the bundled replay for ``reasoning-stream demo``.
        preflight: ``(pipe, turns, policy) -> problems``: what the provider is documented to
            reject in the request ``pipe`` would build from ``turns`` under ``policy`` (the
            pipe's passback policy, resolved once per request; see ``conversation``).
        repair: ``(pipe, turns, policy) -> (turns, notes)``: the turns with what the
            provider's docs say to drop or fill dropped or filled, and a sentence per change.
        api_root: its API root and the shape of a base URL (see :class:`ApiRoot`).
        max_tokens: ``(n, base_url) -> options``: the pipe constructor's options that cap the
            output at ``n`` tokens (``--max-tokens``); ``base_url`` is the one the pipe gets.
        semconv_name: the OpenTelemetry GenAI conventions' ``gen_ai.provider.name`` for it.
        thinking_request: ``pipe -> (on, budget)``: whether the request ``pipe`` would send
            thinks, and its thinking budget in tokens (``None``: none); request preflight
            (``conversation._request_check``) reads it. Without it, the request's settings are
            not checked.
    """

    id: str
    name: str
    pipe: str
    extra: str
    effort: EffortPlanner
    passback: Callable[[ModelProfile], PassbackRules]
    key_env: tuple[str, ...] = ()
    base_url_env: str | None = None
    key_needed: bool = True
    demo: Demo | None = None
    preflight: Preflight | None = None
    repair: Repair | None = None
    api_root: ApiRoot | None = None
    max_tokens: MaxTokens | None = None
    semconv_name: str | None = None
    thinking_request: ThinkingRequest | None = None

    def pipe_class(self) -> Any:
        """The pipe class (imported on demand)."""
        return pipe_class(self.pipe)


def provider_ids() -> tuple[str, ...]:
    """Every provider id the registry knows, in table order."""
    return tuple(_REGISTRY)


def pipe_names() -> tuple[str, ...]:
    """Every pipe class name, in table order: what ``reasoning_stream.providers`` exports."""
    return tuple(entry.pipe for entry in _REGISTRY.values())


def pipe_class(name: str) -> Any:
    """The pipe class called ``name`` (its package imported now); ``AttributeError`` if none.

    >>> pipe_class("GeminiPipe").__name__
    'GeminiPipe'
    """
    for entry in _REGISTRY.values():
        if entry.pipe == name:
            return getattr(importlib.import_module(f".{entry.package}", __package__), name)
    raise AttributeError(f"module {__package__!r} has no attribute {name!r}")


def spec(provider_id: str | None) -> ProviderSpec | None:
    """The spec of the provider ``provider_id`` (a pipe's ``provider``); ``None`` if unknown."""
    entry = _REGISTRY.get(provider_id or "")
    if entry is None:
        return None
    found: ProviderSpec = importlib.import_module(f".{entry.package}", __package__).SPEC
    return found


def specs() -> list[ProviderSpec]:
    """Every provider's spec, in table order."""
    return [found for found in map(spec, _REGISTRY) if found is not None]


def logger_for(provider_id: str | None) -> logging.Logger:
    """The logger of the provider ``provider_id``: ``reasoning_stream.providers.<package>``
    (``reasoning_stream.providers`` itself for an id the registry does not know)."""
    entry = _REGISTRY.get(provider_id or "")
    return logging.getLogger(f"{__package__}.{entry.package}" if entry else str(__package__))


def by_name(name: str) -> ProviderSpec | None:
    """The spec whose command-line ``name`` is ``name``; ``None`` if none is."""
    return next((found for found in specs() if found.name == name), None)
