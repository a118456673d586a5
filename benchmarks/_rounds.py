"""Interleaved rounds on a busy machine: medians and spreads of side-by-side ratios.

A shared machine drifts while a benchmark runs, so each round times every contender once, back to
back, and a ratio is taken within the round. Tables report the median over rounds and the spread
(lowest to highest), never a single best.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def cpu_seconds(work: Callable[[], object], *, repeat: int = 1) -> float:
    """CPU seconds of the fastest of ``repeat`` calls (a round's one figure for ``work``)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def median(values: Sequence[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """``median [low-high]`` of ``values``, formatted with ``fmt``."""
    low, high = min(values), max(values)
    return f"{fmt.format(median(values))} [{fmt.format(low)}-{fmt.format(high)}]"
