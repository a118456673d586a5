"""Browsers: a hub's streams as server-sent events (``pip install 'reasoning-stream[web]'``).

``create_app(hub)`` is a Starlette app serving ``GET /streams/{stream_id}?protocol=...`` in
three protocols: ``channel`` (our entries), ``ag-ui`` (AG-UI events) and ``vercel-ui`` (the
AI SDK UI message stream v1). Every event carries the id of the entry it came from, so a
browser ``EventSource`` that reconnects with ``Last-Event-ID`` loses and repeats nothing.
With ``seal_keys=[key, *older]`` the streams also carry each run's opaque reasoning state,
sealed, for clients that keep the history themselves (``Conversation.from_ag_ui`` and
``Conversation.from_ui_messages`` open it again).
``create_app(hub, models={...}, store=...)`` also serves ``POST /v1/chat/completions`` for
OpenAI chat clients, keeping passback exact for clients that send back role and content only.
"""

from ._app import create_app
from ._protocols import (
    PROTOCOLS,
    AGUITranslator,
    ChannelTranslator,
    SSEEvent,
    VercelUITranslator,
    translator_for,
)

__all__ = [
    "PROTOCOLS",
    "AGUITranslator",
    "ChannelTranslator",
    "SSEEvent",
    "VercelUITranslator",
    "create_app",
    "translator_for",
]
