"""Tools for testing code that uses reasoning-stream, offline and without API keys.

``ScriptedPipe`` replays a script of events through the hooks; ``WireServer`` serves recorded
provider wire transcripts on 127.0.0.1 so the real SDK clients can be pointed at it.
"""

from ._scripted import ScriptedPipe, ScriptItem
from ._wire import RecordedRequest, Reply, ReplyOptions, Transcript, TranscriptFormat, WireServer

__all__ = [
    "RecordedRequest",
    "Reply",
    "ReplyOptions",
    "ScriptItem",
    "ScriptedPipe",
    "Transcript",
    "TranscriptFormat",
    "WireServer",
]
