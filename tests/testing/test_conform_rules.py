"""Laws of the probe's rule checks, run as pure functions over recorded runs (no servers).

The oracle is the damage itself: the faithful tool turn is built here from the transcript by
hand, and any change hypothesis makes to its reasoning blocks (dropped, moved, altered) must
fail at least one Anthropic rule, while the faithful turn passes every one; the same for a
Responses reasoning item and for Gemini's signatures.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reasoning_stream.testing._conform_rules import LoopRun
from reasoning_stream.testing._conform_shapes import SHAPES
from reasoning_stream.testing._conform_wire import anthropic_blocks, gemini_parts, responses_output
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


# ------------------------------------------------------------------ responses and gemini


def recorded(path: str, *bodies: Any) -> list[RecordedRequest]:
    return [RecordedRequest("POST", path, {}, json.dumps(body).encode()) for body in bodies]


RESPONSES = SHAPES["responses"]
RESPONSES_REPLIES = RESPONSES.transcripts("function_call")
ITEMS = responses_output(RESPONSES_REPLIES[0])


def responses_verdict(store: Any, items: list[dict[str, Any]]) -> bool:
    first = {"store": store, "include": ["reasoning.encrypted_content"], "input": [USER]}
    call = next(item for item in ITEMS if item["type"] == "function_call")
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "18"}
    second = {"store": store, "input": [USER, *items, output]}
    run = LoopRun("function_call", True, RESPONSES_REPLIES, step_of=RESPONSES.step_of,
                  requests=recorded("/v1/responses", first, second))  # fmt: skip
    return RESPONSES.rules[0].check(run)[0]


USER = {"role": "user", "content": "What is the weather in Paris?"}


def test_the_faithful_responses_turn_passes() -> None:
    assert responses_verdict(False, copy.deepcopy(ITEMS))


@given(st.sampled_from(["drop_reasoning", "swap", "alter", "store", "strip"]))
def test_any_change_to_the_reasoning_item_fails(how: str) -> None:
    items = copy.deepcopy(ITEMS)
    store: Any = False
    if how == "drop_reasoning":
        items = [item for item in items if item["type"] != "reasoning"]
    elif how == "swap":
        items.reverse()
    elif how == "alter":
        items[0]["encrypted_content"] = "X" + items[0]["encrypted_content"][1:]
    elif how == "store":
        store = True
    else:
        items[0].pop("encrypted_content")
    assert not responses_verdict(store, items)


GEMINI = SHAPES["gemini"]
GEMINI_REPLIES = GEMINI.transcripts("tool_call")
PARTS = gemini_parts(GEMINI_REPLIES[0])


def gemini_verdict(parts: list[dict[str, Any]]) -> bool:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": parts},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather"}}]},
        ]
    }
    run = LoopRun("tool_call", True, GEMINI_REPLIES, step_of=GEMINI.step_of,
                  requests=recorded("/v1beta/models/m:streamGenerateContent", body))  # fmt: skip
    return GEMINI.rules[0].check(run)[0]


def test_the_faithful_gemini_turn_passes() -> None:
    assert gemini_verdict(copy.deepcopy(PARTS))


@given(st.data())
def test_any_moved_altered_or_dropped_signature_fails(data: st.DataObject) -> None:
    parts = copy.deepcopy(PARTS)
    signed = [i for i, part in enumerate(parts) if "thoughtSignature" in part]
    index = data.draw(st.sampled_from(signed))
    how = data.draw(st.sampled_from(["move", "alter", "drop"]))
    if how == "move":
        target = data.draw(st.sampled_from([i for i in range(len(parts)) if i not in signed]))
        parts[target]["thoughtSignature"] = parts[index].pop("thoughtSignature")
    elif how == "alter":
        parts[index]["thoughtSignature"] = "A" + parts[index]["thoughtSignature"][1:]
    else:
        parts[index].pop("thoughtSignature")
    assert not gemini_verdict(parts)
