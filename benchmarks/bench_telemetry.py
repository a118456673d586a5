"""What telemetry costs a run: off (never enabled, or enabled then removed) and on (SDK).

"On" is the OpenTelemetry SDK with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``
and an ``InMemoryMetricReader``: every span is exported synchronously, at the end of its run,
so the figure includes the export. Workloads: ``bench_pipe``'s (one run of 100,000 events); a
``ScriptedPipe`` replaying a short reply, 2,000 times (no I/O: the harshest ratio); and an
``OpenAIChatPipe`` (httpx transport) reading a bundled transcript from a loopback WireServer in
a child process, as a real run does (the fastest server there is: a remote one only makes the
ratio smaller). "SDK floor" is the same SDK calls with the same data and nothing else, so "on"
minus it is what our own code costs (see :class:`_Replay`). Interleaved rounds, medians and
spreads (``_rounds``).

``python -m benchmarks.bench_telemetry`` (needs the ``test`` extra for the SDK); name workloads
(``per_chunk``, ``bench_pipe``, ``scripted``, ``scripted_async``, ``wire``) to run some,
``--rounds N`` (9).
"On, no per-chunk" is "on" with ``instrument(time_per_output_chunk=False)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reasoning_stream import ReasoningDelta, TextDelta, _observers, telemetry
from reasoning_stream._sources import _clock, _is_chunk, timed
from reasoning_stream.providers import OpenAIChatPipe
from reasoning_stream.testing import ScriptedPipe

from . import bench_pipe
from ._rounds import cpu_seconds, median, spread
from ._timing import child_server

EVENTS_PER_RUN = 200
"""A short reply: 100 reasoning deltas, then 100 answer deltas."""
SCRIPTED_RUNS = 2_000
WIRE_RUNS = 300
ROUNDS = 9


def _script() -> list[ReasoningDelta | TextDelta]:
    half = EVENTS_PER_RUN // 2
    return [ReasoningDelta(f"r{i % 10} ") for i in range(half)] + [
        TextDelta(f"t{i % 10} ") for i in range(EVENTS_PER_RUN - half)
    ]


def _sdk_on(capture: telemetry.ContentCapture) -> InMemorySpanExporter:
    return _sdk_setup(capture)[0]


def _sdk_setup(
    capture: telemetry.ContentCapture, *, per_chunk: bool = True
) -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture,
        time_per_output_chunk=per_chunk,
    )
    return exporter, reader


_START_KEYS = frozenset(
    {
        telemetry.OPERATION,
        telemetry.PROVIDER,
        telemetry.REQUEST_MODEL,
        telemetry.REQUEST_STREAM,
        telemetry.SERVER_ADDRESS,
        telemetry.SERVER_PORT,
        telemetry.OUR_PROVIDER,
        telemetry.PIPE_NAME,
    }
)
"""The attributes telemetry gives a pipe span when it starts (the rest come at its end)."""


class _Replay:
    """The SDK's own floor: a run observer making the SDK calls telemetry makes for one run,
    with what one instrumented run exported (the span's name, kind and attributes, the
    value and attributes of each histogram point), computing nothing of its own.

    ``on`` minus this is what ``reasoning_stream.telemetry`` itself costs a run.
    """

    def __init__(self, exporter: InMemorySpanExporter, reader: InMemoryMetricReader) -> None:
        from opentelemetry import context, trace

        span = exporter.get_finished_spans()[-1]
        attributes = dict(span.attributes or {})
        self.name, self.kind = span.name, span.kind
        self.start = {k: v for k, v in attributes.items() if k in _START_KEYS}
        self.end = {k: v for k, v in attributes.items() if k not in _START_KEYS}
        self.exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        self.tracer = tracer_provider.get_tracer(telemetry.SCOPE_NAME)
        instruments = telemetry._Instruments(meter_provider.get_meter(telemetry.SCOPE_NAME))
        by_name = {
            telemetry.OPERATION_DURATION_METRIC: instruments.duration,
            telemetry.TOKEN_USAGE_METRIC: instruments.tokens,
            telemetry.TIME_TO_FIRST_CHUNK_METRIC: instruments.first_chunk,
            telemetry.REASONING_DURATION_METRIC: instruments.reasoning,
            telemetry.TIME_PER_OUTPUT_CHUNK_METRIC: instruments.per_chunk,
        }
        self.points: list[tuple[Any, float, dict[str, Any]]] = []
        data = reader.get_metrics_data()
        assert data is not None
        metrics = [
            metric
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        ]
        # Every run records one duration point: their count is the number of runs measured,
        # and a metric recorded several times a run (time per output chunk) is replayed so.
        runs = sum(
            point.count  # type: ignore[union-attr]
            for metric in metrics
            if metric.name == telemetry.OPERATION_DURATION_METRIC
            for point in metric.data.data_points
        )
        for metric in metrics:
            for point in metric.data.data_points:
                value = point.sum / point.count  # type: ignore[union-attr]
                point_attributes = dict(point.attributes or {})
                times = max(1, round(point.count / runs))  # type: ignore[union-attr]
                self.points.extend([(by_name[metric.name], value, point_attributes)] * times)
        self._current = context.get_current
        self._attach, self._detach = context.attach, context.detach
        self._in_context = trace.set_span_in_context

    def run_started(self, runner: object, prompt: object) -> _ReplayScope:
        parent = self._current()
        span = self.tracer.start_span(self.name, parent, kind=self.kind, attributes=self.start)
        return _ReplayScope(self, span, self._attach(self._in_context(span, parent)), parent)


class _ReplayScope:
    def __init__(self, replay: _Replay, span: Any, token: Any, parent: Any) -> None:
        self.replay, self.span, self.token, self.parent = replay, span, token, parent

    def run_finished(self, result: object, error: object) -> None:
        replay = self.replay
        replay._detach(self.token)
        self.span.set_attributes(replay.end)
        self.span.end()
        for histogram, value, attributes in replay.points:
            histogram.record(value, attributes, self.parent)


def _compare(
    label: str, work: Callable[[], object], runs: int, repeat: int = 1
) -> dict[str, list[float]]:
    """Plain, off and on, in interleaved rounds so drifts of the machine hit each alike.

    Each round times every setting once, back to back, and takes the ratios to that round's
    plain run; the table gives the median and the spread (lowest to highest) over the rounds,
    and what telemetry adds to one run, in CPU microseconds (median of ``setting - plain``).
    "SDK floor" replays the same SDK calls with the data "on" exported (see :class:`_Replay`).
    A short ``work`` is timed ``repeat`` times per setting and round, keeping the fastest.
    """
    settings = ("off", "on", "SDK floor", "on, no per-chunk", "on, capture full")
    plain: list[float] = []
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    replay: _Replay | None = None
    for _ in range(ROUNDS):
        telemetry.uninstrument()
        plain.append(cpu_seconds(work, repeat=repeat))
        telemetry.instrument()  # the global no-op providers: enabled, then removed
        telemetry.uninstrument()
        seconds["off"].append(cpu_seconds(work, repeat=repeat))
        exporter, reader = _sdk_setup("none")
        seconds["on"].append(cpu_seconds(work, repeat=repeat))
        telemetry.uninstrument()
        if replay is None:
            replay = _Replay(exporter, reader)
        exporter.clear()
        _observers.add_run_observer(replay)
        seconds["SDK floor"].append(cpu_seconds(work, repeat=repeat))
        _observers.remove_run_observer(replay)
        replay.exporter.clear()
        exporter, _ = _sdk_setup("none", per_chunk=False)
        seconds["on, no per-chunk"].append(cpu_seconds(work, repeat=repeat))
        exporter.clear()
        telemetry.uninstrument()
        exporter = _sdk_on("full")
        seconds["on, capture full"].append(cpu_seconds(work, repeat=repeat))
        exporter.clear()
        telemetry.uninstrument()
    print(f"{label}: {runs:,} runs, {ROUNDS} interleaved rounds")
    print(f"| {'telemetry':<18} | {'CPU/run':>10} | {'added/run':>10} | {'ratio':>20} |")
    print(f"|{'-' * 20}|{'-' * 12}|{'-' * 12}|{'-' * 22}|")
    print(f"| {'plain':<18} | {median(plain) / runs * 1e6:>7.1f} us | {'':>10} | {'1.00x':>20} |")
    ratios: dict[str, list[float]] = {}
    for name in settings:
        values = seconds[name]
        ratios[name] = [value / floor for value, floor in zip(values, plain, strict=True)]
        added = median([value - floor for value, floor in zip(values, plain, strict=True)])
        print(
            f"| {name:<18} | {median(values) / runs * 1e6:>7.1f} us | "
            f"{added / runs * 1e6:>7.1f} us | {spread(ratios[name]) + 'x':>20} |"
        )
    pairs = zip(seconds["on"], seconds["SDK floor"], strict=True)
    ours = [(on - sdk) / runs * 1e6 for on, sdk in pairs]
    print(f"telemetry's own code above the SDK floor: {spread(ours, '{:.1f}')} us a run\n")
    return ratios


def pipe_benchmark() -> dict[str, list[float]]:
    """The workload of ``bench_pipe``: one ``arun`` of 100,000 events into an async callback."""
    items = bench_pipe.script()
    sink: list[str] = []

    async def callback(chunk: str) -> None:
        sink.append(chunk)

    pipe = ScriptedPipe(items).set_streaming_callback(callback)

    def work() -> None:
        sink.clear()
        anyio.run(pipe.arun, "p")

    label = f"bench_pipe's ScriptedPipe.arun, {bench_pipe.EVENTS:,} events"
    return _compare(label, work, 1, repeat=3)


def scripted() -> dict[str, list[float]]:
    pipe = ScriptedPipe(_script())
    sink: list[str] = []
    pipe.set_streaming_callback(sink.append)

    def work() -> None:
        for _ in range(SCRIPTED_RUNS):
            sink.clear()
            pipe.run("p")

    return _compare(f"ScriptedPipe.run, {EVENTS_PER_RUN} events", work, SCRIPTED_RUNS)


def scripted_async() -> dict[str, list[float]]:
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


def wire() -> dict[str, list[float]]:
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


# ------------------------------------------- time per output chunk: when to record the points


def _record_each(source: Iterator[Any], record: Callable[..., None], attrs: Any) -> Iterator[Any]:
    """The alternative: each interval recorded into the SDK histogram as its chunk arrives."""
    last: float | None = None
    for event in source:
        if _is_chunk(event):
            now = _clock()
            if last is not None:
                record(now - last, attrs)
            last = now
        yield event


def _preallocated(source: Iterator[Any], slots: list[float], used: list[int]) -> Iterator[Any]:
    """The other alternative: intervals written into a preallocated list, grown when full."""
    last: float | None = None
    count = 0
    for event in source:
        if _is_chunk(event):
            now = _clock()
            if last is not None:
                if count == len(slots):
                    slots.extend([0.0] * len(slots))
                slots[count] = now - last
                count += 1
            last = now
        yield event
    used[0] = count


def per_chunk() -> dict[str, list[float]]:
    """``time_per_output_chunk`` with the SDK histogram, recorded three ways, chunks only.

    ``at the end`` is what telemetry does (``_sources.timed``: each interval appended to a list
    while the run streams, all recorded in one loop when it ends); ``per chunk`` records each
    into the histogram as it arrives; ``preallocated`` writes into a list sized ahead. Each
    setting reads the same ``EVENTS_PER_RUN`` events through its generator; "hot path" is the
    CPU spent while the events stream (what delays a chunk), "total" adds the end-of-run
    recording. Figures are per chunk, in CPU microseconds above the bare events.
    """
    events = _script()
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("bench")
    histogram = telemetry._Instruments(meter).per_chunk
    attrs = {telemetry.OPERATION: "chat", telemetry.PROVIDER: "openai", "error.type": "x"}
    runs = SCRIPTED_RUNS
    chunks = runs * (len(events) - 1)

    def bare() -> None:
        for _ in range(runs):
            for _event in iter(events):
                pass

    def at_end(stream_only: bool) -> Callable[[], None]:
        def work() -> None:
            for _ in range(runs):
                intervals: list[float] = []
                for _event in timed(events, intervals):
                    pass
                if not stream_only:
                    for interval in intervals:
                        histogram.record(interval, attrs)

        return work

    def each() -> None:
        for _ in range(runs):
            for _event in _record_each(iter(events), histogram.record, attrs):
                pass

    def preallocated(stream_only: bool) -> Callable[[], None]:
        def work() -> None:
            for _ in range(runs):
                slots, used = [0.0] * 64, [0]
                for _event in _preallocated(iter(events), slots, used):
                    pass
                if not stream_only:
                    for interval in slots[: used[0]]:
                        histogram.record(interval, attrs)

        return work

    settings: dict[str, Callable[[], None]] = {
        "at the end: hot path": at_end(True),
        "at the end: total": at_end(False),
        "per chunk (both)": each,
        "preallocated: hot path": preallocated(True),
        "preallocated: total": preallocated(False),
    }
    floor: list[float] = []
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(ROUNDS):
        floor.append(cpu_seconds(bare))
        for name, work in settings.items():
            seconds[name].append(cpu_seconds(work))
    print(f"time_per_output_chunk, {runs:,} runs of {len(events)} events, {ROUNDS} rounds")
    print(f"| {'recorded':<24} | {'CPU per chunk above the bare events (us)':>42} |")
    print(f"|{'-' * 26}|{'-' * 44}|")
    added: dict[str, list[float]] = {}
    for name in settings:
        pairs = zip(seconds[name], floor, strict=True)
        added[name] = [(value - bare_run) / chunks * 1e6 for value, bare_run in pairs]
        print(f"| {name:<24} | {spread(added[name], '{:.2f}'):>42} |")
    print()
    return added


WORKLOADS: dict[str, Callable[[], dict[str, list[float]]]] = {
    "per_chunk": per_chunk,
    "bench_pipe": pipe_benchmark,
    "scripted": scripted,
    "scripted_async": scripted_async,
    "wire": wire,
}


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    """Print the tables; return the ratios of every round for the README."""
    import argparse

    global ROUNDS
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_telemetry")
    parser.add_argument("workloads", nargs="*", help=f"some of: {', '.join(WORKLOADS)}")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    options = parser.parse_args([] if argv is None else argv)
    unknown = set(options.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    ROUNDS = options.rounds
    figures: dict[str, list[float]] = {}
    for name, bench in WORKLOADS.items():
        if options.workloads and name not in options.workloads:
            continue
        for setting, ratios in bench().items():
            figures[f"{name} {setting}"] = ratios
    return figures


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
