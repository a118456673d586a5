"""The writer of the cross-process sealing test, in a process of its own:
``python -m tests.hub.sealed_writer URL STREAM_ID KEY``.

Runs a model that signs its reasoning through a ``RedisHub`` given the seal key (base64 text),
and prints the signature it made as JSON: only this process ever holds it raw.
"""

from __future__ import annotations

import json
import secrets
import sys

from reasoning_stream import OpaqueState, ReasoningDelta, ReasoningState, TextDelta
from reasoning_stream.hub import RedisHub
from reasoning_stream.testing import ScriptedPipe


def main() -> None:
    url, stream_id, key = sys.argv[1:4]
    signature = "sig-" + secrets.token_urlsafe(24)
    state = ReasoningState("scripted", "scripted", "signature", signature, block=0)
    script = [ReasoningDelta("weighing it"), OpaqueState(state), TextDelta("42")]
    with RedisHub(url, seal_keys=[key]) as hub:
        result = hub.run(stream_id, ScriptedPipe(script), "go")
    print(json.dumps({"signature": signature, "status": result.status}), flush=True)


if __name__ == "__main__":
    main()
