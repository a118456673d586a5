"""What core asks of a provider: one :class:`ProviderSpec` per provider API, and the registry.

Core (the conversation's passback rules, the effort knob, the CLI and the demo) names no
provider. It asks this registry, at call time, for the spec of a pipe's ``provider`` id or of a
``--provider`` choice. Each provider package's ``__init__.py`` defines its ``SPEC``; the
registry below lists the packages, one line per provider, in the order tables show them.
Importing this module imports no provider package; :func:`spec` imports one when asked.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._conversation import PassbackPolicy
    from .._effort import EffortPlanner
    from .._history import HistoryTurn
    from .._pipe import Pipe
    from .._preflight import PassbackProblem, PreflightTurn

__all__ = [
    "ApiRoot",
    "Demo",
    "MaxTokens",
    "ProviderSpec",
    "by_name",
    "logger_for",
    "provider_ids",
    "spec",
    "specs",
]

# provider id -> package under reasoning_stream.providers: one line per provider.
_REGISTRY: dict[str, str] = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "openrouter": "openrouter",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "ollama": "ollama",
}


@dataclass(frozen=True, slots=True)
class Demo:
    """What ``reasoning-stream demo --provider NAME`` replays, and how it points a pipe at it.

    ``build(model, url, name)`` returns the provider's pipe with its official client (or
    httpx) talking to the local ``WireServer`` at ``url``.
    """

    transcript: str
    model: str
    build: Callable[[str, str, str | None], Pipe]


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
        passback: ``model -> PassbackPolicy``: what earlier assistant turns must carry back.
        effort: its reasoning-effort planner (see ``_effort``).
        demo: the bundled replay for ``reasoning-stream demo``.
        preflight: ``(pipe, turns) -> problems``: what the provider is documented to reject
            in the request ``pipe`` would build from ``turns`` (see ``_preflight``).
        repair: ``(pipe, turns) -> (turns, notes)``: the turns with what the provider's docs
            say to drop or fill dropped or filled, and a sentence per change.
        api_root: its API root and the shape of a base URL (see :class:`ApiRoot`).
        max_tokens: ``(n, base_url) -> options``: the pipe constructor's options that cap the
            output at ``n`` tokens (``--max-tokens``); ``base_url`` is the one the pipe gets.
    """

    id: str
    name: str
    pipe: str
    extra: str
    effort: EffortPlanner
    passback: Callable[[str | None], PassbackPolicy]
    key_env: tuple[str, ...] = ()
    base_url_env: str | None = None
    key_needed: bool = True
    demo: Demo | None = None
    preflight: Callable[[Any, Sequence[PreflightTurn]], list[PassbackProblem]] | None = None
    repair: Callable[[Any, Sequence[PreflightTurn]], tuple[list[HistoryTurn], list[str]]] | None = (
        None
    )
    api_root: ApiRoot | None = None
    max_tokens: MaxTokens | None = None

    def pipe_class(self) -> Any:
        """The pipe class (imported on demand)."""
        from . import __getattr__ as exported

        return exported(self.pipe)


def provider_ids() -> tuple[str, ...]:
    """Every provider id the registry knows, in table order."""
    return tuple(_REGISTRY)


def spec(provider_id: str | None) -> ProviderSpec | None:
    """The spec of the provider ``provider_id`` (a pipe's ``provider``); ``None`` if unknown."""
    package = _REGISTRY.get(provider_id or "")
    if package is None:
        return None
    found: ProviderSpec = importlib.import_module(f".{package}", __package__).SPEC
    return found


def specs() -> list[ProviderSpec]:
    """Every provider's spec, in table order."""
    return [found for found in map(spec, _REGISTRY) if found is not None]


def logger_for(provider_id: str | None) -> logging.Logger:
    """The logger of the provider ``provider_id``: ``reasoning_stream.providers.<package>``
    (``reasoning_stream.providers`` itself for an id the registry does not know)."""
    package = _REGISTRY.get(provider_id or "")
    return logging.getLogger(f"{__package__}.{package}" if package else str(__package__))


def by_name(name: str) -> ProviderSpec | None:
    """The spec whose command-line ``name`` is ``name``; ``None`` if none is."""
    return next((found for found in specs() if found.name == name), None)
