"""No strategy vs Chain-of-Thought vs Chain-of-Draft on grade-school math, any OpenAI-style server.

``python -m benchmarks.chain_of_draft --base-url http://127.0.0.1:8080/v1 --model M``

Twenty word problems written for this benchmark (integer answers) are asked three ways:

- ``none``: answer directly, no reasoning asked for;
- ``cot``: :class:`~reasoning_stream.strategies.ChainOfThought`;
- ``cod``: :class:`~reasoning_stream.strategies.ChainOfDraft` (``--max-words``, default 5).

For each it reports accuracy (the last number of the answer text, or of the reasoning when the
model left no text after its drafts), reasoning tokens, total tokens (prompt + completion),
latency per question and, for Chain-of-Draft, the share of steps over the word limit.
Reasoning tokens are the server's ``reasoning_tokens`` when it reports them; otherwise (inline
``<think>`` text, as llama.cpp serves it) they are estimated as the completion tokens times the
reasoning's share of the characters written, and marked ``~``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from reasoning_stream import PipeResult, ProviderError
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.strategies import ChainOfDraft, ChainOfThought, StrategyResult

PROBLEMS: tuple[tuple[str, int], ...] = (
    ("A baker makes 24 muffins and sells 3 boxes of 6 muffins. How many muffins are left?", 6),
    ("Maya reads 12 pages a day for 5 days, then 8 pages on the sixth day. How many pages "
     "did she read in all?", 68),
    ("A bus has 40 seats. 17 people get on at the first stop and 9 more at the second stop. "
     "How many seats are empty?", 14),
    ("Pencils cost 3 dollars each and notebooks cost 5 dollars each. Sam buys 4 pencils and 2 "
     "notebooks. How many dollars does he spend?", 22),
    ("A garden has 6 rows of 9 tomato plants. 7 plants die. How many plants are left?", 47),
    ("Leo has 50 dollars. He spends half of it on a game and then 8 dollars on lunch. How many "
     "dollars does he have left?", 17),
    ("A train goes 60 km per hour for 3 hours, then 45 km per hour for 2 hours. How many km "
     "does it travel?", 270),
    ("There are 5 boxes with 12 apples in each. The apples are shared equally among 4 friends. "
     "How many apples does each friend get?", 15),
    ("A class has 28 students. Three quarters of them passed the test. How many students "
     "passed?", 21),
    ("Nina saves 15 dollars every week. How many weeks does it take her to save 120 dollars?", 8),
    ("A rope 36 meters long is cut into pieces 4 meters long. How many pieces are there?", 9),
    ("Tickets cost 7 dollars for an adult and 4 dollars for a child. 3 adults and 5 children "
     "go to the show. How many dollars do they pay?", 41),
    ("A farmer has 3 times as many chickens as cows. He has 8 cows. How many animals does he "
     "have in all?", 32),
    ("Emma had 45 stickers. She gave 12 to Ben and then got 20 from Ana. How many stickers "
     "does she have now?", 53),
    ("A shop sells 9 shirts on Monday, twice as many on Tuesday, and 5 fewer than Tuesday on "
     "Wednesday. How many shirts did it sell over the three days?", 40),
    ("Batteries come in packs of 8. How many packs must you buy to have at least 50 "
     "batteries?", 7),
    ("A movie starts at 3:40 pm and lasts 95 minutes. How many minutes after 5 pm does it "
     "end?", 15),
    ("Tom is 4 years older than twice Ann's age. Ann is 9. How old is Tom?", 22),
    ("A pizza has 8 slices. 3 friends each eat 2 slices. How many slices are left?", 2),
    ("A tank holds 200 liters and is 30 percent full. How many more liters are needed to fill "
     "it?", 140),
)  # fmt: skip
"""(question, answer): grade-school word problems of two to four steps."""

DIRECT = (
    "Answer the question directly with the final number only. Do not explain and do not show "
    "any reasoning."
)
ASK = " Give the final answer as a number."

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def last_number(text: str) -> float | None:
    """The last number written in ``text`` (thousands separators allowed)."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


@dataclass
class Tally:
    """What one strategy scored over the question set."""

    correct: int = 0
    asked: int = 0
    failed: int = 0
    reasoning_tokens: list[float] = field(default_factory=list)
    total_tokens: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    estimated: bool = False
    steps: int = 0
    steps_over: int = 0


def reasoning_tokens(result: PipeResult) -> tuple[float, bool]:
    """The reasoning tokens, and whether they are an estimate."""
    usage = result.usage
    if usage.reasoning_tokens is not None:
        return float(usage.reasoning_tokens), False
    written = len(result.model_reasoning) + len(result.text)
    if not usage.output_tokens or not written:
        return 0.0, bool(result.model_reasoning)
    return usage.output_tokens * len(result.model_reasoning) / written, True


def ask(pipe: Any, question: str, strategy: str) -> PipeResult:
    if strategy == "none":
        prompt = [{"role": "system", "content": DIRECT}, {"role": "user", "content": question}]
        result: PipeResult = pipe.run(prompt)
        return result
    answer: PipeResult = pipe.run(question + ASK)
    return answer


def score(tally: Tally, result: PipeResult, expected: int) -> None:
    tally.asked += 1
    got = last_number(result.text) if result.text.strip() else last_number(result.model_reasoning)
    tally.correct += got is not None and abs(got - expected) < 1e-9
    tokens, estimated = reasoning_tokens(result)
    tally.reasoning_tokens.append(tokens)
    tally.estimated = tally.estimated or estimated
    tally.total_tokens.append(
        float(result.usage.input_tokens or 0) + (result.usage.output_tokens or 0)
    )
    tally.latencies.append(result.timings.total or 0.0)
    if isinstance(result, StrategyResult) and result.max_words is not None:
        tally.steps += len(result.steps)
        tally.steps_over += len(result.steps_over_limit)


def run_benchmark(
    base_url: str,
    model: str,
    *,
    api_key: str,
    max_words: int,
    max_tokens: int,
    limit: int | None,
    strategies: tuple[str, ...] = ("none", "cot", "cod"),
) -> dict[str, Tally]:
    """Ask every question under every strategy; return the tallies."""
    problems = PROBLEMS[:limit] if limit else PROBLEMS
    tallies: dict[str, Tally] = {}
    for strategy in strategies:
        base = OpenAIChatPipe(
            model,
            base_url=base_url,
            api_key=api_key,
            transport="httpx",
            extra_body={"temperature": 0, "max_tokens": max_tokens, "seed": 0},
            timeout=600,
        )
        pipe: Any = base
        if strategy == "cot":
            pipe = ChainOfThought().apply(base)
        elif strategy == "cod":
            pipe = ChainOfDraft(max_words=max_words).apply(base)
        tally = tallies.setdefault(strategy, Tally())
        for question, expected in problems:
            try:
                result = ask(pipe, question, strategy)
            except ProviderError as error:
                tally.failed += 1
                print(f"  {strategy}: {error}", file=sys.stderr)
                continue
            score(tally, result, expected)
    return tallies


def table(tallies: dict[str, Tally], max_words: int) -> str:
    """The results as a Markdown table."""
    names = {
        "none": "no strategy (direct answer)",
        "cot": "Chain-of-Thought",
        "cod": f"Chain-of-Draft ({max_words} words)",
    }
    lines = [
        "| strategy | accuracy | reasoning tokens | total tokens | latency | steps over limit |",
        "|---|---|---|---|---|---|",
    ]
    for key, tally in tallies.items():
        answered = tally.asked or 1
        mark = "~" if tally.estimated else ""
        over = f"{tally.steps_over}/{tally.steps}" if tally.steps else "-"
        lines.append(
            f"| {names.get(key, key)} | {tally.correct}/{tally.asked} "
            f"({100 * tally.correct / answered:.0f}%) "
            f"| {mark}{_mean(tally.reasoning_tokens):.0f} | {_mean(tally.total_tokens):.0f} "
            f"| {_mean(tally.latencies):.2f} s | {over} |"
            + (f" ({tally.failed} failed)" if tally.failed else "")
        )
    return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def main(argv: list[str] | None = None) -> dict[str, Tally]:
    """Parse the arguments, run, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the server's /v1 root")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default="none")
    parser.add_argument("--max-words", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--limit", type=int, help="ask only the first N questions")
    arguments = parser.parse_args(argv)
    tallies = run_benchmark(
        arguments.base_url,
        arguments.model,
        api_key=arguments.api_key,
        max_words=arguments.max_words,
        max_tokens=arguments.max_tokens,
        limit=arguments.limit,
    )
    print(f"model: {arguments.model}, {len(PROBLEMS[: arguments.limit or None])} questions\n")
    print(table(tallies, arguments.max_words))
    return tallies


if __name__ == "__main__":
    main()
