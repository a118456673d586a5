"""Decoding the recorded stream chunks: stdlib ``json.loads`` against orjson and msgspec.

The inputs are the ``data:`` payloads of every SSE event and every NDJSON line in the bundled
transcripts, read back from the exact bytes the WireServer sends, as ``str`` (what httpx-sse and
``Response.iter_lines`` hand a transport) and as UTF-8 ``bytes``. Each round decodes the whole set
with every contender back to back; the table gives the median over rounds and the spread.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import reasoning_stream
from reasoning_stream import _json
from reasoning_stream.testing import Transcript

from ._rounds import cpu_seconds, median, spread

ROUNDS = 7
PASSES = 100
"""Passes over the whole set of payloads per round."""

_LINE_END = re.compile(r"\r\n|\r|\n")


def sse_payloads(body: str) -> list[str]:
    """The data of each SSE event: its ``data:`` lines joined by newlines (the SSE rules)."""
    payloads: list[str] = []
    data: list[str] | None = None
    for line in _LINE_END.split(body):
        if not line:
            if data is not None:
                payloads.append("\n".join(data))
            data = None
        elif line.startswith("data:"):
            value = line[5:]
            (data := data if data is not None else []).append(value.removeprefix(" "))
    if data is not None:
        payloads.append("\n".join(data))
    return payloads


def recorded_payloads() -> dict[str, list[str]]:
    """JSON payloads of the bundled transcripts, by provider API (the file name's prefix)."""
    folder = Path(reasoning_stream.__file__).parent / "transcripts"
    by_api: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.json")):
        transcript = Transcript.load(path)
        if transcript.format not in ("sse", "ndjson"):
            continue  # Bedrock's event stream is boto3's to decode; error bodies are one-off
        body = transcript.encode().decode("utf-8")
        if transcript.format == "sse":
            payloads = sse_payloads(body)
        else:
            payloads = [line for line in _LINE_END.split(body) if line]
        words = path.stem.split("_")
        api = "_".join(words[:2]) if words[0] == "openai" else words[0]
        for payload in payloads:
            try:
                json.loads(payload)
            except ValueError:
                continue  # "[DONE]" and deliberately malformed chunks are not JSON
            by_api.setdefault(api, []).append(payload)
    return by_api


def contenders() -> dict[str, Callable[[Any], Any]]:
    """Every decoder installed here, by name; ``json.loads`` first."""
    found: dict[str, Callable[[Any], Any]] = {"json.loads": json.loads}
    try:
        orjson = importlib.import_module("orjson")
        found["orjson.loads"] = orjson.loads
    except ImportError:
        print("orjson is not installed: pip install orjson")
    try:
        msgspec = importlib.import_module("msgspec")
        found["msgspec Decoder().decode"] = msgspec.json.Decoder().decode
    except ImportError:
        print("msgspec is not installed: pip install msgspec")
    found[f"reasoning_stream._json.loads ({_json.BACKEND})"] = _json.loads
    return found


def decode_all(decode: Callable[[Any], Any], payloads: list[Any]) -> None:
    for _ in range(PASSES):
        for payload in payloads:
            decode(payload)


def main(rounds: int = ROUNDS) -> dict[str, float]:
    """Print the tables; return the figures (medians over the rounds) for the README."""
    by_api = recorded_payloads()
    texts = [payload for payloads in by_api.values() for payload in payloads]
    inputs: dict[str, list[Any]] = {"str": texts, "bytes": [t.encode("utf-8") for t in texts]}
    decoders = contenders()
    for decode in decoders.values():  # every contender decodes every payload alike
        assert all(decode(t) == json.loads(t) for t in texts)
    seconds: dict[tuple[str, str], list[float]] = {}
    per_api: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for kind, payloads in inputs.items():
            for name, decode in decoders.items():
                took = cpu_seconds(partial(decode_all, decode, payloads))
                seconds.setdefault((kind, name), []).append(took)
        for api, payloads in by_api.items():
            for name, decode in decoders.items():
                took = cpu_seconds(partial(decode_all, decode, payloads))
                per_api.setdefault((api, name), []).append(took)
    size = sum(len(t.encode("utf-8")) for t in texts) / len(texts)
    print(
        f"JSON: {len(texts)} recorded stream payloads (mean {size:.0f} bytes), "
        f"{rounds} interleaved rounds"
    )
    print("| decoder | input | CPU/payload | vs json.loads, median [spread] |")
    print("|---|---|---|---|")
    figures: dict[str, float] = {}
    for kind, payloads in inputs.items():
        base = seconds[(kind, "json.loads")]
        for name in decoders:
            runs = seconds[(kind, name)]
            ratios = [t / b for t, b in zip(runs, base, strict=True)]
            per_payload = median(runs) / (PASSES * len(payloads)) * 1e9
            print(f"| {name} | {kind} | {per_payload:.0f} ns | {spread(ratios)}x |")
            figures[f"json_{kind}_{name}"] = median(ratios)
    print("\nBy provider API (str input), ratio to json.loads, median [spread]:")
    names = [name for name in decoders if name != "json.loads"]
    print("| API | payloads | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for api, payloads in by_api.items():
        base = per_api[(api, "json.loads")]
        cells = []
        for name in names:
            ratios = [t / b for t, b in zip(per_api[(api, name)], base, strict=True)]
            cells.append(f"{spread(ratios)}x")
        print(f"| {api} | {len(payloads)} | " + " | ".join(cells) + " |")
    print()
    return figures


if __name__ == "__main__":
    main()
