"""A tool loop recorded in a store: each step saved as it completes.

Every step is a recorded run (:mod:`._run`: the pending generation stored before the call, the
answer appended after it, retried on a conflict), and the results of its tool calls are
appended, in call order, as soon as they are all in. A worker that dies mid-loop leaves every
completed step in the store, and the step under way as an ``"in_progress"`` record. Store calls
block, so the async driver makes them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from .._capture import PipeResult
from .._events import ToolResult
from ..conversation import Conversation
from ..conversation._conversation import RecordingStore
from ..conversation._tool_loop import over_budget
from ._run import Store

__all__ = ["StoredSteps"]


class StoredSteps:
    """The steps of a tool loop on the stored conversation ``conversation_id``."""

    def __init__(
        self, store: Store, recorder: RecordingStore, conversation_id: str, *, repair: bool
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.conversation_id = conversation_id
        self.repair = repair
        self.latest: Conversation | None = None
        """The conversation as stored after the latest step (for the budget hook)."""

    def run_step(self, pipe: Any) -> PipeResult:
        result, self.latest = self.recorder._run_with(
            self.conversation_id, pipe, None, repair=self.repair
        )
        return result

    async def arun_step(self, pipe: Any) -> PipeResult:
        result, self.latest = await self.recorder._arun_with(
            self.conversation_id, pipe, None, repair=self.repair
        )
        return result

    def add_results(self, results: Sequence[ToolResult]) -> None:
        # Each append is atomic and goes after whatever is stored, so another writer's turn
        # is never lost.
        for result in results:
            message = result.to_message()
            self.store.append(self.conversation_id, message)
            if self.latest is not None:
                self.latest.add_message(message)

    async def aadd_results(self, results: Sequence[ToolResult]) -> None:
        await anyio.to_thread.run_sync(self.add_results, results)

    def over_budget(self) -> bool:
        return self.latest is not None and over_budget(self.latest)
