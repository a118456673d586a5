"""Every Python snippet in the README runs, against the WireServer where it needs a provider."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasoning_stream.testing import Transcript, WireServer

README = Path(__file__).resolve().parent.parent / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)

TRANSCRIPTS = [
    "demo_deepseek",
    "openai_responses_summary",
    "anthropic_thinking",
    "bedrock_converse_reasoning",
    "ollama_chat_reasoning",
    "openrouter_reasoning",
    "gemini_reasoning",
]


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer(*(Transcript.load(name) for name in TRANSCRIPTS)) as running:
        yield running


@pytest.fixture
def provider_environment(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point every SDK's usual environment variables at the local server."""
    for name, value in {
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "test-key",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": server.url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test-key",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
        "OLLAMA_HOST": server.url,
        "OPENROUTER_BASE_URL": f"{server.url}/api/v1",
        "OPENROUTER_API_KEY": "test-key",
        "GEMINI_BASE_URL": f"{server.url}/v1beta",
        "GEMINI_API_KEY": "test-key",
    }.items():
        monkeypatch.setenv(name, value)


def test_the_readme_has_snippets() -> None:
    assert SNIPPETS  # the rest of the examples are on the site's pages (tests/test_docs.py)


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_snippet_runs(index: int, provider_environment: None) -> None:
    code = SNIPPETS[index]
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exec(compile(code, f"README.md snippet {index}", "exec"), {"__name__": "readme"})


def test_the_quick_start_is_two_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in quick.splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].endswith("reasoning-stream demo")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci


def test_the_readme_links_resolve_in_the_repository() -> None:
    """The README's links to the site's pages are relative, so they work on GitHub too."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert "://" not in link and (README.parent / link).is_file(), link
