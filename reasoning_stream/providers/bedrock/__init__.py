"""Amazon Bedrock through boto3's ``bedrock-runtime`` client: ConverseStream and InvokeModel.

Two pure translators turn the dicts boto3 yields into events:

* :class:`ConverseStreamTranslator` reads ``ConverseStream`` events (``contentBlockDelta`` with
  ``reasoningContent`` text, signature or redacted bytes; ``toolUse`` fragments; ``messageStop``;
  ``metadata``). Reasoning blocks have no ``contentBlockStart``: the first reasoning delta of a
  block opens it and its ``contentBlockStop`` closes it.
* :class:`InvokeStreamTranslator` reads ``InvokeModelWithResponseStream`` events, whose
  ``chunk.bytes`` carry the model's own stream JSON: Anthropic Messages events for Claude (read
  by the Anthropic module's translator, configured for Bedrock), text completion chunks for
  DeepSeek-R1 (whose template pre-fills ``<think>``, so the text starts inside reasoning and
  only ``</think>`` closes it) and a few other text shapes.

:class:`BedrockPipe` opens the stream with the sync client. boto3 has no async client, so
``arun()`` opens it in a worker thread and reads the body's bytes in a thread of its own, while
the event loop cuts the frames and decodes them with the stream's own botocore code (the same
events and errors as iterating the stream); cancellation shuts the socket's read side down so a
blocked read returns at once and the connection is released.

Opaque state. A signed reasoning block becomes ``ReasoningState(kind="signature",
payload=signature, block=contentBlockIndex, extra={...})``: Bedrock wants the text and its
signature back together, so ``extra`` carries the block's reasoning text under the API's own
field name (``"text"`` for Converse's ``reasoningText``, ``"thinking"`` for Anthropic blocks on
Invoke) and ``"api"``.
Redacted reasoning becomes ``ReasoningState(kind="redacted", payload=...)``: the raw ``bytes``
boto3 decoded from ``redactedContent`` (Converse), or the Anthropic ``data`` string (Invoke).
States keep stream order: Converse emits them when their block stops, Anthropic's translator
when its redacted block starts or its signed block stops. A follow-up request puts an assistant
turn's states back at the head of its content, verbatim and in order; states made through the
other API (``extra["api"]``) are left out, since their payload forms differ. Invoke requests
reuse the Anthropic pipe's message conversion, so only states of provider ``bedrock`` go back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Unpack

from ..._effort import merge_params
from ..._effort_planner import without
from ..._exceptions import ProviderError, UsageError
from ..._pipe import Pipe, Prompt
from ..._redact import redact_url_credentials, split_url_credentials
from ..._turns import HistoryTurn
from ...conversation._policy import state_passback
from .._clients import require
from .._errors import build_error, provider_error, retry_after_seconds
from .._pipe import PipeOptions, ProviderPipe
from .._spec import ApiRoot, Demo, ProviderSpec
from .._transports import Boto3Call, Call
from ..anthropic.request import (
    INTERLEAVED_BETA,
    anthropic_options,
    needs_interleaved_beta,
    thinking_turned_off,
)
from ..openai_chat.request import chat_options
from . import request as bedrock_request
from .effort import PLANNER
from .request import anthropic_messages, converse_messages, deepseek_prompt
from .translate import (
    PROVIDER,
    Api,
    ConverseStreamTranslator,
    InvokeStreamTranslator,
    TextInvokeTranslator,
    starts_in_reasoning,
)

_MODEL_FIELDS = "additionalModelRequestFields"

__all__ = [
    "SPEC",
    "BedrockPipe",
    "ConverseStreamTranslator",
    "InvokeStreamTranslator",
    "TextInvokeTranslator",
]

ANTHROPIC_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Bedrock requires in Anthropic request bodies."""
DEFAULT_MAX_TOKENS = 4096
"""Output limit for request bodies that must name one (Anthropic, DeepSeek) when none is set."""

# In-stream exceptions arrive without an HTTP status; these are the ones the service model
# gives them, so callers can tell a throttle (retry later) from a bad request.
_STREAM_ERROR_STATUS: dict[str, int] = {
    "validationexception": 400,
    "modeltimeoutexception": 408,
    "modelstreamerrorexception": 424,
    "throttlingexception": 429,
    "internalserverexception": 500,
    "serviceunavailableexception": 503,
}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def bedrock_error(error: BaseException, provider: str = PROVIDER) -> ProviderError:
    """A ``ProviderError`` for a botocore or transport exception.

    botocore's ``ClientError`` (HTTP errors) and ``EventStreamError`` (in-stream exceptions)
    keep the service's code and message in ``error.response``; the status is the HTTP one, or
    for in-stream exceptions the one the service model assigns (429 for a throttle).
    """
    if isinstance(error, ProviderError):
        return error
    response = getattr(error, "response", None)
    if isinstance(response, Mapping) and isinstance(response.get("Error"), Mapping):
        details = response["Error"]
        code = str(details.get("Code") or type(error).__name__)
        text = str(details.get("Message") or "the request failed")
        metadata = response.get("ResponseMetadata") or {}
        status = _int_or_none(metadata.get("HTTPStatusCode"))
        if status is None:
            status = _STREAM_ERROR_STATUS.get(code.lower())
        headers = metadata.get("HTTPHeaders") or {}
        retry_after = retry_after_seconds(headers, provider)
        return build_error(
            provider,
            text,
            detail=code + (f", HTTP {status}" if status is not None else ""),
            status=status,
            retry_after=retry_after,
            body={"Code": code, "Message": text},
        )
    name = type(error).__name__
    if name in ("ProtocolError", "ResponseStreamingError", "IncompleteReadError"):
        return provider_error(
            provider, error, what=f"the connection broke mid-stream: {error or name}"
        )
    return provider_error(provider, error)


class BedrockPipe(ProviderPipe):
    """A model on Amazon Bedrock, streamed through boto3's ``bedrock-runtime`` client.

    ``api="converse"`` (default) uses ``ConverseStream``, where Bedrock itself separates
    reasoning (``reasoningContent``) from the answer; ``api="invoke"`` uses
    ``InvokeModelWithResponseStream`` with the model's native body (Anthropic Messages for
    Claude, DeepSeek's template for DeepSeek, OpenAI-style ``messages`` for the rest).
    Claude's extended thinking is switched on through ``additional_model_request_fields``.

    >>> import boto3  # doctest: +SKIP
    >>> pipe = BedrockPipe(  # doctest: +SKIP
    ...     "us.anthropic.claude-sonnet-4-20250514-v1:0",
    ...     client=boto3.client("bedrock-runtime", region_name="us-west-2"),
    ...     additional_model_request_fields={
    ...         "thinking": {"type": "enabled", "budget_tokens": 2048}
    ...     },
    ... )
    >>> pipe.set_streaming_callback(print).run("Why is the sky blue?")  # doctest: +SKIP

    Args:
        model: the model or inference profile id (``us.deepseek.r1-v1:0``, an ARN, ...).
        client: a boto3 ``bedrock-runtime`` client; without one the pipe builds it from
            ``region_name`` (default: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else
            ``us-east-1``) and ``endpoint_url`` / ``base_url``.
        api: ``"converse"`` or ``"invoke"``.
        additional_model_request_fields: model-specific fields (Converse
            ``additionalModelRequestFields``; merged into the Invoke body).
        inference_config: Converse ``inferenceConfig`` (``maxTokens``, ``temperature``, ...).
        max_tokens, temperature, top_p: shorthands for the common inference settings.
        start_in_reasoning, tags: for Invoke text models with inline tags; by default
            DeepSeek-R1 model ids start inside reasoning.
        extra_body: merged into the ``converse_stream`` keyword arguments (``toolConfig``,
            ``guardrailConfig``, ...) or into the Invoke JSON body.
        timeout: connect and read timeout in seconds for a client the pipe builds.
    """

    provider = PROVIDER
    secret_env = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
    extra = "bedrock"
    reads_in_threads: ClassVar[bool] = True
    sdk: ClassVar[str | None] = "boto3"
    client_methods: ClassVar[tuple[str, ...]] = (
        "converse_stream",
        "invoke_model_with_response_stream",
    )
    client_hint: ClassVar[str] = "a boto3 client for 'bedrock-runtime'"
    start_unset: ClassVar[str | None] = "DeepSeek-R1 ids start inside, others do not"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        base_url: str | None = None,
        api: Api = "converse",
        additional_model_request_fields: Mapping[str, Any] | None = None,
        inference_config: Mapping[str, Any] | None = None,
        start_in_reasoning: bool | None = None,
        tags: Iterable[str] | None = None,
        **options: Unpack[PipeOptions],
    ) -> None:
        if api not in ("converse", "invoke"):
            raise UsageError(f"BedrockPipe api must be 'converse' or 'invoke', not {api!r}")
        if endpoint_url and base_url and endpoint_url.rstrip("/") != base_url.rstrip("/"):
            raise UsageError("give endpoint_url or base_url, not two different URLs")
        endpoint = endpoint_url or base_url
        if endpoint and split_url_credentials(endpoint)[1] is not None:
            # botocore would never send them, and would log the URL, password and all.
            raise UsageError(
                "Bedrock signs requests with AWS credentials: remove the user:password from "
                f"the endpoint URL (got {redact_url_credentials(endpoint)!r})"
            )
        super().__init__(model, client=client, base_url=endpoint, **options)
        self.model_id: str = model
        """The model or inference profile id (``model`` as a plain ``str``)."""
        self.api: Api = api
        if client is not None:
            meta = getattr(client, "meta", None)
            region_name = region_name or getattr(meta, "region_name", None)
        self.region_name: str = (
            region_name
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        self.endpoint = self.base_url or self.region_name
        self.additional_model_request_fields: dict[str, Any] = dict(
            additional_model_request_fields or {}
        )
        self.inference_config: dict[str, Any] = dict(inference_config or {})
        self.start_in_reasoning = (
            starts_in_reasoning(model) if start_in_reasoning is None else start_in_reasoning
        )
        self.tags: tuple[str, ...] | None = tuple(tags) if tags is not None else None
        if api == "invoke" and self._family() == "deepseek" and self.tools:
            # DeepSeek's Invoke body is a prompt and sampling fields only
            # (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-deepseek.html).
            raise UsageError(
                f"{model} through api='invoke' takes no tools (its body is a raw prompt); "
                "use api='converse' for tool calls"
            )

    # ------------------------------------------------------------------------- client

    def api_url(self) -> str | None:
        """The endpoint requests go to: ``endpoint_url``, the given client's, or the region's."""
        given = getattr(getattr(self.client, "meta", None), "endpoint_url", None)
        return (
            self.base_url
            or (given if isinstance(given, str) else None)
            or f"https://bedrock-runtime.{self.region_name}.amazonaws.com"
        )

    def build_client(self, *, asynchronous: bool) -> Any:
        """A boto3 ``bedrock-runtime`` client for ``region_name`` and ``endpoint_url``."""
        boto3 = require("boto3", self.extra)
        config = require("botocore.config", self.extra)
        options: dict[str, Any] = {"region_name": self.region_name}
        if self.base_url:
            options["endpoint_url"] = self.base_url
        timeouts: dict[str, Any] = {}
        if self.timeout is not None:
            timeouts = {"connect_timeout": self.timeout, "read_timeout": self.timeout}
        # One attempt: botocore's retries would repeat a throttled call behind the caller's
        # back; the pipe's own set_retries() is the one retry policy.
        options["config"] = config.Config(retries={"total_max_attempts": 1}, **timeouts)
        session = boto3.Session(region_name=self.region_name)
        # boto3 would find no credentials only when signing the first request: say it now.
        if not os.environ.get("AWS_BEARER_TOKEN_BEDROCK") and session.get_credentials() is None:
            raise UsageError(
                f"{self.name} found no AWS credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or "
                "AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key); or pass a ready "
                "client="
            )
        return session.client("bedrock-runtime", **options)

    # ------------------------------------------------------------------------ request

    def _family(self) -> Literal["anthropic", "deepseek", "messages"]:
        lowered = self.model_id.lower()
        if "anthropic" in lowered:
            return "anthropic"
        if "deepseek" in lowered:
            return "deepseek"
        return "messages"

    def build_request(self, prompt: Prompt | Any) -> dict[str, Any]:
        """The keyword arguments of ``converse_stream`` or ``invoke_model_with_response_stream``.

        For Invoke, ``body`` is the JSON text of the model's native request.
        """
        turns = self.turns(prompt)
        if self.api == "converse":
            messages, system = converse_messages(
                turns, error_status=bedrock_request.takes_tool_status(self.model_id)
            )
            request: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
            if system:
                request["system"] = system
            tool_config = bedrock_request.converse_tool_config(self, messages)
            if tool_config is not None:
                request["toolConfig"] = tool_config
            inference = bedrock_request.converse_inference(self, self.inference_config)
            if inference:
                request["inferenceConfig"] = inference
            if self.additional_model_request_fields:
                request["additionalModelRequestFields"] = dict(self.additional_model_request_fields)
            request = self.with_reasoning(request)
            request.update(self.extra_body)
            fields = request.get("additionalModelRequestFields")
            off = thinking_turned_off(turns)
            if off:
                fields = dict(fields) if isinstance(fields, Mapping) else {}
                bedrock_request.drop_thinking(fields, off)
                if fields:
                    request["additionalModelRequestFields"] = fields
                else:
                    request.pop("additionalModelRequestFields", None)
            if isinstance(fields, Mapping) and self._needs_interleaved_beta(
                fields, request.get("toolConfig")
            ):
                request["additionalModelRequestFields"] = _with_beta(fields)
            return request
        return {"modelId": self.model_id, "body": json.dumps(self.invoke_body(turns))}

    def _needs_interleaved_beta(self, fields: Mapping[str, Any], tools: Any) -> bool:
        # Claude on Bedrock takes Anthropic's betas in the body (anthropic_beta): manual
        # thinking budgets think between tool calls only with the interleaved-thinking beta.
        if "anthropic.claude" not in self.model_id.lower():
            return False
        return needs_interleaved_beta(
            self.model_id, {"thinking": fields.get("thinking"), "tools": tools}
        )

    def invoke_body(self, turns: Sequence[HistoryTurn]) -> dict[str, Any]:
        """The model's native request body for ``api="invoke"``."""
        family = self._family()
        body: dict[str, Any]
        if family == "anthropic":
            messages, system = anthropic_messages(turns)
            thinking = self.additional_model_request_fields.get("thinking")
            budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
            max_tokens = self.max_tokens
            if max_tokens is None:
                # The output limit must leave room for the answer after the thinking budget.
                max_tokens = DEFAULT_MAX_TOKENS + (budget if isinstance(budget, int) else 0)
            body = {
                "anthropic_version": ANTHROPIC_VERSION,
                "max_tokens": max_tokens,
                "messages": messages,
            }
            if system:
                body["system"] = system
            body.update(anthropic_options(self))
        elif family == "deepseek":
            body = {
                "prompt": deepseek_prompt(turns, prefill_think=self.start_in_reasoning),
                "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            }
            body.update(self.sampling_fields())  # temperature, top_p, max_tokens, stop
        else:
            # OpenAI-style bodies (gpt-oss): Chat Completions fields, tools included.
            body = {"messages": [dict(turn.message) for turn in turns]}
            body.update(chat_options(self))
        body.update(self.additional_model_request_fields)
        if self.reasoning is not None or self.reasoning_display is not None:
            # Invoke bodies are the model's native request: the Converse-shaped plan's model
            # fields go in at the top level, and its token limit becomes ``max_tokens``.
            plan = self.reasoning_plan()
            params = plan.params
            drops = tuple(path[1:] for path in plan.drops if path[0] == _MODEL_FIELDS)
            body = merge_params(without(body, drops), params.get(_MODEL_FIELDS, {}))
            limit = params.get("inferenceConfig", {}).get("maxTokens")
            if limit is not None:
                body["max_tokens"] = limit
        body.update(self.extra_body)
        off = thinking_turned_off(turns)
        if off:
            bedrock_request.drop_thinking(body, off)
        if family == "anthropic" and self._needs_interleaved_beta(body, body.get("tools")):
            body = _with_beta(body)
        return body

    # ------------------------------------------------------------------------- stream

    def translator(self) -> ConverseStreamTranslator | InvokeStreamTranslator:
        """A fresh translator for one response of the pipe's API."""
        if self.api == "converse":
            return ConverseStreamTranslator(
                provider=PROVIDER, model=self.model_id, endpoint=self.endpoint
            )
        return InvokeStreamTranslator(
            provider=PROVIDER,
            model=self.model_id,
            endpoint=self.endpoint,
            family="anthropic" if self._family() == "anthropic" else "text",
            start_in_reasoning=self.start_in_reasoning,
            tags=self.tags,
        )

    def describe_call(self, client: Any, prompt: Prompt | Any, *, stream: bool) -> Call:
        """``converse_stream`` / ``invoke_model_with_response_stream``, or one-shot
        ``converse`` / ``invoke_model``. Read async, the stream is opened in a worker thread
        and its body read in another (boto3 is sync only); the event loop decodes the frames."""
        request = self.build_request(prompt)
        converse = self.api == "converse"
        if stream:
            method = "converse_stream" if converse else "invoke_model_with_response_stream"
            operation = "converse-stream" if converse else "invoke-with-response-stream"
        else:
            method, operation = ("converse" if converse else "invoke_model"), self.api
        self.log_request(f"/model/{self.model_id}/{operation}", request)
        return Boto3Call(method, request, body=not converse)

    def wrap_error(self, error: BaseException) -> ProviderError:
        """Map botocore and transport exceptions to ``ProviderError`` (code, message, status)."""
        return bedrock_error(error, self.provider or PROVIDER)


def _with_beta(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with the interleaved-thinking beta added to ``anthropic_beta``."""
    betas = list(fields.get("anthropic_beta") or ())
    if INTERLEAVED_BETA not in betas:
        betas.append(INTERLEAVED_BETA)
    return {**fields, "anthropic_beta": betas}


def _demo_pipe(model: str, url: str, name: str | None) -> Pipe:
    boto3 = require("boto3", "bedrock")
    config = require("botocore.config", "bedrock")
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="demo",
        aws_secret_access_key="demo-key-not-secret",
        config=config.Config(retries={"total_max_attempts": 1}),
    )
    return BedrockPipe(model, client=client, name=name)


SPEC = ProviderSpec(
    id="bedrock",
    name="bedrock",
    pipe="BedrockPipe",
    extra="bedrock",
    key_needed=False,
    # Reasoning blocks with their signatures go back as the model's profile says (Claude with
    # preserved thinking: every earlier turn; others: the current tool loop).
    passback=state_passback,
    effort=PLANNER,
    preflight=bedrock_request.preflight,
    repair=bedrock_request.repair,
    thinking_request=bedrock_request.thinking_request,
    demo=Demo("bedrock_converse_reasoning", "anthropic.claude-sonnet-4-6", _demo_pipe),
    api_root=ApiRoot(
        "https://bedrock-runtime.us-east-1.amazonaws.com", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    ),
    max_tokens=lambda n, url: {"max_tokens": n},
    semconv_name="aws.bedrock",
)
"""Amazon Bedrock (ConverseStream and InvokeModelWithResponseStream)."""
