"""Scanner throughput against a minimal one-pass ``str.find`` splitter over the same chunks."""

from __future__ import annotations

import random
from functools import partial

from reasoning_stream import ReasoningStream

from ._rounds import cpu_seconds, median, spread

CHUNK = 4


def tagged_text(size: int, seed: int = 7) -> str:
    """Realistic tagged output: reasoning segments and answers, some stray "<" in prose."""
    rng = random.Random(seed)
    words = ["the", "model", "thinks", "about", "a < b", "streams", "and", "answers", "x<y"]
    parts: list[str] = []
    length = 0
    while length < size:
        body = " ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
        piece = f"<think>{body}</think>" if rng.random() < 0.5 else body
        parts.append(piece)
        length += len(piece)
    return "".join(parts)[:size]


def chunked(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def floor_split(chunks: list[str]) -> tuple[list[str], list[str]]:
    """The least work a correct splitter of exactly ``<think>``/``</think>`` must do."""
    reasoning: list[str] = []
    text: list[str] = []
    inside = False
    carry = ""
    for chunk in chunks:
        if carry:
            chunk = carry + chunk
            carry = ""
        pos = 0
        while True:
            i = chunk.find("<", pos)
            out = reasoning if inside else text
            if i < 0:
                out.append(chunk[pos:])
                break
            out.append(chunk[pos:i])
            tag = "</think>" if inside else "<think>"
            if chunk.startswith(tag, i):
                inside = not inside
                pos = i + len(tag)
            elif tag.startswith(chunk[i:]):
                carry = chunk[i:]
                break
            else:
                out.append("<")
                pos = i + 1
    return reasoning, text


def scanner_split(chunks: list[str]) -> int:
    """Feed every chunk; a consumer handles each event and lets it go."""
    scanner = ReasoningStream.scanner()
    feed = scanner.feed
    count = 0
    for chunk in chunks:
        count += len(feed(chunk))
    return count + len(scanner.flush())


SIZES = ((100_000, "100 KB"), (1_000_000, "1 MB"), (10_000_000, "10 MB"))
ROUNDS = 5


def main(rounds: int = ROUNDS) -> dict[str, float]:
    """Print the table; return the figures (medians over the rounds) for the README."""
    inputs = {label: chunked(tagged_text(size)) for size, label in SIZES}
    floor: dict[str, list[float]] = {label: [] for _, label in SIZES}
    ours: dict[str, list[float]] = {label: [] for _, label in SIZES}
    for _ in range(rounds):
        for size, label in SIZES:
            chunks = inputs[label]
            repeat = 3 if size < 1_000_000 else 1
            floor[label].append(cpu_seconds(partial(floor_split, chunks), repeat=repeat))
            ours[label].append(cpu_seconds(partial(scanner_split, chunks), repeat=repeat))
    print(f"Scanner: tagged text fed in {CHUNK}-character chunks, {rounds} interleaved rounds")
    print("| input | floor CPU/chunk | Scanner.feed CPU/chunk | ratio, median [spread] |")
    print("|---|---|---|---|")
    figures: dict[str, float] = {}
    for _, label in SIZES:
        units = len(inputs[label])
        ratios = [o / f for o, f in zip(ours[label], floor[label], strict=True)]
        print(
            f"| {label} | {median(floor[label]) / units * 1e9:.0f} ns "
            f"| {median(ours[label]) / units * 1e9:.0f} ns | {spread(ratios)}x |"
        )
        figures[f"scanner_ratio_{label}"] = median(ratios)
    growth = [big / small for big, small in zip(ours["10 MB"], ours["1 MB"], strict=True)]
    figures["scanner_10x_cost"] = median(growth)
    print(f"10x longer input (1 MB -> 10 MB) costs {spread(growth, '{:.1f}')}x (linear is 10x)\n")
    return figures


if __name__ == "__main__":
    main()
