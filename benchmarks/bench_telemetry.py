"""What telemetry costs a run: off (never enabled, or enabled then removed) and on (SDK).

"On" is the OpenTelemetry SDK with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``
and an ``InMemoryMetricReader``: every span is exported synchronously, at the end of its run,
so the figure includes the export. Workloads: ``bench_pipe``'s (one run of 100,000 events); a
``ScriptedPipe`` replaying a short reply, 2,000 times (no I/O: the harshest ratio); and an
``OpenAIChatPipe`` (httpx transport) reading a bundled transcript from a loopback WireServer in
a child process, as a real run does (the fastest server there is: a remote one only makes the
ratio smaller).

``python -m benchmarks.bench_telemetry`` (needs the ``test`` extra for the SDK).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import anyio
import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reasoning_stream import ReasoningDelta, TextDelta, telemetry
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing import ScriptedPipe

from . import bench_pipe
from ._timing import Timing, child_server, measure

EVENTS_PER_RUN = 200
"""A short reply: 100 reasoning deltas, then 100 answer deltas."""
SCRIPTED_RUNS = 2_000
WIRE_RUNS = 300
REPEAT = 5


def _script() -> list[ReasoningDelta | TextDelta]:
    half = EVENTS_PER_RUN // 2
    return [ReasoningDelta(f"r{i % 10} ") for i in range(half)] + [
        TextDelta(f"t{i % 10} ") for i in range(EVENTS_PER_RUN - half)
    ]


def _sdk_on(capture: telemetry.ContentCapture) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider, capture_content=capture
    )
    return exporter


def _compare(label: str, work: Callable[[], object], runs: int) -> dict[str, float]:
    """Plain, off and on, measured in rounds so drifts of the machine hit each alike."""
    best: dict[str, Timing] = {}

    def keep(name: str, timing: Timing) -> None:
        old = best.get(name)
        if old is None or timing.cpu < old.cpu:
            best[name] = timing

    for _ in range(REPEAT):
        telemetry.uninstrument()
        keep("plain", measure(work, repeat=1))
        telemetry.instrument()  # the global no-op providers: enabled, then removed
        telemetry.uninstrument()
        keep("off", measure(work, repeat=1))
        exporter = _sdk_on("none")
        keep("on", measure(work, repeat=1))
        exporter.clear()
        exporter = _sdk_on("full")
        keep("on, capture full", measure(work, repeat=1))
        exporter.clear()
        telemetry.uninstrument()
    floor = best["plain"]
    print(f"{label}: {runs:,} runs")
    print(f"| {'telemetry':<24} | {'CPU/run':>10} | {'ratio':>6} |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 8}|")
    for name, timing in best.items():
        print(
            f"| {name:<24} | {timing.cpu / runs * 1e6:>7.1f} us | {timing.cpu / floor.cpu:>5.2f}x |"
        )
    print()
    return {name: timing.cpu / floor.cpu for name, timing in best.items()}


def pipe_benchmark() -> dict[str, float]:
    """The workload of ``bench_pipe``: one ``arun`` of 100,000 events into an async callback."""
    items = bench_pipe.script()
    sink: list[str] = []

    async def callback(chunk: str) -> None:
        sink.append(chunk)

    pipe = ScriptedPipe(items).set_streaming_callback(callback)

    def work() -> None:
        sink.clear()
        anyio.run(pipe.arun, "p")

    return _compare(f"bench_pipe's ScriptedPipe.arun, {bench_pipe.EVENTS:,} events", work, 1)


def scripted() -> dict[str, float]:
    pipe = ScriptedPipe(_script())
    sink: list[str] = []
    pipe.set_streaming_callback(sink.append)

    def work() -> None:
        for _ in range(SCRIPTED_RUNS):
            sink.clear()
            pipe.run("p")

    return _compare(f"ScriptedPipe.run, {EVENTS_PER_RUN} events", work, SCRIPTED_RUNS)


def scripted_async() -> dict[str, float]:
    pipe = ScriptedPipe(_script())
    sink: list[str] = []

    async def callback(chunk: str) -> None:
        sink.append(chunk)

    pipe.set_streaming_callback(callback)

    async def runs() -> None:
        for _ in range(SCRIPTED_RUNS):
            sink.clear()
            await pipe.arun("p")

    return _compare(
        f"ScriptedPipe.arun, {EVENTS_PER_RUN} events", lambda: anyio.run(runs), SCRIPTED_RUNS
    )


TRANSCRIPT = "openai_chat_reasoning_content"

_SERVER_SCRIPT = (
    "import sys\n"
    "from reasoning_stream.testing import Transcript, WireServer\n"
    "with WireServer(Transcript.load(sys.argv[1])) as server:\n"
    "    print(server.url, flush=True)\n"
    "    sys.stdin.read()\n"
)


@contextlib.contextmanager
def loopback() -> Iterator[str]:
    """The transcript served by a WireServer in a child process, so CPU is the client's alone."""
    with child_server(_SERVER_SCRIPT, TRANSCRIPT) as url:
        yield url


def wire() -> dict[str, float]:
    with loopback() as url, httpx.Client() as client:
        pipe = OpenAIChatPipe(
            "Qwen/Qwen3-8B",
            transport="httpx",
            http_client=client,
            base_url=url + "/v1",
            api_key="bench",
        )

        def work() -> None:
            for _ in range(WIRE_RUNS):
                pipe.run("p")

        return _compare("OpenAIChatPipe(transport='httpx').run over loopback", work, WIRE_RUNS)


def main() -> dict[str, float]:
    """Print the tables; return the ratios for the README."""
    figures: dict[str, float] = {}
    benches = (
        ("bench_pipe", pipe_benchmark),
        ("scripted", scripted),
        ("scripted_async", scripted_async),
        ("wire", wire),
    )
    for name, bench in benches:
        for setting, ratio in bench().items():
            figures[f"{name} {setting}"] = ratio
    return figures


if __name__ == "__main__":
    main()
