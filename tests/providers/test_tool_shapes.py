"""``tools=``, ``tool_choice=`` and the sampling settings, as each API documents them.

Every test builds a pipe on the provider's real SDK (httpx for Gemini and OpenRouter, boto3 for
Bedrock), runs it against the loopback WireServer, and asserts the first request body the
server received. The expected shapes are written out here from each provider's docs and SDK
types, not built by the package:

* OpenAI Chat Completions: ``tools[].function`` with ``name``, ``description``,
  ``parameters`` (openai ``ChatCompletionFunctionToolParam``), ``tool_choice`` ``"auto"`` /
  ``"required"`` / ``"none"`` / ``{"type": "function", "function": {"name"}}``
  (``ChatCompletionNamedToolChoiceParam``); OpenRouter takes the same.
* OpenAI Responses: flat ``{"type": "function", "name", "description", "parameters",
  "strict"}`` (``FunctionToolParam``, where ``strict`` is required), ``{"type": "function",
  "name"}`` to force one, ``max_output_tokens``, no stop sequences.
* Anthropic: ``{"name", "description", "input_schema"}`` (``ToolParam``), ``tool_choice``
  ``auto`` / ``any`` / ``none`` / ``{"type": "tool", "name"}``, ``stop_sequences``.
* Bedrock Converse: ``toolConfig.tools[].toolSpec`` with ``inputSchema.json``, ``toolChoice``
  ``auto`` / ``any`` / ``tool``, ``inferenceConfig`` ``maxTokens``, ``temperature``, ``topP``,
  ``stopSequences`` (botocore's service model). Invoke with Claude: Anthropic's body.
* Gemini: ``tools[].functionDeclarations[]`` with ``parametersJsonSchema``,
  ``toolConfig.functionCallingConfig`` ``mode`` ``AUTO`` / ``ANY`` / ``NONE`` and
  ``allowedFunctionNames``, ``generationConfig`` ``temperature``, ``topP``,
  ``maxOutputTokens``, ``stopSequences`` (ai.google.dev/api/caching#FunctionDeclaration).
* Ollama: ``tools`` in OpenAI's function shape, ``options`` ``temperature``, ``top_p``,
  ``num_predict``, ``stop`` (ollama ``Options``); no ``tool_choice``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, Literal

import anthropic
import httpx
import ollama
import openai
import pytest

from reasoning_stream import Conversation, Tool, UsageError, tool
from reasoning_stream.providers import (
    AnthropicPipe,
    BedrockPipe,
    GeminiPipe,
    OllamaPipe,
    OpenAIChatPipe,
    OpenAIResponsesPipe,
    OpenRouterPipe,
)
from reasoning_stream.providers._pipe import ProviderPipe
from reasoning_stream.testing import WireServer
from tests.providers.conftest import bedrock_client

KEY = "test-key-not-a-secret"


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Current weather for a city.

    Args:
        city: the city's name.
    """
    return f"18 {unit} in {city}"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return f"12:00 in {zone}"


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "the city's name."},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
TIME_SCHEMA = {
    "type": "object",
    "properties": {"zone": {"type": "string"}},
    "required": ["zone"],
    "additionalProperties": False,
}
WEATHER = ("get_weather", "Current weather for a city.", WEATHER_SCHEMA)
TIME = ("get_time", "Current time in a time zone.", TIME_SCHEMA)
SETTINGS: dict[str, Any] = {"temperature": 0.5, "top_p": 0.9, "max_tokens": 256, "stop": "END"}

BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TRANSCRIPTS = (
    "openai_chat_tool_call",
    "openai_responses_function_call",
    "anthropic_interleaved_tool",
    "bedrock_converse_tool_use",
    "bedrock_invoke_anthropic_interleaved",
    "gemini_tool_call",
    "ollama_chat_tool_call",
    "openrouter_tool_call",
)


class Wire:
    """One loopback server replaying a tool-call stream per provider (each repeats), and the
    SDK clients pointed at it: each method runs one pipe and returns its request body."""

    def __init__(self, server: WireServer, stack: ExitStack) -> None:
        self.server = server
        url = server.url
        self.openai = stack.enter_context(
            openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        )
        self.anthropic = stack.enter_context(
            anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        )
        self.http = stack.enter_context(httpx.Client())
        self.ollama = ollama.Client(host=url)
        stack.callback(self.ollama.close)
        self.bedrock = bedrock_client(url)
        stack.callback(self.bedrock.close)

    def body(self, pipe: ProviderPipe) -> dict[str, Any]:
        """Run ``pipe`` once; the JSON body of the request it sent."""
        before = len(self.server.requests)
        pipe.run("Weather in Paris?")
        assert len(self.server.requests) == before + 1, "the pipe sent no request"
        body: dict[str, Any] = self.server.requests[before].json()
        return body

    def chat(self, transport: str = "sdk", **options: Any) -> dict[str, Any]:
        if transport == "httpx":
            root = {"client": self.http, "base_url": self.server.url + "/v1", "api_key": KEY}
            return self.body(OpenAIChatPipe("deepseek-chat", transport="httpx", **root, **options))
        return self.body(OpenAIChatPipe("deepseek-chat", client=self.openai, **options))

    def responses(self, model: str = "o4-mini", **options: Any) -> dict[str, Any]:
        return self.body(OpenAIResponsesPipe(model, client=self.openai, **options))

    def claude(self, **options: Any) -> dict[str, Any]:
        return self.body(AnthropicPipe("claude-sonnet-4-5", client=self.anthropic, **options))

    def converse(self, **options: Any) -> dict[str, Any]:
        return self.body(BedrockPipe(BEDROCK_CLAUDE, client=self.bedrock, **options))

    def invoke(self, **options: Any) -> dict[str, Any]:
        return self.body(BedrockPipe(BEDROCK_CLAUDE, client=self.bedrock, api="invoke", **options))

    def gemini(self, **options: Any) -> dict[str, Any]:
        root = {"client": self.http, "base_url": self.server.url + "/v1beta", "api_key": KEY}
        return self.body(GeminiPipe("gemini-3-pro-preview", **root, **options))

    def ollama_chat(self, **options: Any) -> dict[str, Any]:
        return self.body(OllamaPipe("qwen3", client=self.ollama, **options))

    def openrouter(self, **options: Any) -> dict[str, Any]:
        root = {"client": self.http, "base_url": self.server.url + "/api/v1", "api_key": KEY}
        return self.body(OpenRouterPipe("deepseek/deepseek-r1", **root, **options))


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    with ExitStack() as stack:
        server = stack.enter_context(WireServer(*TRANSCRIPTS))
        yield Wire(server, stack)


# ------------------------------------------------------------------ the documented shapes


def chat_tool(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def test_openai_chat_sends_function_tools_a_named_choice_and_sampling_fields(wire: Wire) -> None:
    """Compatible servers document ``max_tokens`` (OpenAI's own API wants
    ``max_completion_tokens``: :func:`test_openai_chat_max_tokens_field_follows_the_endpoint`)."""
    for transport in ("sdk", "httpx"):
        body = wire.chat(
            transport, tools=[get_weather, get_time], tool_choice="get_time", **SETTINGS
        )
        assert body["tools"] == [chat_tool(*WEATHER), chat_tool(*TIME)]
        assert body["tool_choice"] == {"type": "function", "function": {"name": "get_time"}}
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 256)
        assert body["stop"] == ["END"]
        assert "max_completion_tokens" not in body


def test_openrouter_sends_the_chat_shapes(wire: Wire) -> None:
    body = wire.openrouter(tools=[get_weather], tool_choice="required", **SETTINGS)
    assert body["tools"] == [chat_tool(*WEATHER)]
    assert body["tool_choice"] == "required"
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["stop"]) == (
        0.5, 0.9, 256, ["END"],
    )  # fmt: skip


def test_openai_chat_max_tokens_field_follows_the_endpoint() -> None:
    """OpenAI's own API: ``max_completion_tokens`` (its reasoning models reject
    ``max_tokens``, platform.openai.com/docs/api-reference/chat/create); others: ``max_tokens``."""
    own = OpenAIChatPipe("o4-mini", api_key=KEY, max_tokens=9).build_request("q")
    assert own["max_completion_tokens"] == 9 and "max_tokens" not in own
    local = OpenAIChatPipe("m", base_url="http://localhost:8000/v1", max_tokens=9)
    assert local.build_request("q")["max_tokens"] == 9


def test_openai_chat_sends_strict_only_when_the_tool_sets_it(wire: Wire) -> None:
    strict = Tool("get_time", "Current time in a time zone.", TIME_SCHEMA, strict=True)
    body = wire.chat(tools=[strict, get_weather])
    assert body["tools"][0]["function"]["strict"] is True
    assert "strict" not in body["tools"][1]["function"]


def test_responses_sends_flat_functions_with_strict_as_the_schema_allows(wire: Wire) -> None:
    """Responses makes functions strict by default; a strict schema must require every
    property and close every object (platform.openai.com/docs/guides/function-calling#strict-mode).
    ``get_weather`` has an optional ``unit``, so it goes ``strict: false``; ``get_time`` fits.
    (A model that takes sampling settings: o4-mini always reasons and rejects them, which
    request preflight refuses before sending.)"""
    settings = {key: value for key, value in SETTINGS.items() if key != "stop"}
    body = wire.responses(
        "gpt-4.1", tools=[get_weather, get_time], tool_choice="get_time", **settings
    )
    name, description, schema = WEATHER
    assert body["tools"] == [
        {"type": "function", "name": name, "description": description, "parameters": schema,
         "strict": False},
        {"type": "function", "name": TIME[0], "description": TIME[1], "parameters": TIME[2],
         "strict": True},
    ]  # fmt: skip
    assert body["tool_choice"] == {"type": "function", "name": "get_time"}
    assert (body["temperature"], body["top_p"], body["max_output_tokens"]) == (0.5, 0.9, 256)
    assert "stop" not in body and "max_tokens" not in body


def test_responses_refuses_stop_naming_the_parameter() -> None:
    with pytest.raises(UsageError, match="stop="):
        OpenAIResponsesPipe("o4-mini", api_key=KEY, stop="END")


def anthropic_tool(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": schema}


def test_anthropic_sends_input_schema_tools_and_stop_sequences(wire: Wire) -> None:
    body = wire.claude(tools=[get_weather, get_time], tool_choice="get_time", **SETTINGS)
    assert body["tools"] == [anthropic_tool(*WEATHER), anthropic_tool(*TIME)]
    assert body["tool_choice"] == {"type": "tool", "name": "get_time"}
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 256)
    assert body["stop_sequences"] == ["END"]
    assert "stop" not in body


def test_bedrock_converse_sends_tool_config_and_inference_config(wire: Wire) -> None:
    body = wire.converse(tools=[get_weather, get_time], tool_choice="get_time", **SETTINGS)
    assert body["toolConfig"] == {
        "tools": [
            {"toolSpec": {"name": n, "description": d, "inputSchema": {"json": s}}}
            for n, d, s in (WEATHER, TIME)
        ],
        "toolChoice": {"tool": {"name": "get_time"}},
    }
    assert body["inferenceConfig"] == {
        "maxTokens": 256, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"],
    }  # fmt: skip


def test_bedrock_invoke_sends_the_anthropic_body(wire: Wire) -> None:
    body = wire.invoke(tools=[get_weather], tool_choice="required", **SETTINGS)
    assert body["tools"] == [anthropic_tool(*WEATHER)]
    assert body["tool_choice"] == {"type": "any"}
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 256)
    assert body["stop_sequences"] == ["END"]


def test_gemini_sends_function_declarations_and_generation_config(wire: Wire) -> None:
    body = wire.gemini(tools=[get_weather, get_time], tool_choice="get_time", **SETTINGS)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": n, "description": d, "parametersJsonSchema": s}
                for n, d, s in (WEATHER, TIME)
            ]
        }
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_time"]}
    }
    assert body["generationConfig"] == {
        "temperature": 0.5,
        "topP": 0.9,
        "maxOutputTokens": 256,
        "stopSequences": ["END"],
        "thinkingConfig": {"includeThoughts": True},
    }


def test_ollama_sends_function_tools_and_runtime_options(wire: Wire) -> None:
    """Through the ollama SDK, whose ``Tool`` type keeps each property's ``type``, ``items``,
    ``description`` and ``enum`` (Ollama's server reads no more of a property): a
    ``default`` stays out."""
    body = wire.ollama_chat(tools=[get_weather], options={"num_ctx": 4096}, **SETTINGS)
    properties = WEATHER_SCHEMA["properties"]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": properties["city"],
                        "unit": {"type": "string", "enum": ["c", "f"]},
                    },
                    "required": ["city"],
                },
            },
        }
    ]
    assert body["options"] == {
        "num_ctx": 4096, "temperature": 0.5, "top_p": 0.9, "num_predict": 256, "stop": ["END"],
    }  # fmt: skip
    assert "tool_choice" not in body


# ------------------------------------------------------------------ every tool choice

CHOICES: dict[str, tuple[str, Callable[[dict[str, Any]], Any], dict[str, Any]]] = {
    # provider: (runner, where the choice is in the body, choice -> expected value)
    "openai-chat": (
        "chat",
        lambda body: body.get("tool_choice"),
        {"auto": "auto", "required": "required", "none": "none",
         "get_time": {"type": "function", "function": {"name": "get_time"}}},
    ),
    "openai-responses": (
        "responses",
        lambda body: body.get("tool_choice"),
        {"auto": "auto", "required": "required", "none": "none",
         "get_time": {"type": "function", "name": "get_time"}},
    ),
    "anthropic": (
        "claude",
        lambda body: body.get("tool_choice"),
        {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"},
         "get_time": {"type": "tool", "name": "get_time"}},
    ),
    "bedrock-converse": (
        "converse",
        lambda body: body.get("toolConfig", {"absent": True}).get("toolChoice"),
        # Converse has no "none": the tools are left out, and so is toolConfig.
        {"auto": {"auto": {}}, "required": {"any": {}}, "none": None,
         "get_time": {"tool": {"name": "get_time"}}},
    ),
    "bedrock-invoke": (
        "invoke",
        lambda body: body.get("tool_choice"),
        {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"},
         "get_time": {"type": "tool", "name": "get_time"}},
    ),
    "gemini": (
        "gemini",
        lambda body: body.get("toolConfig"),
        {"auto": {"functionCallingConfig": {"mode": "AUTO"}},
         "required": {"functionCallingConfig": {"mode": "ANY"}},
         "none": {"functionCallingConfig": {"mode": "NONE"}},
         "get_time": {"functionCallingConfig": {"mode": "ANY",
                                                "allowedFunctionNames": ["get_time"]}}},
    ),
}  # fmt: skip


@pytest.mark.parametrize("choice", ["auto", "required", "none", "get_time"])
@pytest.mark.parametrize("provider", sorted(CHOICES))
def test_every_tool_choice_in_the_documented_shape(wire: Wire, provider: str, choice: str) -> None:
    runner, where, expected = CHOICES[provider]
    body = getattr(wire, runner)(tools=[get_weather, get_time], tool_choice=choice)
    assert where(body) == expected[choice]


@pytest.mark.parametrize("provider", sorted(CHOICES))
def test_no_tool_choice_is_sent_without_tools(wire: Wire, provider: str) -> None:
    """OpenAI answers 400 to a ``tool_choice`` without ``tools`` ("'tool_choice' is only
    allowed when 'tools' are specified"); no API needs one then."""
    runner, where, _ = CHOICES[provider]
    assert where(getattr(wire, runner)(tool_choice="none")) is None


def test_bedrock_converse_none_leaves_the_tools_out(wire: Wire) -> None:
    assert "toolConfig" not in wire.converse(tools=[get_weather], tool_choice="none")


def test_bedrock_converse_none_with_tool_calls_in_the_history_is_refused_before_sending(
    wire: Wire,
) -> None:
    """Converse requires ``toolConfig`` once the history holds ``toolUse`` blocks
    (docs.aws.amazon.com/bedrock/latest/userguide/tool-use.html), and has no ``none``."""
    pipe = BedrockPipe(BEDROCK_CLAUDE, client=wire.bedrock, tools=[get_weather, get_time])
    conversation = Conversation().add_user("Weather in Paris?")
    for call in conversation.run(pipe).tool_calls:
        conversation.add_tool_result(call.id, "18 C")
    pipe.tool_choice = "none"
    sent = len(wire.server.requests)
    with pytest.raises(UsageError, match="no tool_choice 'none'"):
        conversation.run(pipe)
    assert len(wire.server.requests) == sent


def test_ollama_sends_the_same_tools_on_both_transports(wire: Wire) -> None:
    """The lean transport posts the body the SDK would: the schema parts Ollama reads."""
    root = {"client": wire.http, "base_url": wire.server.url, "transport": "httpx"}
    lean = wire.body(OllamaPipe("qwen3", tools=[get_weather], **root))
    assert lean["tools"] == wire.ollama_chat(tools=[get_weather])["tools"]


def test_ollama_has_no_tool_choice_auto_and_none_only(wire: Wire) -> None:
    """Ollama's chat API has no ``tool_choice`` (docs.ollama.com/api/chat): ``"none"`` leaves
    the tools out; a forced choice cannot be sent and is refused at construction."""
    assert wire.ollama_chat(tools=[get_weather], tool_choice="auto")["tools"]
    assert not wire.ollama_chat(tools=[get_weather], tool_choice="none").get("tools")
    for choice in ("required", "get_weather"):
        with pytest.raises(UsageError, match="tool_choice"):
            OllamaPipe("qwen3", tools=[get_weather], tool_choice=choice)


# --------------------------------------------------------------------- what every pipe takes

PIPES: dict[str, Callable[..., ProviderPipe]] = {
    "openai-chat": lambda **o: OpenAIChatPipe("m", api_key=KEY, **o),
    "openai-responses": lambda **o: OpenAIResponsesPipe("m", api_key=KEY, **o),
    "anthropic": lambda **o: AnthropicPipe("m", api_key=KEY, **o),
    "gemini": lambda **o: GeminiPipe("m", api_key=KEY, **o),
    "ollama": lambda **o: OllamaPipe("m", **o),
    "openrouter": lambda **o: OpenRouterPipe("m", api_key=KEY, **o),
}


@pytest.mark.parametrize("provider", sorted([*PIPES, "bedrock"]))
def test_every_pipe_keeps_the_options_as_public_attributes(wire: Wire, provider: str) -> None:
    given = {"name": "get_time", "description": "Time.", "parameters": TIME_SCHEMA}
    pipe = _pipe(wire, provider, tools=[get_weather, {"type": "function", "function": given}])
    assert [item.name for item in pipe.tools] == ["get_weather", "get_time"]
    assert all(isinstance(item, Tool) for item in pipe.tools)
    assert pipe.tools[1].parameters == TIME_SCHEMA
    pipe = _pipe(wire, provider, temperature=0.3, top_p=0.5, max_tokens=7)
    assert (pipe.temperature, pipe.top_p, pipe.max_tokens, pipe.tool_choice) == (0.3, 0.5, 7, None)


def _pipe(wire: Wire, provider: str, **options: Any) -> ProviderPipe:
    if provider == "bedrock":
        return BedrockPipe("m", client=wire.bedrock, **options)
    return PIPES[provider](**options)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"tool_choice": "get_time", "tools": [get_weather]}, "names no tool"),
        ({"tool_choice": "required"}, "needs tools="),
        ({"tool_choice": 3, "tools": [get_weather]}, "tool_choice must be"),
        ({"tools": [get_weather, get_weather]}, "more than once"),
        ({"tools": get_weather}, "a list of tools"),
        ({"tools": [42]}, "tools= holds int"),
        ({"tools": [{"type": "function"}]}, "OpenAI function shape"),
        ({"temperature": -1}, "temperature must be"),
        ({"temperature": True}, "temperature must be a number"),
        ({"top_p": 1.5}, "top_p must be from 0 to 1"),
        ({"max_tokens": 0}, "max_tokens must be a positive"),
        ({"stop": []}, "stop"),
        ({"stop": ["", "x"]}, "stop must be"),
    ],
)
def test_bad_options_are_refused_at_construction_naming_what_to_fix(
    options: dict[str, Any], words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        OpenAIChatPipe("m", api_key=KEY, **options)


def test_extra_body_still_wins_over_the_built_fields(wire: Wire) -> None:
    body = wire.chat(
        tools=[get_weather], temperature=0.5, extra_body={"temperature": 0.1, "tools": []}
    )
    assert (body["temperature"], body["tools"]) == (0.1, [])


def test_gemini_keeps_native_tools_beside_function_tools(wire: Wire) -> None:
    body = wire.gemini(tools=[get_time, {"googleSearch": {}}])
    assert body["tools"] == [
        {"functionDeclarations": [{"name": TIME[0], "description": TIME[1],
                                   "parametersJsonSchema": TIME_SCHEMA}]},
        {"googleSearch": {}},
    ]  # fmt: skip


def test_bedrock_refuses_what_its_apis_cannot_carry(wire: Wire) -> None:
    with pytest.raises(UsageError, match="api='converse'"):
        BedrockPipe("us.deepseek.r1-v1:0", client=wire.bedrock, api="invoke", tools=[get_time])
