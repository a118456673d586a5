"""The ledger of a tool loop a client runs through the OpenAI-compatible endpoint.

The client keeps the history; the server stores each assistant turn it made (with its record:
usage and price) under the digest of the history before it. Rebuilding the client's history
with those records (``attach``) must list each model call of the loop once, with its turn and
step, and a retried request (the same history again) must replace its stored turn, never add
a second charge. Usage is read from the transcripts here, not from the endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing import Transcript
from reasoning_stream.web._openai_passback import KEY_PREFIX, attach
from tests.web.test_openai_endpoint import client, endpoint


def usage_of(name: str) -> tuple[int, int, int]:
    """Prompt, completion and reasoning tokens the transcript's usage chunk reports."""
    for event in Transcript.load(name).events:
        data = event.get("data")
        if isinstance(data, dict) and data.get("usage"):
            usage = data["usage"]
            details = usage.get("completion_tokens_details") or {}
            return (
                usage["prompt_tokens"],
                usage["completion_tokens"],
                details.get("reasoning_tokens", 0),
            )
    raise AssertionError(f"{name} reports no usage")


def test_each_step_of_a_client_tool_loop_is_in_the_ledger_once(tmp_path: Path) -> None:
    replies = ("openai_chat_tool_call", "openai_chat_tool_call", "openai_chat_no_reasoning")
    with endpoint(tmp_path, *replies) as (base, _, store), client(base) as sdk:
        history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
        for _ in range(2):  # the first request, then a client retry of the same history
            first = sdk.chat.completions.create(model="deepseek", messages=history)  # type: ignore[arg-type]
        calls = first.choices[0].message.tool_calls or []
        assert calls
        history.append(
            {
                "role": "assistant",
                "content": first.choices[0].message.content,
                "tool_calls": [
                    call.model_dump(include={"id", "type", "function"}) for call in calls
                ],
            }
        )
        history += [{"role": "tool", "tool_call_id": call.id, "content": "18 C"} for call in calls]
        second = sdk.chat.completions.create(model="deepseek", messages=history)  # type: ignore[arg-type]
        history.append({"role": "assistant", "content": second.choices[0].message.content})

        stored = store.list(KEY_PREFIX)
        assert len(stored) == 2  # the retry replaced its turn: two steps, two stored turns
        for key in stored:
            turn, _ = store.load(key)
            assert len(turn.ledger()) == 1
        pipe = OpenAIChatPipe("deepseek-chat", api_key="k")
        ledger = attach(store, history, pipe).ledger()

    assert [(entry.turn, entry.step) for entry in ledger] == [(0, 0), (0, 1)]
    got = [(e.input_tokens, e.output_tokens, e.reasoning_tokens or 0) for e in ledger]
    assert got == [usage_of("openai_chat_tool_call"), usage_of("openai_chat_no_reasoning")]
    assert all(entry.model == "deepseek-chat" for entry in ledger)
