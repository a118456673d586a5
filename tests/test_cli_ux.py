"""What a new user meets on the command line, off a terminal (the terminal side is in
``test_cli_terminal.py``): broken pipes, missing extras, odd bytes, help, options, errors."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream import ReasoningStream
from reasoning_stream.__main__ import build_parser, main
from reasoning_stream._cli import PROVIDERS, CommandError, build_pipe, summary_line, wrap_parts
from reasoning_stream._render import color_wanted
from reasoning_stream.providers._spec import ApiRoot
from reasoning_stream.testing import Reply, Transcript, WireServer
from tests.helpers import examples, said
from tests.providers import oneshot_content as content

OPEN, CLOSE = ReasoningStream.OPEN_TAG, ReasoningStream.CLOSE_TAG


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "reasoning_stream", *argv]


def env(**extra: str) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    values.update(OPENAI_API_KEY="test-key", **extra)
    return values


# ----------------------------------------------------------------------------- broken pipe


@pytest.mark.parametrize("mode", ["--json", "--raw", None])
def test_a_reader_that_leaves_stops_the_run_quietly(mode: str | None) -> None:
    """`chat ... | head -1`: exit 141, nothing on stderr, and the run stops (the server would
    hang after six pieces, so a run that went on would never end)."""
    reply = Reply(Transcript.load("demo_deepseek"), delay=0.2, hang_after=6)
    with WireServer(reply) as server:
        args = ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner"]
        args += ["--base-url", server.url + "/v1"] + ([mode] if mode else [])
        process = subprocess.Popen(
            cli(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env()
        )
        assert process.stdout is not None and process.stderr is not None
        first = os.read(process.stdout.fileno(), 7)  # the first bytes, newline or not
        process.stdout.close()  # what `head` does once it has what it wanted
        status = process.wait(timeout=30)
        err = process.stderr.read().decode()
        process.stderr.close()
    assert first
    assert status == 141
    assert err == ""


def test_demo_into_a_closed_pipe_is_quiet() -> None:
    process = subprocess.Popen(
        cli("demo", "--provider", "anthropic"), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    status = process.wait(timeout=60)
    err = process.stderr.read().decode()
    process.stderr.close()
    assert status == 141 and err == ""


# --------------------------------------------------------------------------- missing extras


@pytest.mark.parametrize(
    ("provider", "module", "extra"),
    [(None, "anthropic", "openai,anthropic"), ("bedrock", "boto3", "bedrock"),
     ("ollama", "ollama", "ollama"), ("openai", "openai", "openai")],
)  # fmt: skip
def test_demo_without_an_sdk_names_the_extra(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    provider: str | None,
    module: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails as if absent
    status, _, err = run_cli(capsys, "demo", *(["--provider", provider] if provider else []))
    assert status == 2
    assert err == (
        f"reasoning-stream: the demo needs the {module} package: "
        f"pip install 'reasoning-stream[{extra}]'\n"
    )


# ------------------------------------------------------------------------------ split bytes


def test_split_of_a_file_that_is_not_utf8_works_as_standard_input_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = b"<think>caf\xe9</think>ok \xff"
    path = tmp_path / "latin1.txt"
    path.write_bytes(data)
    status, out, err = run_cli(capsys, "split", str(path))
    assert status == 0
    assert json.loads(out) == {
        "reasoning": "caf\ufffd", "text": "ok \ufffd", "segments": ["caf\ufffd"],
        "truncated": False,
    }  # fmt: skip
    assert err == (
        f"reasoning-stream: {path} is not valid UTF-8 (byte 0xe9 at offset 10); "
        "each undecodable byte is shown as U+FFFD\n"
    )
    piped = subprocess.run(cli("split"), input=data, capture_output=True, check=True)
    assert json.loads(piped.stdout) == json.loads(out)
    assert piped.stderr.decode() == err.replace(str(path), "standard input")


# ---------------------------------------------------------------------------------- help


def test_no_arguments_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys)
    assert status == 0 and err == ""
    assert out.startswith("usage: reasoning-stream")
    for command in ("demo", "chat", "split"):
        assert command in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"reasoning-stream {version('reasoning-stream')}\n"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_option_and_command_has_help_text() -> None:
    parsers = list(_parsers(build_parser()))
    names = [p.prog.split()[-1] for p in parsers]
    assert names == ["reasoning-stream", "demo", "chat", "split", "serve", "conform"]
    for parser in parsers:
        assert parser.description, parser.prog
        for action in parser._actions:
            assert action.help and action.help.strip(), (parser.prog, action.dest)


def test_lossless_help_states_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["split", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "keep every byte" not in text
    assert "byte for byte" in text and "nested open tags" in text and "stray close" in text


# ------------------------------------------------------------ reasoning and output limits

SERVERS = {
    "openai": ("demo_deepseek", "/v1"),
    "responses": ("openai_responses_summary", "/v1"),
    "anthropic": ("anthropic_thinking", ""),
    "bedrock": ("bedrock_converse_reasoning", ""),
    "ollama": ("ollama_chat_reasoning", ""),
    "openrouter": ("openrouter_reasoning", "/api/v1"),
    "gemini": ("gemini_reasoning", "/v1beta"),
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test-key",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1",
        "OPENAI_API_KEY": "test-key", "ANTHROPIC_API_KEY": "test-key",
        "OPENROUTER_API_KEY": "test-key", "GEMINI_API_KEY": "test-key",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)


def sent_body(
    capsys: pytest.CaptureFixture[str], provider: str, model: str, *options: str
) -> tuple[int, dict[str, object], str]:
    transcript, root = SERVERS[provider]
    with WireServer(Transcript.load(transcript)) as server:
        args = ["chat", "hi", "--provider", provider, "--model", model, "--json"]
        status, _, err = run_cli(capsys, *args, "--base-url", server.url + root, *options)
        body = server.requests[-1].json() if server.requests else {}
    return status, body, err


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize(
    ("provider", "model", "path"),
    [("openai", "deepseek-reasoner", ["max_tokens"]),
     ("responses", "o4-mini", ["max_output_tokens"]),
     ("anthropic", "claude-sonnet-4-5", ["max_tokens"]),
     ("bedrock", "anthropic.claude-sonnet-4-5", ["inferenceConfig", "maxTokens"]),
     ("ollama", "qwen3", ["options", "num_predict"]),
     ("openrouter", "anthropic/claude-sonnet-4", ["max_tokens"]),
     ("gemini", "gemini-2.5-flash", ["generationConfig", "maxOutputTokens"])],
)  # fmt: skip
def test_max_tokens_reaches_every_provider_in_its_own_field(
    capsys: pytest.CaptureFixture[str], provider: str, model: str, path: list[str]
) -> None:
    status, body, err = sent_body(capsys, provider, model, "--max-tokens", "1234")
    assert status == 0, err
    value: object = body
    for key in path:
        assert isinstance(value, dict), body
        value = value[key]
    assert value == 1234


def test_max_tokens_for_openai_itself_is_max_completion_tokens() -> None:
    max_tokens = PROVIDERS["openai"].max_tokens
    assert max_tokens is not None
    options = max_tokens(99, None)
    assert options == {"extra_body": {"max_completion_tokens": 99}}
    assert max_tokens(99, "https://api.openai.com/v1") == options


@pytest.mark.usefixtures("aws")
def test_reasoning_off_budgets_and_levels_reach_the_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, body, _ = sent_body(capsys, "openai", "qwen3-32b", "--reasoning", "off")
    assert status == 0 and body["chat_template_kwargs"] == {"enable_thinking": False}
    status, body, _ = sent_body(
        capsys, "anthropic", "claude-sonnet-4-5", "--reasoning", "2048", "--max-tokens", "9000"
    )
    assert status == 0
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 9000
    status, body, _ = sent_body(capsys, "gemini", "gemini-2.5-flash", "--reasoning", "0")
    assert status == 0
    assert body["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 0  # type: ignore[index]
    status, body, _ = sent_body(capsys, "openrouter", "x/y", "--reasoning", "high")
    assert status == 0 and body["reasoning"] == {"effort": "high"}


ONE_SHOT = {
    "openai": ("deepseek-reasoner", "/v1", content.chat_body),
    "responses": ("o4-mini", "/v1", content.responses_body),
    "anthropic": ("claude-sonnet-4-5", "", content.anthropic_body),
    "ollama": ("qwen3", "", content.ollama_body),
}


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("provider", sorted(ONE_SHOT))
def test_no_stream_makes_one_non_streaming_request(
    capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    """``--no-stream`` asks for one whole response (the server answers with a JSON body, which
    a streaming read could not parse) and prints the same channel a stream would."""
    model, root, make_body = ONE_SHOT[provider]
    answer = content.Answer(
        reasoning=("Short waves scatter more. ",), signatures=("sig-1==",),
        text="Blue light scatters most.", calls=(),
    )  # fmt: skip
    with WireServer(make_body(answer)) as server:
        args = ["chat", "hi", "--provider", provider, "--model", model, "--raw", "--no-stream"]
        status, out, err = run_cli(capsys, *args, "--base-url", server.url + root)
        sent = [request.json() for request in server.requests]
    assert status == 0, err
    assert len(sent) == 1 and sent[0].get("stream") in (None, False), sent
    assert "stream_options" not in sent[0]
    assert out == f"{OPEN}Short waves scatter more. {CLOSE}Blue light scatters most."


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--reasoning", "banana"], "is not off, on, minimal, low, medium, high, xhigh, max or a"),
     (["--reasoning", "-5"], "a token budget cannot be negative"),
     (["--max-tokens", "0"], "must be at least 1"),
     (["--max-tokens", "many"], "is not a whole number")],
)  # fmt: skip
def test_bad_reasoning_and_max_tokens_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["chat", "hi", "--provider", "openai", "--model", "m", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.usefixtures("aws")
def test_a_budget_that_means_nothing_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, body, err = sent_body(capsys, "anthropic", "claude-sonnet-4-5", "--reasoning", "0")
    assert status == 2 and body == {}
    # The pipe refuses it at construction now; the CLI prefixes the provider to such errors.
    assert err.startswith("reasoning-stream: ")
    assert "reasoning=0 means nothing for anthropic" in err
    assert len(said(err)) == 1  # one message, wrapped to 80 columns


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize(
    ("model", "words"),
    [("gpt-4o", "openai-chat model 'gpt-4o' is not a reasoning model: reasoning='high' is "
      "ignored and nothing is sent"),
     ("deepseek-reasoner", "openai-chat model 'deepseek-reasoner' always reasons and takes no "
      "effort setting; 'high' sent nothing")],
)  # fmt: skip
def test_reasoning_a_model_ignores_is_said_in_one_line(
    capsys: pytest.CaptureFixture[str], model: str, words: str
) -> None:
    status, _, err = sent_body(capsys, "openai", model, "--reasoning", "high")
    assert status == 0
    assert said(err) == [f"reasoning-stream: {words}"]  # no warnings.warn source line


def test_a_reasoning_warning_prints_as_one_line_in_a_fresh_process() -> None:
    with WireServer(Transcript.load("openai_chat_no_reasoning")) as server:
        completed = subprocess.run(
            cli("chat", "hi", "--provider", "openai", "--model", "gpt-4o", "--reasoning", "low",
                "--base-url", server.url + "/v1", "--json"),
            capture_output=True, text=True, env=env(PYTHONWARNINGS="default"), check=True,
        )  # fmt: skip
    assert said(completed.stderr) == [
        "reasoning-stream: openai-chat model 'gpt-4o' is not a reasoning model: "
        "reasoning='low' is ignored and nothing is sent"
    ]


# -------------------------------------------------------------------- endpoints and errors


def _root(provider: str) -> ApiRoot:
    root = PROVIDERS[provider].api_root
    assert root is not None, provider
    return root


WRONG_ROOTS = {
    "openai": ("", "/v1"),
    "responses": ("", "/v1"),
    "anthropic": ("/v1", "without /v1"),
    "bedrock": ("/model", "with no path"),
    "ollama": ("/api", "without /api"),
    "openrouter": ("/v1", "/api/v1"),
    "gemini": ("", "/v1beta"),
}


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_404_from_a_base_url_without_its_root_names_the_url_and_the_root(
    capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    suffix, expected = WRONG_ROOTS[provider]
    with WireServer() as server:  # answers 404 to every path
        url = server.url + suffix
        args = ["chat", "hi", "--provider", provider, "--model", "m", "--base-url", url]
        status, _, err = run_cli(capsys, *args)
    assert status == 1 and "Traceback" not in err
    error, hint = said(err)
    assert error.startswith("reasoning-stream: ")
    assert hint.startswith(f"reasoning-stream: HTTP 404 from {url}: that is not the API root;")
    assert expected in hint and _root(provider).default in hint


@pytest.mark.usefixtures("aws")
def test_a_404_from_the_right_root_asks_about_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with WireServer() as server:
        url = server.url + "/v1"
        status, _, err = run_cli(
            capsys, "chat", "hi", "--provider", "openai", "--model", "m", "--base-url", url
        )
    assert status == 1
    assert f"HTTP 404 from {url}: check --model, and that this is the API root;" in said(err)[-1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_connection_error_names_the_url_and_the_root(
    capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}{SERVERS[provider][1]}"
    args = ["chat", "hi", "--provider", provider, "--model", "m", "--base-url", url]
    status, _, err = run_cli(capsys, *args)
    assert status == 1 and "Traceback" not in err
    hint = said(err)[-1]
    assert hint.startswith(f"reasoning-stream: cannot connect to {url}; {provider} expects")
    assert _root(provider).default in hint


def test_the_docs_document_every_base_url_shape() -> None:
    readme = (Path(__file__).resolve().parents[1] / "docs/cli.md").read_text(encoding="utf-8")
    section = readme.split("## Base URLs", 1)[1].split("\n## ", 1)[0]
    for provider in PROVIDERS:
        root = _root(provider)
        row = next(line for line in section.splitlines() if line.startswith(f"| `{provider}`"))
        assert root.default in row, provider
        if root.env:
            assert root.env in row, provider


# ----------------------------------------------------------------------- status and width


def _length_without_answer() -> Transcript:
    """The length transcript with its answer deltas removed: all of the limit went to thought."""
    transcript = Transcript.load("openai_chat_length")
    events = json.loads(json.dumps(transcript.events))
    for event in events:
        data = event.get("data")
        if isinstance(data, dict):
            for choice in data.get("choices", []):
                if choice["delta"].get("content"):
                    choice["delta"]["content"] = None
    return dataclasses.replace(transcript, events=events)


@pytest.mark.parametrize(
    ("transcript", "words"),
    [(Transcript.load("openai_chat_length"),
      "the answer was cut at the output limit (status length): raise --max-tokens"),
     (_length_without_answer(),
      "the model used its whole output limit reasoning and wrote no answer (status length): "
      "raise --max-tokens or lower --reasoning")],
)  # fmt: skip
def test_a_length_stop_is_said(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    transcript: Transcript,
    words: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with WireServer(transcript) as server:
        args = ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner"]
        for mode in ([], ["--raw"], ["--json"]):
            server.add(transcript)
            status, _, err = run_cli(capsys, *args, "--base-url", server.url + "/v1", *mode)
            assert status == 0
            assert f"reasoning-stream: {words}" in said(err)


def test_the_chat_summary_fits_80_columns_after_a_blank_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with WireServer(Transcript.load("demo_deepseek")) as server:
        args = ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner"]
        status, out, err = run_cli(capsys, *args, "--base-url", server.url + "/v1")
    assert status == 0 and out.endswith("\n")
    assert err.startswith("\n")  # a blank line between the answer and the summary
    summary = err.splitlines()[1:]
    assert len(summary) >= 2 and all(len(line) <= 80 for line in summary)
    joined = " ".join(line.strip() for line in summary)
    for piece in ("completed", "tokens in 14 out 61", "reasoning 38", "total"):
        assert piece in joined


@settings(max_examples=examples(200), deadline=None)
@given(
    st.text(alphabet="abc ", min_size=1, max_size=30),
    st.lists(st.text(alphabet="xyz 0.", min_size=1, max_size=40), max_size=12),
    st.integers(20, 100),
)
def test_wrap_parts_breaks_only_between_parts(first: str, parts: list[str], width: int) -> None:
    """Nothing lost or reordered (each break turns one separator into a newline and the
    indent); a line is over ``width`` only when it holds one part alone; and no break is
    made where the next part would still have fitted."""
    text = wrap_parts(first, parts, width=width)
    assert text.replace("\n  ", " · ") == " · ".join([first, *parts])
    lines = text.split("\n")
    for line in lines:
        if len(line) > width:
            assert " · " not in line, line
    for line, following in pairwise(lines):
        assert len(line + " · " + following[2:].split(" · ")[0]) > width


def test_summary_line_reads_the_result() -> None:
    from reasoning_stream import TextDelta
    from reasoning_stream.testing import ScriptedPipe

    result = ScriptedPipe([TextDelta("hi")], name="scripted").run("x")
    line = summary_line(result)
    assert line.startswith("scripted: completed · first text ") and "\n" not in line
    assert " · thinking 0.00 s · total " in line


def test_colour_follows_no_color_force_color_and_the_terminal() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    assert color_wanted(Tty(), {}) and not color_wanted(Pipe(), {})
    assert not color_wanted(Tty(), {"NO_COLOR": "1"})
    assert color_wanted(Tty(), {"NO_COLOR": ""})  # empty means unset
    assert color_wanted(Pipe(), {"FORCE_COLOR": "1"})
    assert not color_wanted(Pipe(), {"FORCE_COLOR": ""})
    assert not color_wanted(Pipe(), {"FORCE_COLOR": "1", "NO_COLOR": "1"})  # NO_COLOR wins
    assert not color_wanted(Tty(), {"TERM": "dumb"})


class _ClosesAfter(io.StringIO):
    """Standard output whose reader leaves after ``n`` writes: every later write raises
    ``BrokenPipeError``, as a write into a pipe whose reader exited does."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= 1
        return super().write(text)

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("mode", ["--json", "--raw", None])
def test_wherever_the_reader_leaves_the_run_stops_quietly(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, mode: str | None
) -> None:
    """Every write position: status 141 (or 0 once everything was written), nothing logged,
    nothing on stderr."""
    from reasoning_stream._cli import chat

    transcript = Transcript.load("demo_deepseek")
    with WireServer() as server:
        args = build_parser().parse_args(
            ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner",
             "--base-url", server.url + "/v1", *([mode] if mode else [])]
        )  # fmt: skip
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        server.add(transcript)
        whole = _ClosesAfter(10**6)
        assert chat(args, out=whole, err=io.StringIO()) == 0
        writes = 10**6 - whole.left
        for n in range(writes + 1):
            server.add(transcript)
            err = io.StringIO()
            status = chat(args, out=_ClosesAfter(n), err=err)
            assert status == (0 if n == writes else 141), n
            if status == 141:
                assert err.getvalue() == "", n
        # A stream cut mid-reasoning: the reader may leave while the run is already closing.
        for n in range(writes + 1):
            server.add(Reply(transcript, disconnect_after=4))
            err = io.StringIO()
            status = chat(args, out=_ClosesAfter(n), err=err)
            assert status in (1, 141), n
            assert "Traceback" not in err.getvalue()
    assert not [record for record in caplog.records if record.name.startswith("reasoning")]


def test_every_registered_provider_has_its_endpoint_facts() -> None:
    """A provider added to the registry needs its API root and ``--max-tokens`` option on its
    ``ProviderSpec`` (and its row in the Base URLs table of docs/cli.md), and core names none."""
    for name, spec in PROVIDERS.items():
        assert spec.api_root is not None and spec.max_tokens is not None, name
        assert spec.api_root.default.startswith(("http://", "https://")), name
        assert spec.max_tokens(7, None), name  # some option carries the limit
    cli = (Path(__file__).resolve().parent.parent / "reasoning_stream" / "_cli.py").read_text()
    for host in ("api.openai.com", "anthropic.com", "localhost:11434", "openrouter.ai"):
        assert host not in cli, host


KEYS = {"OPENROUTER_API_KEY": "k", "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k",
        "GEMINI_API_KEY": "k", "AWS_REGION": "us-east-1"}  # fmt: skip


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_pipe_constructor_error_names_the_provider_once(provider: str) -> None:
    """A pipe's ValueError that names its provider gets no second ``"{provider}: "`` prefix;
    one that does not name it gets the prefix."""
    spec = PROVIDERS[provider]
    if provider not in ("gemini", "ollama", "openrouter"):  # where reasoning=0 means off
        with pytest.raises(CommandError) as caught:
            build_pipe(provider, "m", reasoning=0, environ=KEYS)  # the message names it
        message = str(caught.value)
        assert f"{spec.id} model 'm'" in message, message
        assert not message.startswith(f"{provider}: "), message
    with pytest.raises(CommandError) as caught:
        build_pipe(provider, "m", reasoning=-1, environ=KEYS)  # this one does not
    assert str(caught.value).startswith(f"{provider}: reasoning=-1"), caught.value
