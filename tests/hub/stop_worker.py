"""One side of the three-process stop test, in a process of its own:
``python -m tests.hub.stop_worker MODE URL STREAM_ID [sync|async]``.

- ``run``: runs a model that reasons, then stays silent (sync ``hub.run`` or ``hub.arun``),
  and prints how it ended (status, text, reasoning, seconds since it was told to stop).
- ``stop``: prints ``hub.stop(stream_id)`` (twice: the second must be False).
- ``read``: follows the stream and prints its entries (chunk, final, status) as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import RedisHub
from reasoning_stream.testing import ScriptedPipe

SILENCE = 60.0


def script() -> list[Any]:
    return [ReasoningDelta("thinking "), ReasoningDelta("hard"), SILENCE, TextDelta("never")]


def main() -> None:
    mode, url, stream_id = sys.argv[1:4]
    flavour = sys.argv[4] if len(sys.argv) > 4 else "sync"
    with RedisHub(url) as hub:
        if mode == "run":
            if flavour == "sync":
                result = hub.run(stream_id, ScriptedPipe(script()), "go")
            else:
                result = anyio.run(hub.arun, stream_id, ScriptedPipe(script()), "go")
            outcome = {
                "status": result.status,
                "text": result.text,
                "reasoning": result.model_reasoning,
                "ended": time.time(),
            }
            print(json.dumps(outcome), flush=True)
        elif mode == "stop":
            first = hub.stop(stream_id)
            print(json.dumps({"stopped": [first, hub.stop(stream_id)], "at": time.time()}))
        else:

            async def follow() -> list[dict[str, Any]]:
                return [
                    {"chunk": entry.chunk, "final": entry.final, "status": entry.status}
                    async for entry in hub.subscribe(stream_id, timeout=20)
                ]

            print(json.dumps({"entries": anyio.run(follow), "ended": time.time()}), flush=True)


if __name__ == "__main__":
    main()
