"""``ProviderPipe``: the options every provider pipe shares, and what they mean.

A provider pipe is a model, a client or an endpoint, and request options. This module holds
the constructor and what reads its options: the configuration checks run once construction
ends, the effort knob (``reasoning=``) and its exhaustion retry (:mod:`._descent`), the
history turns, secrets and error mapping. The loops are :mod:`._driver`'s, the clients
:mod:`._clients`'; a provider package adds a translator and :meth:`~._driver.Driver.describe_call`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self, TypedDict, TypeVar
from urllib.parse import urlsplit

import httpx

from .._arguments import flag, json_object, number, optional_flag, seconds
from .._callbacks import CallbackErrorHandler
from .._capture import PipeResult
from .._effort import (
    Reasoning,
    ReasoningDisplay,
    ReasoningPlan,
    check_display,
    check_reasoning,
    lower_plan,
    plan_reasoning,
    validate_reasoning,
)
from .._events import ACCOUNT_KEY, PREFIX_KEY
from .._exceptions import InvalidValueError, ProviderError, UsageError
from .._messages import strip_inert_keys
from .._pipe import Prompt
from .._tools import Tool, ToolChoice, ToolLike, check_tool_choice, to_tools
from .._turns import HistoryTurn
from ..conversation._history import history_turns
from ..conversation._scope import account_fingerprint, prefix_digest
from ..profiles import ModelProfile, lookup
from ._descent import adescend, descend
from ._driver import Driver
from ._errors import explain, provider_error, redact_exception_chain
from ._spec import logger_for, spec
from ._validated import Validated

if TYPE_CHECKING:
    from .._channel import Channel


__all__ = ["EndpointOptions", "PipeOptions", "ProviderPipe"]

_Planned = TypeVar("_Planned")


class PipeOptions(TypedDict, total=False):
    """Keywords every provider pipe takes (see :class:`ProviderPipe`)."""

    extra_body: Mapping[str, Any] | None
    timeout: float | None
    name: str | None
    escape_markers: bool
    on_callback_error: CallbackErrorHandler | None
    stream_model_reasoning: bool
    reasoning: Reasoning
    reasoning_display: ReasoningDisplay
    stream: bool
    tools: Iterable[ToolLike] | None
    tool_choice: ToolChoice | None
    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    stop: str | Sequence[str] | None


class EndpointOptions(PipeOptions, total=False):
    """:class:`PipeOptions` plus the client or the endpoint and key to build one."""

    client: Any
    base_url: str | None
    api_key: str | None
    account: str | None


class ProviderPipe(Driver, metaclass=Validated):
    """Base of the provider pipes: a model, a client or an endpoint, and request options.

    Args:
        model: the provider's model id.
        client: the SDK's sync or async client (:mod:`._clients` says which run uses what).
        base_url: the API root the provider documents, to build a client.
        api_key: the key for a client the pipe builds (never shown in errors or reprs).
        extra_body: extra JSON fields merged into the request body.
        timeout: seconds to wait for the server (connect and between reads).
        reasoning: one reasoning-effort knob: ``None`` (the provider's default), ``False``,
            ``True``, a level (``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``,
            ``"xhigh"``, ``"max"``) or a token budget (``int``), mapped to the provider's
            native parameters by the model's profile (see :meth:`reasoning_plan`); a level the
            model does not document becomes the nearest one it does, with a warning.
        reasoning_display: how much of the reasoning the provider shows: ``"full"``,
            ``"summarized"``, ``"omitted"``, or ``None`` (the provider's default), planned per
            provider (Anthropic ``thinking.display``, Responses ``reasoning.summary``, Gemini
            ``includeThoughts``, OpenRouter ``reasoning.exclude``); a display the model does
            not document becomes the nearest one it does, with a warning.
        stream: ``True`` (the default) streams the answer; ``False`` makes one
            non-streaming request the way the provider documents it, and gives the same
            ``PipeResult`` and the same channel (one chunk per reasoning or text part).
        tools: the tools the model may call: :class:`~reasoning_stream.Tool` objects,
            ``@tool``-decorated functions, or dicts in the OpenAI function shape; each is
            sent in the API's own tool shape.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool's name (the model
            must call that one); ``None`` sends nothing (the API's default).
        temperature, top_p: sampling settings, sent in the API's own fields; ``None`` sends
            nothing.
        max_tokens: the output limit, in the API's own field (``None``: the pipe's default,
            which is no limit except where the API requires one).
        stop: a stop sequence or a list of them (``UsageError`` where the API has none).
        account: a label naming the account the pipe runs under, for models whose opaque
            state is bound to an account (profile ``binding`` ``"account"``): such state goes
            back only to a pipe with the same :attr:`account`. Without a label the account
            is named by a fingerprint of the API key (never the key); a pipe that sees no
            key (a boto3 client, Ollama) is the unnamed account.
    """

    _signature_root = True
    """Where ``inspect.signature`` stops gathering the keywords of the layers (``Validated``)."""

    supports_stop: ClassVar[bool] = True
    """Whether the API takes stop sequences (``stop=`` is refused where it does not)."""

    provider: str | None = None
    client_methods: ClassVar[tuple[str, ...]] = ()
    """Dotted paths a given SDK client has (``"chat.completions.create"``): checked at
    construction, so a client of another SDK is refused there."""
    client_hint: ClassVar[str] = "the provider SDK's client"
    """What ``client=`` takes, in words, for the error that refuses another object."""
    start_unset: ClassVar[str | None] = "the model's profile decides"
    """What ``start_in_reasoning=None`` means, for the pipes that take the keyword; ``None``:
    only ``True`` or ``False`` are taken."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        name: str | None = None,
        escape_markers: bool = True,
        on_callback_error: CallbackErrorHandler | None = None,
        stream_model_reasoning: bool = True,
        reasoning: Reasoning = None,
        reasoning_display: ReasoningDisplay = None,
        stream: bool = True,
        tools: Iterable[ToolLike] | None = None,
        tool_choice: ToolChoice | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        stop: str | Sequence[str] | None = None,
        account: str | None = None,
    ) -> None:
        _check_model(type(self).__name__, model)
        if account is not None and (not isinstance(account, str) or not account.strip()):
            raise UsageError(f"account= takes a label such as 'team-a', got {account!r}")
        self.tools: tuple[Tool, ...] = to_tools(tools)
        """The tools the model may call, as :class:`~reasoning_stream.Tool` objects."""
        check_tool_choice(tool_choice, self.tools)
        self.tool_choice: ToolChoice | None = tool_choice
        """``"auto"``, ``"required"``, ``"none"``, a tool's name, or ``None`` (not sent)."""
        self.temperature: float | None = number("temperature", temperature, 0.0, None)
        self.top_p: float | None = number("top_p", top_p, 0.0, 1.0)
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise UsageError(f"max_tokens must be a positive number of tokens, got {max_tokens!r}")
        self.max_tokens: int | None = max_tokens
        self.stop: tuple[str, ...] | None = _stop_sequences(type(self), stop)
        """The stop sequences (``stop="x"`` is ``("x",)``), or ``None``."""
        validate_reasoning(reasoning)
        check_display(reasoning_display)
        if not isinstance(stream, bool):
            raise UsageError(f"stream must be True or False, got {stream!r}")
        self.reasoning: Reasoning = reasoning
        self.reasoning_display: ReasoningDisplay = reasoning_display
        self.stream: bool = stream
        """``False``: one non-streaming request per run (see :meth:`create_response`)."""
        super().__init__(
            name=name,
            escape_markers=escape_markers,
            on_callback_error=on_callback_error,
            stream_model_reasoning=stream_model_reasoning,
        )
        self.model = model
        self.client = client
        self.base_url = base_url.rstrip("/") if base_url else None
        self._api_key = api_key
        self.extra_body: dict[str, Any] = dict(json_object("extra_body", extra_body) or {})
        self.request_settings: dict[str, int | float] = {}
        """What the last request sent of ``max_tokens``, ``temperature``, ``top_p``."""
        self.timeout = seconds("timeout", timeout)
        self.endpoint = self.base_url
        if self.endpoint is None and client is not None:
            root = str(getattr(client, "base_url", None) or "").rstrip("/")
            self.endpoint = root or None
        self._built: Any = None
        self._exhaustion_retries = 0
        self._account_label = account
        self._prefix: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, name={self.name!r})"

    # ------------------------------------------------------------------------ validation

    def validate(self) -> None:
        """Refuse a configuration that cannot work; runs once, when construction ends.

        A given ``client`` must be the SDK's client this pipe calls (or an httpx client on the
        lean ``transport="httpx"``), and ``reasoning`` must be plannable for this provider and
        model (``reasoning=0`` only turns Gemini budget models off). A subclass adds its own
        checks by extending this method.
        """
        self._validate_client()
        start = getattr(self, "start_in_reasoning", False)  # pipes that may meet inline tags
        if self.start_unset is None:
            flag("start_in_reasoning", start)
        else:
            optional_flag("start_in_reasoning", start, none=self.start_unset)
        if self.provider is not None and (
            self.reasoning is not None or self.reasoning_display is not None
        ):
            try:
                self._planned(check_reasoning)
            except ValueError as error:  # the model's row refuses the setting
                raise InvalidValueError(f"{self.name}: {error}") from None

    def _validate_client(self) -> None:
        client = self.client
        if client is None:
            return
        if getattr(self, "transport", "sdk") == "httpx":
            if isinstance(client, httpx.Client | httpx.AsyncClient):
                return
            wanted = "an httpx.Client or httpx.AsyncClient (its transport is httpx)"
        elif self.accepts_client(client):
            return
        else:
            wanted = self.client_hint
        raise UsageError(f"{self.name}: client= must be {wanted}; got {_described(client)}")

    def accepts_client(self, client: Any) -> bool:
        """Whether ``client`` has every method in :attr:`client_methods` (duck typing)."""
        return all(callable(_attribute_path(client, path)) for path in self.client_methods)

    # --------------------------------------------------------------------------- retries

    def set_exhaustion_retry(self, attempts: int = 1) -> Self:
        """Ask again with less thinking when the model spent its whole budget thinking.

        When a run stops at the output limit with reasoning and no answer
        (``result.reasoning_exhausted``) and no answer byte reached a callback, the pipe
        sends the same request again, up to ``attempts`` times, each time with the next lower
        effort plan (:meth:`lower_reasoning_plan`: ``"high"`` -> ``"medium"`` -> ``"low"``, a
        budget halved; ``None`` and ``True`` start below the provider's default). It stops
        when nothing lower changes the request. ``pipe.reasoning`` is restored after the run.

        The reasoning already streamed stays in the channel, and the result keeps it: its
        ``reasoning_segments`` hold every attempt's segments, its answer, opaque state,
        status and response id are the last attempt's, its usage adds the attempts up.
        Event callbacks see each attempt's ``Finish``. Off by default (``attempts=0``).
        """
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
            raise InvalidValueError(f"attempts must be a non-negative int, got {attempts!r}")
        self._exhaustion_retries = attempts
        return self

    def lower_reasoning_plan(self) -> ReasoningPlan | None:
        """The effort plan an exhaustion retry would use next, or ``None`` if nothing is lower.

        Nothing is called; ``plan.reasoning`` is the setting, ``plan.params`` what it sends.
        """
        if self.provider is None:
            return None
        return lower_plan(
            self.provider,
            self.reasoning_model_id(),
            self.reasoning,
            max_tokens=self.reasoning_max_tokens(),
            base_url=self.api_url(),
            display=self.reasoning_display,
        )

    def _attempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        if not self._exhaustion_retries:
            return super()._attempts(channel, prompt)
        return descend(self, lambda: super(ProviderPipe, self)._attempts(channel, prompt))

    async def _aattempts(self, channel: Channel, prompt: Prompt) -> PipeResult:
        if not self._exhaustion_retries:
            return await super()._aattempts(channel, prompt)
        return await adescend(self, lambda: super(ProviderPipe, self)._aattempts(channel, prompt))

    # ---------------------------------------------------------------------------- effort

    def reasoning_plan(self) -> ReasoningPlan:
        """The native parameters (and warnings) ``reasoning=`` and ``reasoning_display=``
        become for this provider and model, read from the model's profile at this pipe's API
        root (``plan.params`` are merged into the request, ``plan.drops`` removed from it).

        Nothing is called: this shows what the next request will carry.
        """
        return self._planned(plan_reasoning)

    def _planned(self, planner: Callable[..., _Planned]) -> _Planned:
        # plan_reasoning or check_reasoning, asked about this pipe's model at its API root.
        return planner(
            self.provider or "",
            self.reasoning_model_id(),
            self.reasoning,
            max_tokens=self.reasoning_max_tokens(),
            base_url=self.api_url(),
            display=self.reasoning_display,
        )

    def reasoning_model_id(self) -> str:
        """The model id the effort table is keyed on."""
        return self.model or ""

    def reasoning_max_tokens(self) -> int | None:
        """The output limit this pipe sends, which budget-based thinking must stay under."""
        value = getattr(self, "max_tokens", None)
        return value if isinstance(value, int) else None

    def with_reasoning(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with the effort plan's parameters deep-merged in and its drops removed
        (before ``extra_body``)."""
        if self.reasoning is None and self.reasoning_display is None:
            return request
        return self.reasoning_plan().apply(request)

    # ----------------------------------------------------------------------- sampling

    def sampling_fields(
        self,
        *,
        temperature: str = "temperature",
        top_p: str = "top_p",
        max_tokens: str | None = "max_tokens",
        stop: str | None = "stop",
    ) -> dict[str, Any]:
        """The sampling settings this pipe sets, under the API's own field names (a ``None``
        name: the API takes that setting elsewhere); settings left unset are not sent.

        >>> from reasoning_stream.providers import GeminiPipe
        >>> GeminiPipe("m", temperature=0.2, stop="END").sampling_fields(stop="stopSequences")
        {'temperature': 0.2, 'stopSequences': ['END']}
        """
        fields: dict[str, Any] = {}
        for name, value in (
            (temperature, self.temperature),
            (top_p, self.top_p),
            (max_tokens, self.max_tokens),
            (stop, list(self.stop) if self.stop is not None else None),
        ):
            if name is not None and value is not None:
                fields[name] = value
        return fields

    # --------------------------------------------------------------------------- history

    def turns(self, prompt: Prompt | Any) -> list[HistoryTurn]:
        """The history turns to send for ``prompt``."""
        turns = history_turns(prompt, self)
        if "prefix" in self.profile.binding:
            # The prefix the answer is made after: its prefix-bound state records it.
            self._prefix = prefix_digest([turn.message for turn in turns], self)
        return turns

    # ------------------------------------------------------------------------ scope

    @property
    def profile(self) -> ModelProfile:
        """The model's profile (``profiles.lookup`` for this provider, model and API root):
        what its passback, scope and preflight read."""
        return lookup(self.provider or "", self.reasoning_model_id(), self.api_url(), warn=False)

    @property
    def account(self) -> str | None:
        """The account this pipe runs under, as account-bound state is scoped: the
        ``account=`` label, else ``key:`` and a fingerprint of the API key (an HMAC digest:
        the key cannot be read back from it), else ``None`` (the unnamed account)."""
        if self._account_label is not None:
            return self._account_label
        keys = [self._api_key, getattr(self.client, "api_key", None)]
        keys += [os.environ.get(name) for name in self.secret_env]
        key = next((k for k in keys if isinstance(k, str) and k), None)
        return None if key is None else account_fingerprint(key)

    def _adopt(self, target: Any) -> None:
        # A repaired copy built the request: the prefix it recorded is this run's.
        if target is not self:
            self._prefix = target._prefix

    def _finish_result(self, result: PipeResult) -> PipeResult:
        # State of a model bound to its account or to the request prefix carries the binding.
        prefix, self._prefix = self._prefix, None
        binding = self.profile.binding if result.reasoning_state else ()
        if not binding:
            return super()._finish_result(result)
        stamp: dict[str, Any] = {}
        if "account" in binding:
            stamp[ACCOUNT_KEY] = self.account
        if "prefix" in binding and prefix is not None:
            stamp[PREFIX_KEY] = prefix
        states = tuple(
            replace(state, extra={**state.extra, **stamp}) for state in result.reasoning_state
        )
        return super()._finish_result(replace(result, reasoning_state=states))

    def messages(self, prompt: Prompt | Any) -> list[dict[str, Any]]:
        """The plain messages of ``prompt`` (inert keys removed), without any provider state."""
        return [strip_inert_keys(turn.message) for turn in self.turns(prompt)]

    # ---------------------------------------------------------------------------- logging

    def log_request(self, path: str, body: Mapping[str, Any], method: str = "POST") -> None:
        """One ``DEBUG`` line on the provider's logger per request: the method, the path
        (``path`` may be a URL: never its host or query), the model and the body's keys,
        never a value (messages, keys and opaque state stay out of logs)."""
        self.request_settings = sampling_settings(body)
        log = logger_for(self.provider)
        if log.isEnabledFor(logging.DEBUG):
            where = urlsplit(path).path or path
            log.debug("%s %s model=%s body keys=%s", method, where, self.model, sorted(body))

    # --------------------------------------------------------------------------- errors

    def secrets(self) -> list[str]:
        """The credentials this pipe may send: never to appear in an error or a log line."""
        candidates = [self._api_key, getattr(self.client, "api_key", None)]
        candidates += [os.environ.get(name) for name in self.secret_env]
        # Blanking a very short value would mangle ordinary words; real keys are long.
        return [value for value in candidates if isinstance(value, str) and len(value) >= 8]

    def redact_secrets(self, error: BaseException) -> None:
        """Blank out this pipe's credentials wherever a server echoed them into ``error``.

        Servers (Google's APIs, some proxies) quote a refused key back in the error body;
        that text reaches the SDK's exception and ours. The chain (``__cause__`` and
        ``__context__``) is rewritten in place: its messages, ``message`` and ``body``.
        """
        secrets = self.secrets()
        if secrets:
            redact_exception_chain(error, secrets)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map an SDK or transport exception to ``ProviderError``."""
        return provider_error(self.provider or self.name, error)

    def api_url(self) -> str | None:
        """The API root this pipe's requests go to: its endpoint, else the provider's variable,
        else its documented default (``None`` when the provider names none)."""
        if self.base_url:
            return self.base_url
        if self.endpoint and "://" in self.endpoint:
            return self.endpoint
        found = spec(self.provider)
        root = found.api_root if found is not None else None
        if root is None:
            return None
        return (os.environ.get(root.env) if root.env else None) or root.default

    def _conclude(self, error: BaseException | None) -> BaseException | None:
        raised = super()._conclude(error)
        if isinstance(raised, ProviderError) and error is not None and raised.result:
            # Where the request went and what to fix (a 404, a server never reached, a stream
            # that broke), with what was captured; the URL without its userinfo or query.
            found = spec(self.provider)
            result = raised.result
            explain(
                self.provider or self.name,
                raised,
                error if raised is not error else error.__cause__,
                self.api_url(),
                found.api_root if found is not None else None,
                reasoning=len(result.model_reasoning),
                text=len(result.text),
            )
        return raised


def _stop_sequences(kind: type[ProviderPipe], stop: object) -> tuple[str, ...] | None:
    if stop is None:
        return None
    if not kind.supports_stop:
        raise UsageError(
            f"{kind.__name__} cannot take stop=: the provider's API has no stop sequences; "
            "leave stop unset"
        )
    sequences = (stop,) if isinstance(stop, str) else stop
    if not isinstance(sequences, Sequence) or not all(
        isinstance(item, str) and item for item in sequences
    ):
        raise UsageError(f"stop must be a non-empty str or a list of them, got {stop!r}")
    if not sequences:
        raise UsageError("stop=[] stops on nothing; leave stop unset instead")
    return tuple(sequences)


def _check_model(pipe: str, model: object) -> None:
    if not isinstance(model, str) or not model.strip():
        raise UsageError(
            f"{pipe} needs a model id: a non-empty str naming the provider's model; got "
            f"{type(model).__name__}: {model!r}"
        )


def _attribute_path(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def _described(client: object) -> str:
    kind = type(client)
    if kind.__module__ == "builtins":
        return f"{kind.__name__} {client!r:.60}"
    return f"{kind.__module__}.{kind.__qualname__}"


# Where each wire puts the output limit and the sampling settings: top level (OpenAI,
# Anthropic), or in a settings object (Gemini, Bedrock Converse, Ollama).
_SETTING_PATHS: Final = {
    "max_tokens": (
        ("max_tokens",), ("max_completion_tokens",), ("max_output_tokens",),
        ("generationConfig", "maxOutputTokens"), ("inferenceConfig", "maxTokens"),
        ("options", "num_predict"),
    ),
    "temperature": (
        ("temperature",), ("generationConfig", "temperature"),
        ("inferenceConfig", "temperature"), ("options", "temperature"),
    ),
    "top_p": (
        ("top_p",), ("generationConfig", "topP"), ("inferenceConfig", "topP"),
        ("options", "top_p"),
    ),
}  # fmt: skip


def sampling_settings(body: Mapping[str, Any]) -> dict[str, int | float]:
    """The output limit, temperature and top-p a request body sends (those it sends).

    >>> sampling_settings({"model": "m", "max_tokens": 64, "generationConfig": {"topP": 0.5}})
    {'max_tokens': 64, 'top_p': 0.5}
    """
    found: dict[str, int | float] = {}
    for name, paths in _SETTING_PATHS.items():
        for path in paths:
            value: Any = body
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                found[name] = value
                break
    return found
