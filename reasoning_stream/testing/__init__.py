"""Tools for testing code that uses reasoning-stream, offline and without API keys.

``ScriptedPipe`` replays a script of events through the hooks; ``WireServer`` serves recorded
provider wire transcripts on 127.0.0.1 so the real SDK clients can be pointed at it;
``conform`` checks that a gateway or proxy keeps reasoning intact on its way through.
"""

from ._conform import ConformReport, ConformRow, conform
from ._scripted import ScriptedPipe, ScriptItem
from ._wire import RecordedRequest, Reply, ReplyOptions, Transcript, TranscriptFormat, WireServer

__all__ = [
    "ConformReport",
    "ConformRow",
    "RecordedRequest",
    "Reply",
    "ReplyOptions",
    "ScriptItem",
    "ScriptedPipe",
    "Transcript",
    "TranscriptFormat",
    "WireServer",
    "conform",
]
