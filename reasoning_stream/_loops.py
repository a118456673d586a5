"""Event-loop detection: is this thread running an event loop a sync call would block?

``Pipe.run()`` and ``Pipeline.run()`` block until the stream ends; called from a coroutine they
stall every other task of that loop. These helpers let them say so once, naming the async twin.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["running_event_loop", "warn_if_loop_running"]


def running_event_loop() -> str | None:
    """``"asyncio"`` or ``"trio"`` when this thread is running that event loop, else ``None``.

    >>> running_event_loop() is None
    True
    """
    # Neither loop is imported here: only a loop whose module is loaded can be running, and
    # importing asyncio would cost every `import reasoning_stream` about 25 ms.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return "asyncio"
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    return None


def warn_if_loop_running(owner: object, method: str, async_method: str) -> bool:
    """Warn that a sync ``method`` of ``owner`` would block the running event loop.

    Returns whether it warned. The warning points at the caller's line.
    """
    loop = running_event_loop()
    if loop is None:
        return False
    warnings.warn(
        f"{type(owner).__name__}.{method}() was called inside a running {loop} event loop: "
        f"it blocks the loop until the stream ends; `await` its {async_method}() there "
        f"instead, or call {method}() from a worker thread",
        RuntimeWarning,
        stacklevel=3,
    )
    return True
