"""OpenAI Chat Completions and every server that speaks it: DeepSeek, vLLM, SGLang, llama.cpp,
LM Studio, Groq, OpenRouter.

``OpenAIChatPipe`` builds the request (:mod:`.request`), opens the stream with the ``openai``
SDK or the lean httpx transport, and the shared driver feeds the chunks through an
:class:`~.translate.OpenAIChatTranslator`. Host quirks are configuration of this one adapter:
which delta fields carry reasoning, whether content carries inline ``<think>`` tags, whether the
model starts inside reasoning, and what goes back to the host in later turns.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, ClassVar, Literal, Unpack

import httpx

from ..._effort_planner import merge_params
from ..._exceptions import UsageError
from ..._pipe import Prompt
from ..._tags import grammar_for
from ..._turns import HistoryTurn
from ...conversation._policy import PassbackPolicy, readable_passback
from ...conversation._request_check import always_thinks
from ...profiles import Inline, ModelProfile
from .._clients import async_by, demo_over_sdk
from .._inline import start_setting
from .._pipe import EndpointOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import Call, HttpCall, SdkCall
from . import request
from .effort import PLANNER
from .translate import REASONING_FIELDS, InlineTags, OpenAIChatTranslator, starts_in_reasoning

__all__ = ["SPEC", "OpenAIChatPipe", "OpenAIChatTranslator", "starts_in_reasoning"]


def _is_async_client(client: Any) -> bool:
    if isinstance(client, httpx.Client | httpx.AsyncClient):
        return isinstance(client, httpx.AsyncClient)
    # openai.AsyncOpenAI and its subclasses (AsyncAzureOpenAI, ...), else duck-typed clients.
    if any(cls.__name__.startswith("Async") for cls in type(client).__mro__):
        return True
    return async_by(client, "chat", "completions", "create")


class OpenAIChatPipe(ProviderPipe):
    """A Chat Completions stream (OpenAI or any compatible server) into one channel.

    Reasoning is read from the delta's ``reasoning_content``, ``reasoning`` or
    ``reasoning_details`` (one source per delta), or from ``<think>`` tags inside ``content``.

    Args:
        model: the model id.
        client: an ``openai.OpenAI`` (for ``run()``) or ``openai.AsyncOpenAI`` (for
            ``arun()``); with ``transport="httpx"`` an ``httpx.Client``/``AsyncClient``.
            Without one the pipe builds its own from ``base_url`` and ``api_key``.
        base_url: the ``/v1`` root, e.g. ``"http://localhost:8000/v1"`` for vLLM.
        transport: ``"sdk"`` (the openai SDK) or ``"httpx"`` (the lean transport: httpx and
            httpx-sse, ``json.loads``, no SDK model objects).
        http_client: the ``httpx.Client``/``AsyncClient`` for ``transport="httpx"``.
        inline_tags: ``"auto"`` scans ``content`` for ``<think>`` tags until native reasoning
            appears; ``True`` always scans; ``False`` never does.
        start_in_reasoning: the content starts inside reasoning (templates that pre-fill the
            open tag). ``None``: the model's profile says (``inline.opens_inside``: DeepSeek-R1
            distillations, Qwen3 thinking builds, OLMo 3 Think; ``profiles.register`` adds
            a model). Needs inline tags on.
        tags: tag names for the scanner (default ``think``, ``thinking``, ``reasoning``, and
            the names the model's profile adds: ``thought`` on Gemini's compatible endpoint).
        include_usage: request ``stream_options.include_usage`` (default on).
        send_reasoning_back: put a turn's readable reasoning back on earlier assistant
            messages as ``reasoning_content``. ``None``: where the host needs it, as the
            provider's passback policy says (every tool-call turn of a ``deepseek`` or
            ``kimi`` model, ``""`` when it had none).
        extra_body: fields merged into the request body (``chat_template_kwargs``,
            ``grammar``, ...).
        timeout: seconds, for clients the pipe builds and for each request.

    The other keywords (``api_key``, ``name``, ``reasoning``, ...) are
    :class:`~reasoning_stream.providers._pipe.ProviderPipe`'s.

    >>> pipe = OpenAIChatPipe("deepseek-reasoner", base_url="https://api.deepseek.com/v1")
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP
    """

    provider: str | None = "openai-chat"
    secret_env = ("OPENAI_API_KEY",)
    extra: str = "openai"
    sync_client_hint: ClassVar[str] = "a sync one (openai.OpenAI / httpx.Client)"
    sdk: ClassVar[str | None] = "openai"
    client_methods: ClassVar[tuple[str, ...]] = ("chat.completions.create",)
    client_classes: ClassVar[tuple[str, str] | None] = ("OpenAI", "AsyncOpenAI")
    client_hint: ClassVar[str] = (
        "an openai.OpenAI or openai.AsyncOpenAI client (or, with transport='httpx', an "
        "httpx.Client or httpx.AsyncClient)"
    )
    reasoning_fields: ClassVar[tuple[str, ...]] = REASONING_FIELDS
    """Delta fields carrying reasoning, in priority order."""
    reasoning_passback_field: ClassVar[str] = "reasoning_content"
    """The assistant-message field readable reasoning goes back in."""
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    """Used by the httpx transport when neither ``base_url`` nor the client names a root."""
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    """Where the httpx transport finds a key when none is given."""

    def __init__(
        self,
        model: str,
        *,
        transport: Literal["sdk", "httpx"] = "sdk",
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        inline_tags: InlineTags = "auto",
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        include_usage: bool = True,
        send_reasoning_back: bool | None = None,
        **options: Unpack[EndpointOptions],
    ) -> None:
        super().__init__(model, **options)
        self.transport = transport
        self.take_http_client(transport, http_client, sdk="an openai client")
        if inline_tags not in ("auto", True, False):
            raise UsageError(f"inline_tags must be 'auto', True or False, got {inline_tags!r}")
        self.inline_tags: InlineTags = inline_tags
        # None: the default names plus any the model's profile adds (inline.tags: Gemini's
        # OpenAI-compatible rows name "thought").
        self.tags: tuple[str, ...] | None = (
            None if tags is None else tuple((tags,) if isinstance(tags, str) else tags)
        )
        grammar_for(self.tags)  # a bad tag name fails here, not in the middle of a stream
        self.inline: Inline = self._inline_rule(model)
        """The model's inline-tag rule, from its profile (tag names, template opens inside)."""
        self.start_in_reasoning: bool | None = start_setting(start_in_reasoning, self.inline)
        self.include_usage = include_usage
        self.send_reasoning_back = send_reasoning_back

    # ------------------------------------------------------------------------ configuration

    def _inline_rule(self, model: str) -> Inline:
        return self.profile.inline

    def needs_api_key(self) -> bool:
        """A key, except on the httpx transport to a server of one's own (vLLM, llama.cpp)."""
        if self.transport == "httpx" and self.base_url not in (None, self.default_base_url):
            return False
        return super().needs_api_key()

    def translator(self) -> OpenAIChatTranslator:
        """A fresh translator configured for this pipe (one per stream)."""
        return OpenAIChatTranslator(
            provider=self.provider or self.name,
            model=self.model or "",
            endpoint=self.endpoint,
            inline_tags=self.inline_tags,
            start_in_reasoning=self.start_in_reasoning,
            tags=self.tags,
            reasoning_fields=self.reasoning_fields,
            inline=self.inline,
        )

    # ----------------------------------------------------------------------------- request

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The JSON body of the request for ``prompt`` (``extra_body`` merged last, nested
        fields key by key: its values win over the effort plan's).

        With the SDK transport, ``model`` and ``messages`` become the call's arguments and
        everything else goes through the SDK's ``extra_body``, so the wire body is the same.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(turn) for turn in self.turns(prompt)],
            "stream": True,
        }
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        body.update(request.chat_options(self, request.max_tokens_field(self.api_url())))
        body.update(self.request_options())
        # extra_body merges key by key and its values win: a user's own
        # extra_body.google.thinking_config.thinking_budget goes beside a planned include_thoughts.
        return merge_params(self.with_reasoning(body), self.extra_body)

    def request_options(self) -> dict[str, Any]:
        """Body fields a host-specific pipe adds (merged before ``extra_body``)."""
        return {}

    def _message(self, turn: HistoryTurn) -> dict[str, Any]:
        return request.message(turn, self, reasoning_field=self.reasoning_passback_field)

    # ------------------------------------------------------------------------------ clients

    def is_async_client(self, client: Any) -> bool:
        """``openai.AsyncOpenAI`` (and subclasses) or ``httpx.AsyncClient``."""
        return _is_async_client(client)

    def _headers(self) -> dict[str, str]:
        key = self._api_key
        if key is None and self.client is None:
            key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    # -------------------------------------------------------------------------------- call

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """``chat.completions.create`` with the SDK, or a POST of the same body with httpx.

        One-shot: no ``stream`` and no ``stream_options``.
        """
        body = self.build_request(prompt)
        if not stream:
            body = request.oneshot_body(body)
        self.log_request("/chat/completions", body)
        if self.transport == "httpx":
            url = self.lean_url(
                client, "chat/completions", base=self.base_url, default=self.default_base_url
            )
            return HttpCall(url, body, self._headers(), self.provider or self.name)
        arguments = (
            request.sdk_arguments(body, self.timeout)
            if stream
            else request.oneshot_sdk_arguments(body, self.timeout)
        )
        return SdkCall("chat.completions.create", arguments)


def _passback(profile: ModelProfile) -> PassbackPolicy:
    if "signatures" in profile.passback_details:
        # Gemini's OpenAI-compatible endpoint: thought signatures ride on the tool calls, and
        # the thought text never goes back (ai.google.dev/gemini-api/docs/thought-signatures).
        return PassbackPolicy(states=profile.passback, kinds=frozenset({"signature"}))
    # Readable reasoning goes back as reasoning_content on the turns the profile names
    # (DeepSeek: every message of a tool-using turn; Kimi: every turn; gpt-oss, Qwen3: the
    # current tool loop); reasoning_details items, as received, within the tool loop.
    return PassbackPolicy(
        states="tool_loop",
        reasoning=readable_passback(profile),
        kinds=frozenset({"reasoning_details"}),
    )


def _max_tokens(n: int, base_url: str | None) -> dict[str, Any]:
    """``--max-tokens``: in the field the endpoint documents (:func:`.request.max_tokens_field`)."""
    return {"extra_body": {request.max_tokens_field(base_url): n}}


SPEC = ProviderSpec(
    id="openai-chat",
    name="openai",
    pipe="OpenAIChatPipe",
    extra="openai",
    key_env=("OPENAI_API_KEY",),
    base_url_env="OPENAI_BASE_URL",
    passback=_passback,
    effort=PLANNER,
    preflight=request.preflight,
    repair=request.repair,
    thinking_request=always_thinks,
    demo=Demo(
        "openai_chat_reasoning_content",
        "deepseek-reasoner",
        demo_over_sdk(OpenAIChatPipe, "OpenAI", "/v1"),
    ),
    api_root=ApiRoot(
        "https://api.openai.com/v1",
        "OPENAI_BASE_URL",
        ends_with="/v1",
        local="http://localhost:8000/v1",
    ),
    max_tokens=_max_tokens,
    semconv_name="openai",
)
"""OpenAI Chat Completions and the servers that speak it."""
