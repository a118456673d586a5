"""A run in a process of its own, for the lease tests: ``python -m tests.hub.crashing_writer
URL STREAM_ID LEASE FIRST_PAUSE``. It reasons slowly (the parent kills or stops it mid-stream)
and prints how its run ended as one JSON line, if it gets that far."""

from __future__ import annotations

import json
import sys
from typing import Any

from reasoning_stream import ReasoningDelta, TextDelta
from reasoning_stream.hub import PublishError, RedisHub
from reasoning_stream.testing import ScriptedPipe

STEPS = 200


def script(first_pause: float) -> list[Any]:
    items: list[Any] = [first_pause] if first_pause else []
    items += [item for n in range(STEPS) for item in (ReasoningDelta(f"r{n} "), 0.02)]
    return [*items, TextDelta("answer")]


def main() -> None:
    url, stream_id, lease, first_pause = sys.argv[1:5]
    hub = RedisHub(url, lease=float(lease))
    try:
        result = hub.run(stream_id, ScriptedPipe(script(float(first_pause))), "go")
        outcome = {"ended": "returned", "status": result.status}
    except PublishError as error:
        assert error.result is not None
        outcome = {"ended": "PublishError", "message": str(error), "text": error.result.text}
    finally:
        hub.close()
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
