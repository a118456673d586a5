"""The command line on a real pseudo-terminal: the live line, colour, help for stdin, Ctrl-C.

Each test starts ``python -m reasoning_stream`` with a ``pty`` as its terminal (so ``isatty()``
is true in the child, as for a person at a shell) and reads every byte the child writes. A
small screen model (carriage return, line feed, erase-to-end-of-line; colour codes dropped)
shows what a person is left looking at. The same commands with a pipe instead of a terminal
must carry no cursor control at all.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator, Mapping

import pytest

from reasoning_stream import ReasoningStream
from reasoning_stream.testing import Reply, Transcript, WireServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

SGR = re.compile(rb"\x1b\[[0-9;]*m")
LIVE = re.compile(r"Thinking… (\d+\.\d) s")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="24", OPENAI_API_KEY="test-key")
    env.update(extra)
    return env


def _take_terminal() -> None:
    """In the child, after setsid(): make the pty on stdin its controlling terminal, so that
    Ctrl-C typed into it becomes SIGINT for the child, as at a shell."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A child process whose stdin, stdout and stderr are one pseudo-terminal."""

    def __init__(self, args: list[str], env: Mapping[str, str]) -> None:
        master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "reasoning_stream", *args],
            stdin=slave, stdout=slave, stderr=slave, env=dict(env), close_fds=True,
            start_new_session=True, preexec_fn=_take_terminal,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.output = b""

    def read_more(self, timeout: float) -> bool:
        """Read what arrives within ``timeout``; ``False`` once the child closed the pty."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.output += data
        return bool(data)

    def read_until(self, needle: bytes, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.output:
            assert time.monotonic() < deadline, f"no {needle!r} in {self.output!r}"
            if not self.read_more(0.1):
                raise AssertionError(f"the child closed before {needle!r}: {self.output!r}")

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self.read_more(0.1):
            if self.process.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
            assert time.monotonic() < deadline, f"still running: {self.output!r}"
        status = self.process.wait(timeout=timeout)
        os.close(self.master)
        return status

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


def screen(output: bytes) -> list[str]:
    """The lines left on a terminal after ``output``: \\r, \\n, ESC[K honoured, colour dropped."""
    lines: list[list[str]] = [[]]
    row = col = 0
    text = SGR.sub(b"", output).decode("utf-8", errors="replace")
    i = 0
    while i < len(text):
        if text.startswith("\x1b[K", i):
            del lines[row][col:]
            i += 3
            continue
        c = text[i]
        i += 1
        if c == "\r":
            col = 0
        elif c == "\n":
            row += 1
            col = 0  # the pty's output processing turns \n into \r\n anyway
            if row == len(lines):
                lines.append([])
        else:
            line = lines[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = c
            else:
                line.append(c)
            col += 1
    return ["".join(line).rstrip() for line in lines]


def test_the_screen_model() -> None:
    """The oracle the other tests lean on: overwrite, erase, colour codes."""
    assert screen(b"abc\rx") == ["xbc"]
    assert screen(b"\x1b[2mThinking 0.1 s\x1b[0m\x1b[K\r\x1b[Kanswer\r\nnext") == ["answer", "next"]
    assert screen(b"one\r\n\r\ntwo") == ["one", "", "two"]


@pytest.fixture
def slow_plain_server() -> Iterator[WireServer]:
    """A model that shows nothing for a while (hidden reasoning, or a slow first token)."""
    reply = Reply(Transcript.load("openai_chat_no_reasoning"), delay=0.4)
    with WireServer(reply) as server:
        yield server


def chat_args(server: WireServer, *more: str) -> list[str]:
    base = server.url + "/v1"
    return ["chat", "hi", "--provider", "openai", "--model", "m", "--base-url", base, *more]


def test_live_line_counts_up_while_waiting_and_is_gone_when_the_answer_flows(
    slow_plain_server: WireServer,
) -> None:
    terminal = Terminal(chat_args(slow_plain_server), child_env())
    assert terminal.finish() == 0
    text = terminal.text
    seconds = [float(value) for value in LIVE.findall(text)]
    assert len(seconds) >= 3, text  # it updates ...
    assert seconds == sorted(seconds) and seconds[-1] > seconds[0]  # ... counting up
    last_draw = text.rindex("Thinking…")
    answer = text.index("Yes: 2 < 3")
    assert "\r\x1b[K" in text[last_draw:answer]  # erased before the answer is written
    lines = screen(terminal.output)
    assert not any("Thinking" in line for line in lines)  # ... and nothing of it is left
    assert SGR.search(terminal.output)  # a terminal gets colour by default
    assert lines[0] == "Yes: 2 < 3, and <b> is not a tag here."


def test_live_line_gives_way_to_reasoning_text() -> None:
    reply = Reply(Transcript.load("demo_deepseek"), delay=0.15)
    with WireServer(reply) as server:
        args = ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner"]
        terminal = Terminal([*args, "--base-url", server.url + "/v1"], child_env())
        assert terminal.finish() == 0
    text = terminal.text
    assert LIVE.search(text), text
    assert text.index("Thinking…") < text.index("The user wants a haiku")
    lines = screen(terminal.output)
    assert lines[0] == "Thinking"  # the header took the live line's place
    assert lines[1].startswith("The user wants a haiku")
    assert not any("Thinking…" in line for line in lines)


def test_no_live_line_and_no_cursor_control_into_a_pipe(slow_plain_server: WireServer) -> None:
    """Even with colour forced (FORCE_COLOR), a pipe gets no live line and no cursor moves."""
    completed = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", *chat_args(slow_plain_server)],
        capture_output=True, env=child_env(FORCE_COLOR="1"), timeout=60, check=True,
    )  # fmt: skip
    for stream in (completed.stdout, completed.stderr):
        assert b"Thinking" not in stream and b"\r" not in stream
        assert b"\x1b[K" not in stream
    assert completed.stdout == b"Yes: 2 < 3, and <b> is not a tag here.\n"
    assert SGR.search(completed.stderr) is None  # the summary is never coloured


def test_demo_on_a_no_color_terminal_fits_80_columns() -> None:
    """NO_COLOR on a terminal: no colour codes; the report fits 80 columns after a blank line."""
    terminal = Terminal(["demo", "--provider", "anthropic"], child_env(NO_COLOR="1"))
    assert terminal.finish() == 0
    assert not SGR.search(terminal.output)
    lines = screen(terminal.output)
    report = lines.index("What each pipe captured")
    assert lines[report - 1] == ""
    assert all(len(line) <= 80 for line in lines[report:]), lines[report:]
    assert any(line.strip().startswith("total ") for line in lines[report:])  # wrapped


def test_raw_ends_with_a_newline_on_a_terminal_and_is_exact_into_a_pipe() -> None:
    args = ["demo", "--provider", "openai", "--raw"]
    terminal = Terminal(args, child_env())
    assert terminal.finish() == 0
    assert terminal.output.endswith(b"scatters blue light most.\r\n")
    assert b"Thinking" not in terminal.output  # raw bytes never carry the live line
    piped = subprocess.run(
        [sys.executable, "-m", "reasoning_stream", *args],
        capture_output=True, env=child_env(), check=True,
    )  # fmt: skip
    assert piped.stdout.endswith(b"scatters blue light most.")
    split = ReasoningStream.split(piped.stdout.decode(), lossless=True)
    assert split.text.endswith("light most.") and split.segments


def test_split_on_a_terminal_says_it_reads_standard_input() -> None:
    terminal = Terminal(["split"], child_env())
    terminal.read_until(b"Ctrl-D")
    assert "standard input" in terminal.text
    terminal.send(b"<think>plan</think>answer\n")
    terminal.send(b"\x04")  # end of input, as a person types it
    assert terminal.finish() == 0
    assert '"reasoning": "plan"' in terminal.text and '"text": "answer"' in terminal.text


def test_ctrl_c_in_split_exits_130_quietly() -> None:
    terminal = Terminal(["split"], child_env())
    terminal.read_until(b"Ctrl-D")
    terminal.send(b"\x03")  # the terminal turns it into SIGINT
    assert terminal.finish() == 130
    assert "Traceback" not in terminal.text and "KeyboardInterrupt" not in terminal.text


def test_ctrl_c_while_the_live_line_shows_exits_130_and_erases_it() -> None:
    transcript = Transcript.load("openai_chat_no_reasoning")
    with WireServer(Reply(transcript, hang_after=0)) as server:
        terminal = Terminal(chat_args(server), child_env())
        deadline = time.monotonic() + 30
        while not server.requests:  # interrupt the wait for the answer, not a lazy import
            assert time.monotonic() < deadline
            time.sleep(0.05)
        frames = len(LIVE.findall(terminal.text))
        while len(LIVE.findall(terminal.text)) < frames + 3:  # it counts while nothing comes
            assert time.monotonic() < deadline and terminal.process.poll() is None
            terminal.read_more(0.1)
        terminal.process.send_signal(signal.SIGINT)
        assert terminal.finish() == 130
    assert "Traceback" not in terminal.text
    lines = [line for line in screen(terminal.output) if line]
    assert not any("Thinking…" in line for line in lines)
    assert lines[-2].startswith("interrupted; captured 0 characters of reasoning")
    assert lines[-1] == "  (cancelled_before_answer)" and all(len(line) <= 80 for line in lines)


def test_length_status_is_said_on_the_terminal() -> None:
    with WireServer(Transcript.load("openai_chat_length")) as server:
        args = ["chat", "hi", "--provider", "openai", "--model", "deepseek-reasoner"]
        terminal = Terminal([*args, "--base-url", server.url + "/v1"], child_env())
        assert terminal.finish() == 0
    lines = screen(terminal.output)
    notice = [line for line in lines if "status length" in line]
    assert notice and notice[0].startswith("reasoning-stream: the answer was cut")
