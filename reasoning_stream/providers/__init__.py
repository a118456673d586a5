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

from typing import TYPE_CHECKING, Any

from ._spec import pipe_class, pipe_names

if TYPE_CHECKING:
    from .anthropic import AnthropicPipe as AnthropicPipe
    from .bedrock import BedrockPipe as BedrockPipe
    from .gemini import GeminiPipe as GeminiPipe
    from .ollama import OllamaPipe as OllamaPipe
    from .openai_chat import OpenAIChatPipe as OpenAIChatPipe
    from .openai_responses import OpenAIResponsesPipe as OpenAIResponsesPipe
    from .openrouter import OpenRouterPipe as OpenRouterPipe

# The names come from the registry, the one provider list; the imports above are for type
# checkers only (a test keeps them equal to the registry's).
__all__ = sorted(pipe_names())


def __getattr__(name: str) -> Any:
    value = pipe_class(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
