"""The names telemetry exports: GenAI semantic-convention attribute and metric names, ours.

Conventions followed: the OpenTelemetry GenAI semantic conventions as published with
semantic-conventions v1.41 (the ``opentelemetry-semantic-conventions`` 0.66b2 registry) and
carried on in the ``semantic-conventions-genai`` repository; see :data:`SEMCONV_VERSION`.
Where they name nothing for what this library measures (time to first reasoning, reasoning
duration, segments, our status), the attribute lives under ``reasoning_stream.*``.

>>> provider_name("openai-chat", "https://api.deepseek.com/v1")
'deepseek'
>>> provider_name("bedrock", None)
'aws.bedrock'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from ..providers._spec import spec

__all__ = [
    "CACHE_READ_TOKENS",
    "CACHE_WRITE_TOKENS",
    "COST",
    "ERROR_TYPE",
    "EXCEPTION_EVENT",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_TYPE",
    "FINISH_REASONS",
    "FINISH_REASON_VALUES",
    "INPUT_LENGTH",
    "INPUT_MESSAGES",
    "INPUT_TOKENS",
    "OPAQUE_STATES",
    "OPENAI_API_TYPE",
    "OPENAI_API_TYPES",
    "OPENAI_FINGERPRINT",
    "OPENAI_SERVICE_TIER",
    "OPERATION",
    "OPERATION_DURATION_METRIC",
    "OUR_PROVIDER",
    "OUTPUT_MESSAGES",
    "OUTPUT_TOKENS",
    "PIPES",
    "PIPE_NAME",
    "PROVIDER",
    "REASONING_DURATION",
    "REASONING_DURATION_METRIC",
    "REASONING_LENGTH",
    "REASONING_SEGMENTS",
    "REASONING_TOKENS",
    "REQUEST_MODEL",
    "REQUEST_REASONING_BUDGET",
    "REQUEST_REASONING_LEVEL",
    "REQUEST_SETTINGS",
    "REQUEST_STREAM",
    "RESPONSE_ID",
    "RESPONSE_MODEL",
    "RETRY_EVENT",
    "SCOPE_NAME",
    "SECONDS_BUCKETS",
    "SEMCONV_VERSION",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "STATUS",
    "SYSTEM_INSTRUCTIONS",
    "TEXT_LENGTH",
    "TIME_PER_OUTPUT_CHUNK_METRIC",
    "TIME_TO_FIRST_CHUNK",
    "TIME_TO_FIRST_CHUNK_METRIC",
    "TIME_TO_FIRST_REASONING",
    "TIME_TO_FIRST_TEXT",
    "TOKEN_BUCKETS",
    "TOKEN_TYPE",
    "TOKEN_USAGE_METRIC",
    "TOOL_CALLS",
    "WORKFLOW_NAME",
    "provider_name",
    "server",
]

SEMCONV_VERSION: Final = "GenAI semantic conventions, semantic-conventions v1.41 (development)"
"""The version of the OpenTelemetry GenAI conventions the attribute and metric names follow."""

SCOPE_NAME: Final = "reasoning_stream"

_CAPTURE_LEVELS: Final = ("none", "lengths", "full")

# Attribute keys: the conventions' where they have one, ours under ``reasoning_stream.``.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
OPENAI_API_TYPE = "openai.api.type"
OPENAI_SERVICE_TIER = "openai.response.service_tier"
OPENAI_FINGERPRINT = "openai.response.system_fingerprint"
RESPONSE_MODEL = "gen_ai.response.model"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
REQUEST_SETTINGS: Final[Mapping[str, str]] = {
    "max_tokens": "gen_ai.request.max_tokens",
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
}
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
WORKFLOW_NAME = "gen_ai.workflow.name"
TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
RETRY_EVENT = "reasoning_stream.retry"
EXCEPTION_EVENT = "gen_ai.client.operation.exception"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"

OUR_PROVIDER = "reasoning_stream.provider"
PIPE_NAME = "reasoning_stream.pipe.name"
STATUS = "reasoning_stream.status"
TIME_TO_FIRST_REASONING = "reasoning_stream.time_to_first_reasoning"
TIME_TO_FIRST_TEXT = "reasoning_stream.time_to_first_text"
REASONING_DURATION = "reasoning_stream.reasoning.duration"
REASONING_SEGMENTS = "reasoning_stream.reasoning.segments"
OPAQUE_STATES = "reasoning_stream.reasoning_state.count"
TOOL_CALLS = "reasoning_stream.tool_calls"
COST = "reasoning_stream.cost.usd"
# The reasoning effort the request asked for. The conventions of v1.41 list no attribute for it
# (their registry has ``gen_ai.usage.reasoning.output_tokens`` only, no request-side reasoning
# attribute), so it is ours; it moves to the conventions' name once a release lists one.
REQUEST_REASONING_LEVEL = "reasoning_stream.request.reasoning.level"
REQUEST_REASONING_BUDGET = "reasoning_stream.request.reasoning.budget_tokens"
PIPES = "reasoning_stream.pipeline.pipes"
INPUT_LENGTH = "reasoning_stream.content.input.length"
REASONING_LENGTH = "reasoning_stream.content.reasoning.length"
TEXT_LENGTH = "reasoning_stream.content.text.length"

# Metric names.
OPERATION_DURATION_METRIC = "gen_ai.client.operation.duration"
TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
TIME_TO_FIRST_CHUNK_METRIC = "gen_ai.client.operation.time_to_first_chunk"
TIME_PER_OUTPUT_CHUNK_METRIC = "gen_ai.client.operation.time_per_output_chunk"
REASONING_DURATION_METRIC = "reasoning_stream.reasoning.duration"

# Bucket boundaries the conventions advise for durations (seconds; the same for the operation,
# the first chunk and the time per output chunk) and token counts.
SECONDS_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

# A provider's ``gen_ai.provider.name`` is its registry row's ``semconv_name``. An
# OpenAI-compatible endpoint is named by its host where the conventions know the host, and a
# Gemini endpoint on Vertex AI as Vertex (``provider_name``): endpoint knowledge, kept here
# until endpoints have profile rows of their own.
_OPENAI_COMPATIBLE_HOSTS: Final = (
    ("deepseek.com", "deepseek"),
    ("x.ai", "x_ai"),
    ("groq.com", "groq"),
    ("mistral.ai", "mistral_ai"),
    ("perplexity.ai", "perplexity"),
    ("openai.azure.com", "azure.ai.openai"),
)

# ``openai.api.type`` per OpenAI pipe: which of OpenAI's APIs it calls.
OPENAI_API_TYPES: Final[Mapping[str, str]] = {
    "openai-chat": "chat_completions",
    "openai-responses": "responses",
}

# Provider finish reasons, already normalised by the pipes, to the conventions' vocabulary.
FINISH_REASON_VALUES: Final[Mapping[str, str]] = {
    "tool_calls": "tool_call",
    "tool_use": "tool_call",
}


def provider_name(provider: str | None, endpoint: str | None) -> str:
    """The conventions' ``gen_ai.provider.name`` for a pipe's provider id and endpoint."""
    row = spec(provider)
    name = row.semconv_name if row is not None and row.semconv_name else provider
    if name == "openai" and endpoint:
        host = (server(endpoint)[0] or "").lower()
        for suffix, host_name in _OPENAI_COMPATIBLE_HOSTS:
            if host == suffix or host.endswith("." + suffix):
                return host_name
    if provider == "gemini" and endpoint and "aiplatform.googleapis.com" in endpoint:
        return "gcp.vertex_ai"
    return "_OTHER" if name is None else name


@functools.lru_cache(maxsize=256)
def server(endpoint: str | None) -> tuple[str | None, int | None]:
    """Host and port of a URL endpoint (never its user info, path or query)."""
    if not endpoint or "://" not in endpoint:
        return None, None
    try:
        parts = urlsplit(endpoint)
        return parts.hostname, parts.port
    except ValueError:
        return None, None
