"""A real llama.cpp ``llama-server`` on a free loopback port, for the opt-in local-model tests.

Where the parts come from (``tests/llama_setup.sh`` builds or fetches both and prints the two
lines to export):

- ``REASONING_STREAM_LLAMA_SERVER``: the ``llama-server`` executable (else ``llama-server`` on
  ``PATH``);
- ``REASONING_STREAM_LLAMA_MODEL``: a GGUF model file whose chat template takes tools
  (Qwen2.5-Coder 0.5B Instruct is the one the tests were measured with).

:func:`running_llama` starts ``llama-server --jinja`` (the chat template renders the tools and
the server parses the model's calls into ``tool_calls``), waits for ``/health`` to answer 200
within a deadline, and stops the process on exit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.redis_server import free_port

SERVER_VARIABLE = "REASONING_STREAM_LLAMA_SERVER"
MODEL_VARIABLE = "REASONING_STREAM_LLAMA_MODEL"
SETUP_HINT = "run tests/llama_setup.sh and export the two lines it prints"
START_SECONDS = 180.0
"""Loading a 0.5B model takes seconds; a busy machine is given minutes."""


class LlamaUnavailable(RuntimeError):
    """The server executable or the model file is missing; the message says what to set."""


def find_server() -> Path:
    """The ``llama-server`` executable: ``$REASONING_STREAM_LLAMA_SERVER``, else ``PATH``."""
    named = os.environ.get(SERVER_VARIABLE)
    found = named or shutil.which("llama-server")
    if not found:
        raise LlamaUnavailable(f"no llama-server: set {SERVER_VARIABLE} ({SETUP_HINT})")
    path = Path(found)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LlamaUnavailable(f"{SERVER_VARIABLE}={found!r} is not an executable file")
    return path


def find_model() -> Path:
    """The GGUF file named by ``$REASONING_STREAM_LLAMA_MODEL``, checked to be one."""
    named = os.environ.get(MODEL_VARIABLE)
    if not named:
        raise LlamaUnavailable(f"no model: set {MODEL_VARIABLE} to a .gguf file ({SETUP_HINT})")
    path = Path(named)
    if not path.is_file():
        raise LlamaUnavailable(f"{MODEL_VARIABLE}={named!r} is not a file")
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            raise LlamaUnavailable(f"{MODEL_VARIABLE}={named!r} is not a GGUF file")
    return path


@dataclass
class LlamaServer:
    """A running ``llama-server``: its root URL (``url + "/v1"`` is the OpenAI API root)."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _wait_ready(server: LlamaServer, deadline_seconds: float) -> None:
    deadline = time.monotonic() + deadline_seconds
    while True:
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise LlamaUnavailable(f"llama-server exited with {server.process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return  # 503 while the model loads
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise LlamaUnavailable(
                f"llama-server did not answer /health within {deadline_seconds:.0f} s; "
                f"see {server.log}"
            )
        time.sleep(0.5)


@contextlib.contextmanager
def running_llama(
    folder: Path,
    *,
    server: Path | None = None,
    model: Path | None = None,
    context: int = 4096,
    start_seconds: float = START_SECONDS,
) -> Iterator[LlamaServer]:
    """``llama-server --jinja`` with ``model`` on a free port, ready; stopped on exit.

    ``--jinja`` makes the server render tools with the model's own chat template and parse its
    calls into ``tool_calls`` (llama.cpp docs/function-calling.md). Its log goes to
    ``folder/llama-server.log``.
    """
    executable = server or find_server()
    weights = model or find_model()
    port = free_port()
    log = folder / "llama-server.log"
    command = [
        str(executable), "--jinja", "-m", str(weights), "--host", "127.0.0.1",
        "--port", str(port), "-c", str(context), "--threads", "2", "--parallel", "1",
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    running = LlamaServer(process, port, log)
    try:
        _wait_ready(running, start_seconds)
        yield running
    finally:
        running.stop()
