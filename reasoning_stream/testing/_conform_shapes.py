"""The wire shapes the conformance probe drives: per ``--provider``, its loops and rules.

A shape names the transcripts each loop replays (one streamed reply per step), how to read a
request's step and whether it asks for a stream, the tool the loop declares, and the rules
(``_conform_rules``) that check it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reasoning_stream.testing._conform_rules import (
    ANTHROPIC_DOC,
    DEEPSEEK_DOC,
    GEMINI_DOC,
    OLLAMA_DOC,
    OPENROUTER_DOC,
    RESPONSES_DOC,
    Rule,
    anthropic_blocks_rule,
    anthropic_order,
    chat_echo,
    gemini_signature,
    responses_item,
    sends_reasoning,
    sends_states,
)
from reasoning_stream.testing._conform_wire import anthropic_omitted, ollama_message
from reasoning_stream.testing._transcript import Transcript
from reasoning_stream.testing._wire import RecordedRequest

__all__ = ["SHAPES", "Shape"]


def _has(body: Any, key: str, test: Callable[[Mapping[str, Any]], bool]) -> bool:
    """Whether any item of ``body[key]``, or any block inside one, passes ``test``."""
    for item in (body or {}).get(key) or ():
        if not isinstance(item, Mapping):
            continue
        if test(item):
            return True
        inner = item.get("content") if key == "messages" else item.get("parts")
        if isinstance(inner, list) and any(isinstance(b, Mapping) and test(b) for b in inner):
            return True
    return False


@dataclass(frozen=True)
class Shape:
    """A wire shape the probe knows: its provider id, transcripts' model, loops and rules.

    ``loops`` name each loop's streamed replies, one per step (the one-shot replies are
    what they add up to); ``step_of`` reads a request body's step (1 once it carries a
    tool result); ``streams`` says whether a request asks for a stream.
    """

    provider_id: str
    wire: str
    model: str
    loops: Mapping[str, tuple[str, ...]]
    rules: tuple[Rule, ...]
    step_of: Callable[[Any], int]
    streams: Callable[[RecordedRequest, Any], bool]
    tool: Mapping[str, Any]
    stream_doc: str
    """The provider's streaming reference: what a stream adds up to, as a one-shot reply."""
    reasoning_doc: str
    """Where the provider documents how its reasoning streams."""

    def transcripts(self, loop: str) -> tuple[Transcript, ...]:
        """The streamed replies of ``loop``, loaded (derived ones built)."""
        loaded = []
        for name in self.loops[loop]:
            if name.endswith(":omitted"):
                loaded.append(anthropic_omitted(Transcript.load(name.removesuffix(":omitted"))))
            else:
                loaded.append(Transcript.load(name))
        return tuple(loaded)


def _body_streams(request: RecordedRequest, body: Any) -> bool:
    return isinstance(body, Mapping) and body.get("stream") is True


_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
_TOOL = ("get_weather", "Current weather for a city.")
_CHAT_TOOL = {
    "tools": [
        {
            "type": "function",
            "function": {"name": _TOOL[0], "description": _TOOL[1], "parameters": _SCHEMA},
        }
    ]
}


def _chat_step(body: Any) -> int:
    return int(_has(body, "messages", lambda message: message.get("role") == "tool"))


SHAPES: dict[str, Shape] = {
    "anthropic": Shape(
        provider_id="anthropic",
        stream_doc="https://docs.anthropic.com/en/docs/build-with-claude/streaming",
        reasoning_doc="https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#streaming-thinking",
        wire="anthropic",
        model="claude-sonnet-4-5",
        loops={
            "interleaved": ("anthropic_interleaved_tool", "anthropic_tool_answer"),
            "omitted": ("anthropic_interleaved_tool:omitted", "anthropic_tool_answer"),
        },
        rules=(
            Rule(
                "signature_byte_for_byte",
                ANTHROPIC_DOC,
                "interleaved",
                anthropic_blocks_rule("thinking", "signature", "signature", "signatures"),
                sends_states("signature"),
            ),
            Rule(
                "signature_only_block_kept",
                ANTHROPIC_DOC,
                "omitted",
                anthropic_blocks_rule(
                    "thinking", "signature", "signature", "signature-only thinking blocks"
                ),
                sends_states("signature"),
            ),
            Rule(
                "redacted_block_kept",
                ANTHROPIC_DOC,
                "interleaved",
                anthropic_blocks_rule("redacted_thinking", "data", "redacted", "redacted blocks"),
                sends_states("redacted"),
            ),
            Rule(
                "block_order",
                ANTHROPIC_DOC,
                "interleaved",
                anthropic_order,
                sends_states("signature"),
            ),
        ),
        step_of=lambda body: int(_has(body, "messages", lambda b: b.get("type") == "tool_result")),
        streams=_body_streams,
        tool={"tools": [{"name": _TOOL[0], "description": _TOOL[1], "input_schema": _SCHEMA}]},
    ),
    "responses": Shape(
        provider_id="openai-responses",
        stream_doc="https://platform.openai.com/docs/api-reference/responses-streaming",
        reasoning_doc="https://platform.openai.com/docs/guides/reasoning#reasoning-summaries",
        wire="responses",
        model="o4-mini",
        loops={"function_call": ("openai_responses_function_call", "openai_responses_followup")},
        rules=(
            Rule(
                "reasoning_item_before_follower",
                RESPONSES_DOC,
                "function_call",
                responses_item,
                sends_states("encrypted"),
            ),
        ),
        step_of=lambda body: int(
            _has(body, "input", lambda item: item.get("type") == "function_call_output")
        ),
        streams=_body_streams,
        tool={
            "tools": [
                {
                    "type": "function",
                    "name": _TOOL[0],
                    "description": _TOOL[1],
                    "parameters": _SCHEMA,
                }
            ]
        },
    ),
    "openai": Shape(
        provider_id="openai-chat",
        stream_doc="https://platform.openai.com/docs/api-reference/chat-streaming",
        reasoning_doc="https://api-docs.deepseek.com/guides/reasoning_model",
        wire="chat",
        model="deepseek-reasoner",
        loops={"tool_call": ("openai_chat_tool_call", "openai_chat_no_reasoning")},
        rules=(
            Rule(
                "reasoning_content_echoed",
                DEEPSEEK_DOC,
                "tool_call",
                chat_echo("reasoning_content", "text"),
                sends_reasoning,
            ),
        ),
        step_of=_chat_step,
        streams=_body_streams,
        tool=_CHAT_TOOL,
    ),
    "openrouter": Shape(
        provider_id="openrouter",
        stream_doc="https://openrouter.ai/docs/api-reference/streaming",
        reasoning_doc="https://openrouter.ai/docs/use-cases/reasoning-tokens",
        wire="chat",
        model="google/gemini-2.5-pro",
        loops={"tool_call": ("openrouter_tool_call", "openrouter_no_reasoning")},
        rules=(
            Rule(
                "reasoning_details_echoed",
                OPENROUTER_DOC,
                "tool_call",
                chat_echo("reasoning_details", "reasoning_details"),
                sends_states("reasoning_details"),
            ),
        ),
        step_of=_chat_step,
        streams=_body_streams,
        tool=_CHAT_TOOL,
    ),
    "gemini": Shape(
        provider_id="gemini",
        stream_doc="https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent",
        reasoning_doc="https://ai.google.dev/gemini-api/docs/thinking#summaries",
        wire="gemini",
        model="gemini-3-pro-preview",
        loops={"tool_call": ("gemini_tool_call", "gemini_tool_answer")},
        rules=(
            Rule(
                "thought_signature_on_part",
                GEMINI_DOC,
                "tool_call",
                gemini_signature,
                sends_states("signature"),
            ),
        ),
        step_of=lambda body: int(_has(body, "contents", lambda part: "functionResponse" in part)),
        streams=lambda request, body: "streamGenerateContent" in request.path,
        tool={
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": _TOOL[0], "description": _TOOL[1], "parameters": _SCHEMA}
                    ]
                }
            ]
        },
    ),
    "ollama": Shape(
        provider_id="ollama",
        stream_doc=OLLAMA_DOC,
        reasoning_doc="https://ollama.com/blog/thinking",
        wire="ollama",
        model="qwen3",
        loops={"tool_call": ("ollama_chat_tool_call", "ollama_chat_plain")},
        rules=(
            Rule(
                "thinking_echoed",
                OLLAMA_DOC,
                "tool_call",
                chat_echo("thinking", "text", read=ollama_message),
                sends_reasoning,
            ),
        ),
        step_of=_chat_step,
        # Ollama streams unless a request says "stream": false.
        streams=lambda request, body: (
            not (isinstance(body, Mapping) and body.get("stream") is False)
        ),
        tool={"tools": _CHAT_TOOL["tools"]},
    ),
}
"""The wire shapes the probe drives, by ``--provider`` name."""
