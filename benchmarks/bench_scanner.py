"""Scanner throughput against a minimal one-pass ``str.find`` splitter over the same chunks."""

from __future__ import annotations

import random

from reasoning_stream import ReasoningStream

from ._timing import HEADER, Timing, measure, row

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


def main() -> dict[str, float]:
    """Print the table; return the figures for the README."""
    print(f"Scanner: tagged text fed in {CHUNK}-character chunks")
    print(HEADER)
    figures: dict[str, float] = {}
    timings: dict[int, Timing] = {}
    for size, label in ((100_000, "100 KB"), (10_000_000, "10 MB")):
        chunks = chunked(tagged_text(size))
        repeat = 5 if size < 1_000_000 else 1
        floor = measure(lambda chunks=chunks: floor_split(chunks), repeat=repeat)
        ours = measure(lambda chunks=chunks: scanner_split(chunks), repeat=repeat)
        timings[size] = ours
        print(row(f"str.find floor, {label}", floor, floor, len(chunks)))
        print(row(f"Scanner.feed, {label}", ours, floor, len(chunks)))
        figures[f"scanner_ratio_{label}"] = ours.cpu / floor.cpu
    growth = timings[10_000_000].cpu / timings[100_000].cpu
    figures["scanner_100x_cost"] = growth
    print(f"100x longer input costs {growth:.0f}x (linear is 100x)\n")
    return figures


if __name__ == "__main__":
    main()
