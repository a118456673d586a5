"""The ledger is part of a stored conversation: SQLite and a real redis-server keep it."""

from __future__ import annotations

from decimal import Decimal

from reasoning_stream import Conversation, LedgerEntry, PipeResult, Usage, UsageReport
from reasoning_stream.store import ConversationStore
from reasoning_stream.testing import ScriptedPipe


def priced(reasoning: int) -> PipeResult:
    """An o4-mini answer: $1.10 input, $4.40 output per million tokens (genai-prices)."""
    usage = Usage(input_tokens=100, output_tokens=50, reasoning_tokens=reasoning)
    return PipeResult(text="ok", usage=usage, provider="openai-responses", model="o4-mini")


def test_save_load_and_append_keep_the_ledger(store: ConversationStore) -> None:
    conversation = Conversation().add_user("hi").add(priced(20))
    version = store.save("c", conversation)
    store.append("c", {"role": "user", "content": "more"}, expected_version=version)
    loaded, version = store.load("c")
    store.append("c", priced(30), expected_version=version)
    loaded, _ = store.load("c")
    cost = (100 * Decimal("1.10") + 50 * Decimal("4.40")) / 1_000_000
    assert loaded.ledger() == [
        LedgerEntry(0, 0, "o4-mini", 100, None, 50, 20, cost),
        LedgerEntry(1, 0, "o4-mini", 100, None, 50, 30, cost),
    ]


def test_a_stored_run_is_charged_to_the_budget_once(store: ConversationStore) -> None:
    usage = Usage(input_tokens=5, output_tokens=40, reasoning_tokens=30)
    pipe = ScriptedPipe([UsageReport(usage), "answer"])
    conversation = Conversation().add_user("hi").budget(reasoning_tokens=100)
    conversation.run(pipe, store=store, conversation_id="b")
    loaded, version = store.load("b")
    assert loaded.ledger()[0].reasoning_tokens == 30
    budget = conversation.current_budget
    assert budget is not None and budget.spent_reasoning_tokens == 30
    # Another writer appended meanwhile: the answer goes to the latest version, charged once.
    store.append("b", {"role": "user", "content": "again"}, expected_version=version)
    conversation.add_user("again")
    conversation.run(pipe, store=store, conversation_id="b")
    budget = conversation.current_budget
    assert budget is not None and budget.spent_reasoning_tokens == 60
    assert [entry.turn for entry in store.load("b")[0].ledger()] == [0, 1]
