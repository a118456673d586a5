"""History turns into an Ollama ``chat`` or ``generate`` call.

Ollama keeps no reasoning state between turns, so no opaque state is ever sent back.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ..._exceptions import UsageError
from ..._turns import HistoryTurn
from ...conversation._history import tool_call_arguments
from .._clients import require
from .translate import text_of

if TYPE_CHECKING:
    from .._pipe import ProviderPipe

__all__ = [
    "accepted_keywords",
    "chat_messages",
    "chat_tools",
    "content_text",
    "generate_prompt",
    "runtime_options",
]

# Fields of a history message that Ollama understands besides role/content/tool calls.
_PASSTHROUGH_MESSAGE_KEYS = ("images", "tool_name")


@cache
def accepted_keywords(api: str) -> frozenset[str]:
    """The keyword arguments the installed SDK's ``Client.chat``/``generate`` accept."""
    ollama = require("ollama", "ollama")
    parameters = inspect.signature(getattr(ollama.Client, api)).parameters
    return frozenset(parameters) - {"self"}


def chat_tools(pipe: ProviderPipe) -> list[dict[str, Any]]:
    """The pipe's tools for ``/api/chat``, in OpenAI's function shape, as the SDK's ``Tool``
    type and docs.ollama.com/api/chat describe them. Ollama has no ``tool_choice``:
    ``"none"`` leaves the tools out of the request (``"auto"`` is what Ollama does)."""
    if pipe.tool_choice == "none":
        return []
    tools = []
    for tool in pipe.tools:
        shaped = tool.to_openai()
        shaped["function"]["parameters"] = _parameters(tool.parameters)
        tools.append(shaped)
    return tools


_PARAMETER_KEYS = ("type", "$defs", "items", "required", "properties")
_PROPERTY_KEYS = ("type", "items", "description", "enum")


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a schema Ollama reads: its SDK's ``Tool.Function.Parameters`` keeps
    ``type``, ``$defs``, ``items``, ``required`` and each property's ``type``, ``items``,
    ``description`` and ``enum`` (the server's ``api.ToolFunction`` reads the same), so both
    transports send exactly that."""
    kept = {key: schema[key] for key in _PARAMETER_KEYS if key in schema}
    properties = kept.get("properties")
    if isinstance(properties, Mapping):
        kept["properties"] = {
            name: {key: value[key] for key in _PROPERTY_KEYS if key in value}
            if isinstance(value, Mapping)
            else value
            for name, value in properties.items()
        }
    return kept


def runtime_options(pipe: ProviderPipe, given: Mapping[str, Any]) -> dict[str, Any]:
    """``options``: the pipe's ``options=`` with its ``temperature``, ``top_p``,
    ``max_tokens`` (``num_predict``) and ``stop`` on top (docs.ollama.com/modelfile#parameter)."""
    return {**given, **pipe.sampling_fields(max_tokens="num_predict")}


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI-style part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            text_of(part.get("text"))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", None)
        )
    return ""


def chat_messages(turns: Sequence[HistoryTurn]) -> list[dict[str, Any]]:
    """The ``messages`` of a chat call: content, tool calls, tool names, and the ``thinking``
    of the current tool loop's assistant turns."""
    messages: list[dict[str, Any]] = []
    tool_names: dict[str, str] = {}
    # The templates render thinking only after the last user message (the current tool loop).
    loop_start = 1 + max(
        (index for index, turn in enumerate(turns) if turn.message.get("role") == "user"),
        default=-1,
    )
    for index, turn in enumerate(turns):
        source = turn.message
        role = source.get("role")
        if role == "developer":
            role = "system"
        message: dict[str, Any] = {
            "role": role,
            "content": content_text(source.get("content")),
        }
        for key in _PASSTHROUGH_MESSAGE_KEYS:
            if source.get(key):
                message[key] = source[key]
        if role == "assistant" and source.get("tool_calls"):
            calls = []
            for call in source["tool_calls"]:
                function = call.get("function") or {}
                name = text_of(function.get("name"))
                if call.get("id"):
                    tool_names[str(call["id"])] = name
                arguments = tool_call_arguments(
                    function.get("arguments"), name, provider_label="Ollama"
                )
                calls.append({"function": {"name": name, "arguments": arguments}})
            message["tool_calls"] = calls
        elif role == "tool" and "tool_name" not in message:
            tool_name = source.get("name") or tool_names.get(str(source.get("tool_call_id")))
            if tool_name:
                message["tool_name"] = tool_name
        if role == "assistant" and turn.reasoning and index >= loop_start:
            # The passback policy put the turn's own reasoning here (current tool loop).
            message["thinking"] = turn.reasoning
        # Nothing else: Ollama keeps no opaque state, so none is ever re-sent.
        messages.append(message)
    return messages


def generate_prompt(turns: Sequence[HistoryTurn]) -> dict[str, Any]:
    """The ``prompt`` (and ``system``) of a generate call; other roles are a ``UsageError``."""
    system: list[str] = []
    user: list[str] = []
    for turn in turns:
        role = turn.message.get("role")
        text = content_text(turn.message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "user":
            user.append(text)
        else:
            raise UsageError(
                f"api='generate' takes a prompt, not a conversation with {role!r} turns; "
                "use OllamaPipe(api='chat') for multi-turn history"
            )
    fields: dict[str, Any] = {"prompt": "\n\n".join(user)}
    if system:
        fields["system"] = "\n\n".join(system)
    return fields
