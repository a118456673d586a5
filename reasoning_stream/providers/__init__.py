"""Provider pipes: one class per provider API.

Each pipe takes ``model`` and ``client=`` (the SDK's sync or async client) or ``base_url=`` /
``api_key=``. The SDKs are optional extras, imported only when a pipe needs them::

    pip install 'reasoning-stream[openai]'     # OpenAIChatPipe, OpenAIResponsesPipe
    pip install 'reasoning-stream[anthropic]'  # AnthropicPipe
    pip install 'reasoning-stream[bedrock]'    # BedrockPipe (boto3)
    pip install 'reasoning-stream[ollama]'     # OllamaPipe
    # OpenRouterPipe and GeminiPipe need only httpx and httpx-sse.

One package per provider API (``openai_chat``, ``openai_responses``, ``openrouter``,
``anthropic``, ``bedrock``, ``gemini``, ``ollama``), each with ``translate.py`` (wire -> events),
``request.py`` (history -> request), ``effort.py`` (the effort plan) and, in its
``__init__.py``, the pipe and its ``ProviderSpec``; ``_spec.py`` is the registry core asks.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .anthropic import AnthropicPipe
    from .bedrock import BedrockPipe
    from .gemini import GeminiPipe
    from .ollama import OllamaPipe
    from .openai_chat import OpenAIChatPipe
    from .openai_responses import OpenAIResponsesPipe
    from .openrouter import OpenRouterPipe

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
    "AnthropicPipe": ".anthropic",
    "BedrockPipe": ".bedrock",
    "GeminiPipe": ".gemini",
    "OllamaPipe": ".ollama",
    "OpenAIChatPipe": ".openai_chat",
    "OpenAIResponsesPipe": ".openai_responses",
    "OpenRouterPipe": ".openrouter",
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
