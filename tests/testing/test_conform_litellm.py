"""The conformance probe against a real gateway: LiteLLM's proxy, started as a subprocess.

Opt-in (``REASONING_STREAM_LITELLM=1``; ``pip install 'litellm[proxy]'``, which the test
extra does not install). Its config points every upstream at the probe's WireServer; the
master key it insists on is a stand-in, and ``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it
offline. The expected findings are what docs/conform.md reports for this LiteLLM version.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reasoning_stream.testing import conform
from tests.redis_server import free_port

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("REASONING_STREAM_LITELLM") != "1",
        reason="opt-in: set REASONING_STREAM_LITELLM=1 (needs pip install 'litellm[proxy]')",
    ),
    pytest.mark.timeout(300),  # the first test waits for LiteLLM's proxy to start
]

MASTER_KEY = "sk-conform-master-not-a-secret"
_START_SECONDS = 180.0


def litellm_config(upstream: str) -> str:
    """A LiteLLM config whose every model is served by the probe's upstream."""
    models = [
        ("deepseek-reasoner", "deepseek/deepseek-reasoner", "/v1", ""),
        ("deepseek-via-openai", "openai/deepseek-reasoner", "/v1", ""),
        ("deepseek-merged", "deepseek/deepseek-reasoner", "/v1",
         "      merge_reasoning_content_in_choices: true\n"),
        ("claude-sonnet-4-5", "anthropic/claude-sonnet-4-5", "", ""),
        ("o4-mini", "openai/o4-mini", "/v1", ""),
        ("google/gemini-2.5-pro", "openrouter/google/gemini-2.5-pro", "/api/v1", ""),
    ]  # fmt: skip
    lines = ["model_list:\n"]
    for name, model, root, extra in models:
        lines.append(
            f"  - model_name: {name}\n"
            f"    litellm_params:\n"
            f"      model: {model}\n"
            f"      api_base: {upstream}{root}\n"
            f"      api_key: upstream-not-a-key\n{extra}"
        )
    lines.append(f"general_settings:\n  master_key: {MASTER_KEY}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """LiteLLM's proxy on a free port: (its URL, the upstream port its config names)."""
    executable = Path(sys.executable).parent / "litellm"
    if not executable.exists():
        pytest.skip("LiteLLM's proxy is not installed: pip install 'litellm[proxy]'")
    upstream_port, port = free_port(), free_port()
    folder = tmp_path_factory.mktemp("litellm")
    config = folder / "config.yaml"
    config.write_text(litellm_config(f"http://127.0.0.1:{upstream_port}"))
    environment = {
        **os.environ,
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    log = (folder / "litellm.log").open("wb")
    process = subprocess.Popen(
        [str(executable), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + _START_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"LiteLLM exited with {process.returncode}; see {log.name}")
            try:
                if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"LiteLLM did not start within {_START_SECONDS:.0f} s; see {log.name}")
            time.sleep(0.5)
        yield url, upstream_port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


# (--provider, --model, API root on LiteLLM, the rules LiteLLM breaks)
CASES = [
    ("openai", "deepseek-reasoner", "/v1", set()),
    ("openai", "deepseek-via-openai", "/v1", set()),
    ("anthropic", "claude-sonnet-4-5", "", set()),
    ("responses", "o4-mini", "/v1", set()),
    # LiteLLM answers in its own chat shape: one-shot replies move OpenRouter's reasoning
    # into reasoning_content and reasoning_details under provider_specific_fields.
    ("openrouter", "google/gemini-2.5-pro", "/v1",
     {"reasoning_details_echoed", "stream_equals_oneshot"}),
    # merge_reasoning_content_in_choices streams reasoning as "<think>" text.
    ("openai", "deepseek-merged", "/v1",
     {"reasoning_as_reasoning", "reasoning_content_echoed", "stream_equals_oneshot"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "model", "root", "broken"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_what_the_probe_finds_on_litellm(
    litellm: tuple[str, int],
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    model: str,
    root: str,
    broken: set[str],
) -> None:
    url, upstream_port = litellm
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.setenv(name, MASTER_KEY)
    report = conform(provider, url + root, model=model, upstream_port=upstream_port)
    found = {row.name for row in report.rows if not row.passed}
    table = "\n".join(f"{row.passed!s:5} {row.name}: {row.detail}" for row in report.rows)
    assert found == broken, f"LiteLLM's behaviour changed; update docs/conform.md:\n{table}"
    agents = {request.headers.get("user-agent", "") for request in report.requests}
    assert any("litellm" in agent.lower() or "openai" in agent.lower() for agent in agents)
