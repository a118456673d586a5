"""``conform(..., live=True)``: one small real tool loop through the gateway to the real API.

Nothing is replayed: the model answers for real, so the rules are the ones a real provider
enforces itself. It must call the weather tool; the follow-up carries its reasoning back
through the gateway, and the provider refuses a signature, redacted block or encrypted item
the gateway damaged (Anthropic, Gemini and Responses verify them). The key comes from the
provider's usual variable and appears nowhere in the report.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from reasoning_stream.testing._conform_loop import build_pipe, drive_loop
from reasoning_stream.testing._conform_report import ConformRow
from reasoning_stream.testing._conform_rules import LoopRun
from reasoning_stream.testing._conform_shapes import Shape

if TYPE_CHECKING:
    from reasoning_stream.providers._spec import ProviderSpec

__all__ = ["live_rows"]


def live_rows(
    shape: Shape, spec: ProviderSpec, base_url: str, model: str, key: str
) -> list[ConformRow]:
    """The rows of one live tool loop of ``shape`` through the gateway at ``base_url``."""
    pipe = build_pipe(shape, spec, base_url, model, key, stream=True)
    run = LoopRun("live", True, ())
    drive_loop(pipe, run, steps=2)
    doc = next((rule.doc for rule in shape.rules), shape.reasoning_doc)
    first = run.result(0)
    second = run.result(1)
    states = Counter(state.kind for state in first.reasoning_state) if first else Counter()
    kept = ", ".join(f"{count} {kind}" for kind, count in sorted(states.items())) or "no"
    rows = [
        ConformRow(
            "live_tool_call",
            bool(first and first.tool_calls),
            _first_step(run, model, kept),
            shape.reasoning_doc,
        ),
        ConformRow(
            "live_follow_up_accepted",
            second is not None and run.error is None,
            (
                f"step 2 sent the tool results back with {kept} opaque state(s) and the "
                "reasoning the passback policy keeps; "
                + (
                    f"the provider answered ({second.status}, {len(second.text)} characters)"
                    if second is not None
                    else f"it failed: {run.error or 'no second step (no tool call)'}"
                )
            ),
            doc,
        ),
    ]
    reasoning = "".join(step.reasoning for step in run.steps)
    text = "".join(step.text for step in run.steps)
    leaked = any(tag in text for tag in ("<think>", "<thinking>", "</think>"))
    rows.append(
        ConformRow(
            "reasoning_as_reasoning",
            (bool(reasoning) or bool(states)) and not leaked,
            f"{len(reasoning)} characters of reasoning arrived as reasoning deltas and "
            f"{kept} opaque state(s) beside them; the answer text "
            + ("holds reasoning tags" if leaked else "holds no reasoning tags"),
            shape.reasoning_doc,
        )
    )
    return rows


def _first_step(run: LoopRun, model: str, kept: str) -> str:
    first: Any = run.result(0)
    if first is None:
        return f"step 1 to {model} failed: {run.error}"
    calls = ", ".join(call.name for call in first.tool_calls) or "no tool"
    return (
        f"step 1 asked {model} for the weather with one tool declared; it called {calls}, "
        f"with {len(first.model_reasoning)} characters of reasoning and {kept} opaque state(s)"
    )
