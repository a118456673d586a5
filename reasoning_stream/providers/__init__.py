"""Provider pipes: one class per provider API.

Each pipe takes ``model`` and ``client=`` (the SDK's sync or async client) or ``base_url=`` /
``api_key=``. The SDKs are optional extras, imported only when a pipe needs them::

    pip install 'reasoning-stream[openai]'     # OpenAIChatPipe, OpenAIResponsesPipe
    pip install 'reasoning-stream[anthropic]'  # AnthropicPipe
    pip install 'reasoning-stream[bedrock]'    # BedrockPipe (boto3)
    pip install 'reasoning-stream[ollama]'     # OllamaPipe
    # OpenRouterPipe and GeminiPipe need only httpx and httpx-sse.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._anthropic import AnthropicPipe
    from ._bedrock import BedrockPipe
    from ._gemini import GeminiPipe
    from ._ollama import OllamaPipe
    from ._openai_chat import OpenAIChatPipe
    from ._openai_responses import OpenAIResponsesPipe
    from ._openrouter import OpenRouterPipe

__all__ = [
    "AnthropicPipe",
    "BedrockPipe",
    "GeminiPipe",
    "OllamaPipe",
    "OpenAIChatPipe",
    "OpenAIResponsesPipe",
    "OpenRouterPipe",
]

_MODULES = {
    "AnthropicPipe": "._anthropic",
    "BedrockPipe": "._bedrock",
    "GeminiPipe": "._gemini",
    "OllamaPipe": "._ollama",
    "OpenAIChatPipe": "._openai_chat",
    "OpenAIResponsesPipe": "._openai_responses",
    "OpenRouterPipe": "._openrouter",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
