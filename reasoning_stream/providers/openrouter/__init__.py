"""OpenRouter: the OpenAI-compatible adapter configured for OpenRouter's reasoning fields.

OpenRouter streams Chat Completions chunks whose deltas carry ``reasoning`` (text) and
``reasoning_details`` (structured items: ``reasoning.text``, ``reasoning.summary``,
``reasoning.encrypted``), sends ``: OPENROUTER PROCESSING`` comment lines as keep-alives, and
reports failures after the stream started as a chunk with an ``error`` object. It needs no SDK:
the lean httpx + httpx-sse transport of the chat pipe reads it. Nothing here re-implements the
translation or the request; only the configuration (and the effort plan) differs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Unpack

import httpx

from ...conversation._policy import PassbackPolicy, StatePassback
from ...profiles import Inline, ModelProfile
from .._clients import demo_over_url
from .._pipe import EndpointOptions
from .._spec import ApiRoot, Demo, ProviderSpec
from ..openai_chat import OpenAIChatPipe
from ..openai_chat.translate import InlineTags
from .effort import PLANNER

__all__ = ["OPENROUTER_BASE_URL", "SPEC", "OpenRouterPipe"]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
"""OpenRouter's documented API root."""


class OpenRouterPipe(OpenAIChatPipe):
    """An OpenRouter chat stream into one channel (httpx + httpx-sse, no SDK).

    Reasoning comes from ``delta.reasoning``, or from ``delta.reasoning_details`` when that is
    the only source. Every ``reasoning_details`` item is kept verbatim, merged per index
    across chunks, as a ``ReasoningState(kind="reasoning_details")``; given back through a
    ``Conversation``, the assistant message carries them as ``reasoning_details`` exactly as
    received, which is how OpenRouter preserves reasoning blocks (signatures included)
    across tool calls. Readable reasoning is not re-sent unless ``send_reasoning_back=True``
    (as the message's ``reasoning`` field).

    Args:
        model: an OpenRouter model id, e.g. ``"anthropic/claude-sonnet-4"``.
        client: an ``httpx.Client`` (for ``run()``) or ``httpx.AsyncClient`` (for ``arun()``);
            ``http_client=`` is the same. Without one the pipe builds its own.
        base_url: the API root (default: ``OPENROUTER_BASE_URL`` from the environment, else
            ``https://openrouter.ai/api/v1``).
        api_key: the key; default the ``OPENROUTER_API_KEY`` environment variable.
        reasoning_options: OpenRouter's ``reasoning`` request object, e.g.
            ``{"effort": "high"}``, ``{"max_tokens": 2000}``, ``{"exclude": True}``.
        inline_tags, start_in_reasoning, tags: as for :class:`OpenAIChatPipe`; OpenRouter
            separates reasoning itself, so ``start_in_reasoning`` defaults to ``False``.
        include_usage: also request ``stream_options.include_usage`` (OpenRouter reports
            usage in the last chunk without it).
        extra_body: fields merged into the request body (``provider`` routing, ``models``...).

    >>> pipe = OpenRouterPipe("deepseek/deepseek-r1", reasoning_options={"effort": "high"})
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider: str | None = "openrouter"
    secret_env = ("OPENROUTER_API_KEY",)
    # Only the core dependencies (httpx, httpx-sse) are needed; "all" is the catch-all extra.
    extra: str = "all"
    reasoning_fields: ClassVar[tuple[str, ...]] = ("reasoning", "reasoning_details")
    reasoning_passback_field: ClassVar[str] = "reasoning"
    default_base_url: ClassVar[str] = OPENROUTER_BASE_URL
    api_key_env: ClassVar[str] = "OPENROUTER_API_KEY"
    start_unset: ClassVar[str | None] = "False: OpenRouter separates reasoning itself"

    def __init__(
        self,
        model: str,
        *,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        reasoning_options: Mapping[str, Any] | None = None,
        inline_tags: InlineTags = "auto",
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        include_usage: bool = False,
        send_reasoning_back: bool | None = None,
        **options: Unpack[EndpointOptions],
    ) -> None:
        options["base_url"] = (
            options.get("base_url") or os.environ.get("OPENROUTER_BASE_URL") or OPENROUTER_BASE_URL
        )
        super().__init__(
            model,
            http_client=http_client,
            transport="httpx",
            inline_tags=inline_tags,
            # OpenRouter separates reasoning itself: content never starts inside it.
            start_in_reasoning=False if start_in_reasoning is None else start_in_reasoning,
            tags=tags,
            include_usage=include_usage,
            send_reasoning_back=send_reasoning_back,
            **options,
        )
        self.reasoning_options: dict[str, Any] | None = (
            dict(reasoning_options) if reasoning_options is not None else None
        )

    def _inline_rule(self, model: str) -> Inline:
        # OpenRouter moves a model's reasoning into its own field, R1 included: content that
        # starts inside reasoning would only come from reasoning excluded upstream.
        return Inline()

    def needs_api_key(self) -> bool:
        """Always: OpenRouter (or a proxy in front of it) refuses a request without a key."""
        return True

    def request_options(self) -> dict[str, Any]:
        """OpenRouter's ``reasoning`` object, when configured."""
        if self.reasoning_options is None:
            return {}
        return {"reasoning": dict(self.reasoning_options)}


def _passback(profile: ModelProfile) -> PassbackPolicy:
    # reasoning_details items (signatures and encrypted blocks included) go back as received:
    # at least within the tool loop, as OpenRouter documents for every model, and with every
    # earlier turn for the models whose profile keeps earlier reasoning (Claude Opus 4.5+,
    # Sonnet 4.6+, 5.x) (https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks).
    # The readable text would be redundant.
    states: StatePassback = "always" if profile.passback == "always" else "tool_loop"
    return PassbackPolicy(states=states, kinds=frozenset({"reasoning_details"}))


SPEC = ProviderSpec(
    id="openrouter",
    name="openrouter",
    pipe="OpenRouterPipe",
    extra="all",
    key_env=("OPENROUTER_API_KEY",),
    passback=_passback,
    effort=PLANNER,
    demo=Demo(
        "openrouter_reasoning",
        "anthropic/claude-sonnet-4",
        demo_over_url(OpenRouterPipe, "/api/v1"),
    ),
    api_root=ApiRoot(OPENROUTER_BASE_URL, "OPENROUTER_BASE_URL", ends_with="/api/v1"),
    max_tokens=lambda n, url: {"extra_body": {"max_tokens": n}},
    semconv_name="openrouter",
)
"""OpenRouter, through the chat pipe's httpx transport."""
