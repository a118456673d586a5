"""The channel beyond one process: every run's channel as an append-only, resumable log.

One run, many readers, in this process or in others: a browser tab that reconnects, a
logger, a second worker behind a load balancer. :class:`MemoryHub` keeps the logs in this
process; :class:`RedisHub` keeps them in Redis Streams (``pip install
'reasoning-stream[redis]'``). Both have the same API and the same laws::

    hub = MemoryHub()
    result = hub.run("chat-42", pipe, "Why is the sky blue?")     # or: await hub.arun(...)
    async for entry in hub.subscribe("chat-42", after=last_seen_id):
        print(entry.chunk, end="")

``"".join(entry.chunk for entry in entries)`` is exactly the channel a streaming callback saw;
resuming with ``after=entry.id`` loses and repeats nothing; every run ends with one final
entry carrying its status; opaque provider state is never published.
"""

from ._base import (
    Hub,
    HubError,
    InvalidEntryIdError,
    PublishError,
    Runnable,
    StreamExistsError,
    StreamExpiredError,
    StreamNotFoundError,
)
from ._entry import Entry, event_from_dict, event_to_dict
from ._memory import MemoryHub
from ._redis import RedisHub

__all__ = [
    "Entry",
    "Hub",
    "HubError",
    "InvalidEntryIdError",
    "MemoryHub",
    "PublishError",
    "RedisHub",
    "Runnable",
    "StreamExistsError",
    "StreamExpiredError",
    "StreamNotFoundError",
    "event_from_dict",
    "event_to_dict",
]
