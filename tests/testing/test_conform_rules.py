"""Laws of the probe's rule checks, run as pure functions over recorded runs (no servers).

The oracle is the damage itself: the faithful tool turn is built here from the transcript by
hand, and any change hypothesis makes to its reasoning blocks (dropped, moved, altered) must
fail at least one Anthropic rule, while the faithful turn passes every one.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reasoning_stream.testing._conform_rules import LoopRun
from reasoning_stream.testing._conform_shapes import SHAPES
from reasoning_stream.testing._conform_wire import anthropic_blocks
from reasoning_stream.testing._wire import RecordedRequest

SHAPE = SHAPES["anthropic"]
TRANSCRIPTS = SHAPE.transcripts("interleaved")
FAITHFUL = anthropic_blocks(TRANSCRIPTS[0])
HIDDEN = ("thinking", "redacted_thinking")


def run_with(content: list[dict[str, Any]]) -> LoopRun:
    """A streamed run whose step 2 request carried ``content`` as the assistant turn."""
    tool_id = next(block["id"] for block in FAITHFUL if block["type"] == "tool_use")
    body = {
        "model": SHAPE.model,
        "messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id}]},
        ],
    }
    request = RecordedRequest("POST", "/v1/messages", {}, json.dumps(body).encode())
    return LoopRun("interleaved", True, TRANSCRIPTS, requests=[request], step_of=SHAPE.step_of)


def verdicts(content: list[dict[str, Any]]) -> dict[str, bool]:
    run = run_with(content)
    return {rule.name: rule.check(run)[0] for rule in SHAPE.rules if rule.loop == "interleaved"}


def test_the_faithful_turn_passes_every_rule() -> None:
    assert verdicts(copy.deepcopy(FAITHFUL)) == {
        "signature_byte_for_byte": True,
        "redacted_block_kept": True,
        "block_order": True,
    }


@st.composite
def damaged(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The faithful turn with one reasoning-relevant change."""
    content = copy.deepcopy(FAITHFUL)
    hidden = [i for i, block in enumerate(content) if block["type"] in HIDDEN]
    how = draw(st.sampled_from(["drop", "move", "alter"]))
    if how == "drop":
        del content[draw(st.sampled_from(range(len(content))))]
    elif how == "move":
        index = draw(st.sampled_from(hidden))
        block = content.pop(index)
        target = draw(st.sampled_from([i for i in range(len(content) + 1) if i != index]))
        content.insert(target, block)
    else:
        block = content[draw(st.sampled_from(hidden))]
        field = "data" if block["type"] == "redacted_thinking" else draw(
            st.sampled_from(["signature", "thinking"])
        )  # fmt: skip
        original = block[field]
        cut = draw(st.integers(0, len(original) - 1))
        block[field] = original[:cut] + draw(st.sampled_from(["", "X", " "])) + original[cut + 1 :]
        if block[field] == original:
            block[field] += "X"
    return content


@given(damaged())
def test_any_change_to_the_reasoning_blocks_fails_a_rule(content: list[dict[str, Any]]) -> None:
    assert not all(verdicts(content).values()), [block["type"] for block in content]
