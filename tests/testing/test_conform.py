"""The conformance probe against gateways built to break one rule each, and a faithful one.

Each broken gateway is a forwarding proxy (``gateways.Gateway``) that damages one thing the
way real gateways have: drops signature-only blocks, reorders blocks, strips ``rs_`` items or
``reasoning_content``, moves a ``thoughtSignature``, turns reasoning into text. The probe
must fail exactly the rules that damage breaks, say what went upstream, and pass every rule
through the faithful proxy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reasoning_stream import UsageError
from reasoning_stream.__main__ import main
from reasoning_stream.testing import ConformReport, WireServer, conform
from tests.testing.gateways import Damage, Gateway, Json, running

ROOTS = {"anthropic": "", "responses": "/v1", "openai": "/v1", "openrouter": "/api/v1",
         "gemini": "/v1beta", "ollama": ""}  # fmt: skip
RULES = {
    "anthropic": {
        "signature_byte_for_byte",
        "signature_only_block_kept",
        "redacted_block_kept",
        "block_order",
        "stream_equals_oneshot",
        "reasoning_as_reasoning",
    },
    "responses": {"reasoning_item_before_follower", "stream_equals_oneshot",
                  "reasoning_as_reasoning"},
    "openai": {"reasoning_content_echoed", "stream_equals_oneshot", "reasoning_as_reasoning"},
    "openrouter": {"reasoning_details_echoed", "stream_equals_oneshot", "reasoning_as_reasoning"},
    "gemini": {"thought_signature_on_part", "stream_equals_oneshot", "reasoning_as_reasoning"},
    "ollama": {"thinking_echoed", "stream_equals_oneshot", "reasoning_as_reasoning"},
}  # fmt: skip


def probe(provider: str, damage: Damage | None = None) -> ConformReport:
    gateway = Gateway(damage=damage or Damage())
    with running(gateway) as url:
        return conform(provider, url + ROOTS[provider], upstream_port=gateway.upstream_port)


def failing(report: ConformReport) -> set[str]:
    return {row.name for row in report.rows if not row.passed}


# ------------------------------------------------------------------------------- damages


def messages(role: str, change: Callable[[list[Json]], list[Json]]) -> Callable[[Json], Json]:
    """A request damage: ``change`` applied to the list content of every ``role`` message."""

    def damage(body: Json) -> Json:
        key = "contents" if role == "model" else "messages"
        for message in body.get(key) or ():
            inner = "parts" if role == "model" else "content"
            if message.get("role") == role and isinstance(message.get(inner), list):
                message[inner] = change(message[inner])
        return body

    return damage


def assistant_field(change: Callable[[Json], None]) -> Callable[[Json], Json]:
    def damage(body: Json) -> Json:
        for message in body.get("messages") or ():
            if message.get("role") == "assistant":
                change(message)
        return body

    return damage


def alter_signatures(blocks: list[Json]) -> list[Json]:
    for block in blocks:
        if block.get("type") == "thinking" and block.get("thinking"):
            block["signature"] = block["signature"][:-4] + "AAAA"
    return blocks


def drop_signature_only(blocks: list[Json]) -> list[Json]:
    return [b for b in blocks if not (b.get("type") == "thinking" and not b.get("thinking"))]


def blank_redacted(blocks: list[Json]) -> list[Json]:
    for block in blocks:
        if block.get("type") == "redacted_thinking":
            block["data"] = "[redacted by gateway]"
    return blocks


def thinking_first(blocks: list[Json]) -> list[Json]:
    hidden = ("thinking", "redacted_thinking")
    return sorted(blocks, key=lambda block: block.get("type") not in hidden)


def anthropic_oneshot_text(body: Json) -> Json:
    for block in body.get("content") or ():
        if block.get("type") == "text":
            block["text"] += " (cached)"
    return body


def strip_rs_items(body: Json) -> Json:
    if isinstance(body.get("input"), list):
        body["input"] = [item for item in body["input"] if item.get("type") != "reasoning"]
    return body


def drop_store(body: Json) -> Json:
    body.pop("store", None)
    return body


def reasoning_into_text(event: Json) -> Json:
    for choice in event.get("choices") or ():
        delta = choice.get("delta") or {}
        reasoning = delta.pop("reasoning_content", None)
        if isinstance(reasoning, str):
            delta["content"] = (delta.get("content") or "") + reasoning
    return event


def chat_oneshot_text(body: Json) -> Json:
    for choice in body.get("choices") or ():
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            message["content"] += " (cached)"
    return body


def ollama_thinking_into_text(line: Json) -> Json:
    message = line.get("message") or {}
    thinking = message.pop("thinking", None)
    if isinstance(thinking, str):
        message["content"] = "<think>" + thinking + (message.get("content") or "")
    return line


def move_signatures(parts: list[Json]) -> list[Json]:
    """Each thoughtSignature moves to the next part (the last one's to the first)."""
    signatures = [part.pop("thoughtSignature", None) for part in parts]
    for part, signature in zip(parts, signatures[-1:] + signatures[:-1], strict=True):
        if signature is not None:
            part["thoughtSignature"] = signature
    return parts


BROKEN: list[tuple[str, str, Damage, set[str]]] = [
    ("anthropic", "alters signatures", Damage(request=messages("assistant", alter_signatures)),
     {"signature_byte_for_byte"}),
    ("anthropic", "drops signature-only blocks",
     Damage(request=messages("assistant", drop_signature_only)), {"signature_only_block_kept"}),
    ("anthropic", "blanks redacted blocks", Damage(request=messages("assistant", blank_redacted)),
     {"redacted_block_kept"}),
    ("anthropic", "puts thinking first", Damage(request=messages("assistant", thinking_first)),
     {"block_order"}),
    ("anthropic", "changes one-shot text", Damage(oneshot=anthropic_oneshot_text),
     {"stream_equals_oneshot"}),
    ("responses", "strips rs_ items", Damage(request=strip_rs_items),
     {"reasoning_item_before_follower"}),
    ("responses", "drops store=false", Damage(request=drop_store),
     {"reasoning_item_before_follower"}),
    ("openai", "strips reasoning_content",
     Damage(request=assistant_field(lambda m: m.pop("reasoning_content", None))),
     {"reasoning_content_echoed"}),
    # Reasoning that arrives as text cannot go back as reasoning either, and the one-shot
    # reply (undamaged) then differs from the stream.
    ("openai", "turns streamed reasoning into text", Damage(event=reasoning_into_text),
     {"reasoning_as_reasoning", "stream_equals_oneshot", "reasoning_content_echoed"}),
    ("openai", "changes one-shot text", Damage(oneshot=chat_oneshot_text),
     {"stream_equals_oneshot"}),
    ("openrouter", "strips reasoning_details",
     Damage(request=assistant_field(lambda m: m.pop("reasoning_details", None))),
     {"reasoning_details_echoed"}),
    ("gemini", "moves thoughtSignature", Damage(request=messages("model", move_signatures)),
     {"thought_signature_on_part"}),
    ("ollama", "strips thinking",
     Damage(request=assistant_field(lambda m: m.pop("thinking", None))), {"thinking_echoed"}),
    ("ollama", "turns streamed thinking into text", Damage(event=ollama_thinking_into_text),
     {"reasoning_as_reasoning", "stream_equals_oneshot", "thinking_echoed"}),
]  # fmt: skip


# --------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("provider", sorted(RULES))
def test_a_faithful_proxy_passes_every_rule(provider: str) -> None:
    report = probe(provider)
    assert {row.name for row in report.rows} == RULES[provider]
    assert report.passed, [row for row in report.rows if not row.passed]
    assert all(row.doc.startswith("https://") for row in report.rows)
    assert report.requests, "the upstream recorded what the gateway sent it"


@pytest.mark.parametrize(
    ("provider", "what", "damage", "broken"),
    BROKEN,
    ids=[f"{provider}-{what.replace(' ', '-')}" for provider, what, _, _ in BROKEN],
)
def test_a_gateway_breaking_one_rule_fails_that_rule(
    provider: str, what: str, damage: Damage, broken: set[str]
) -> None:
    report = probe(provider, damage)
    assert failing(report) == broken
    assert not report.passed
    for row in report.rows:
        if row.name in broken and row.name not in (
            "stream_equals_oneshot",
            "reasoning_as_reasoning",
        ):
            assert "upstream" in row.detail  # what was sent upstream, and what it carried
        assert row.doc.startswith("https://")  # fmt: skip


def test_a_failing_row_names_what_the_request_carried() -> None:
    damage = Damage(request=assistant_field(lambda m: m.pop("reasoning_content", None)))
    row = next(r for r in probe("openai", damage).rows if r.name == "reasoning_content_echoed")
    assert "the client got unchanged" in row.detail
    assert "carried reasoning_content: nothing" in row.detail
    assert row.doc == "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"


def test_a_report_never_prints_an_opaque_payload() -> None:
    report = probe("anthropic", Damage(request=messages("assistant", alter_signatures)))
    text = json.dumps(report.to_json())
    assert "ErcBCkYIBxgC" not in text and "EmwKAhgBEgy3" not in text
    assert "sha256:" in text


# ----------------------------------------------------------------------------- arguments


def test_an_unknown_provider_names_the_known_shapes() -> None:
    with pytest.raises(UsageError, match=r"anthropic.*gemini|gemini.*anthropic"):
        conform("bedrock", "http://127.0.0.1:9")


def test_a_base_url_must_be_http() -> None:
    with pytest.raises(UsageError, match="http://"):
        conform("anthropic", "127.0.0.1:4000")


def test_a_busy_upstream_port_is_a_usage_error() -> None:
    with WireServer() as taken, pytest.raises(UsageError, match="--upstream-port"):
        conform("anthropic", "http://127.0.0.1:9", upstream_port=taken.port)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.mark.usefixtures("no_keys")
def test_live_without_a_key_names_the_variable() -> None:
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        conform("anthropic", "http://127.0.0.1:9", live=True)


def test_live_runs_a_real_loop_and_never_prints_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A WireServer stands in for the real API behind the gateway."""
    secret = "sk-ant-live-key-must-not-show"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    report_file = tmp_path / "live.json"
    with WireServer("anthropic_interleaved_tool", "anthropic_tool_answer") as api:
        gateway = Gateway(upstream_port=api.port)
        with running(gateway) as url:
            status = main(["conform", "--provider", "anthropic", "--base-url", url, "--live",
                           "--json", str(report_file)])  # fmt: skip
    assert any(secret in value for value in api.requests[0].headers.values())
    out, err = capsys.readouterr()
    written = report_file.read_text()
    assert status == 0, out + err
    assert secret not in out + err + written
    data = json.loads(written)
    assert data["passed"] is True
    assert [row["name"] for row in data["rows"]] == [
        "live_tool_call",
        "live_follow_up_accepted",
        "reasoning_as_reasoning",
    ]


# ---------------------------------------------------------------------------------- CLI


def cli(*args: str) -> list[str]:
    return ["conform", *args]


def test_cli_exit_status_and_json_follow_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = Gateway(damage=Damage(request=strip_rs_items))
    report_file = tmp_path / "report.json"
    with running(gateway) as url:
        status = main(cli("--provider", "responses", "--base-url", url + "/v1",
                          "--upstream-port", str(gateway.upstream_port),
                          "--json", str(report_file)))  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith(f"upstream: http://127.0.0.1:{gateway.upstream_port}")
    assert "FAIL  reasoning_item_before_follower" in out
    assert "PASS  stream_equals_oneshot" in out
    data = json.loads(report_file.read_text())
    assert data["passed"] is False
    for row in data["rows"]:
        assert set(row) == {"name", "passed", "detail", "doc"}

    gateway.damage = Damage()
    with running(gateway) as url:
        status = main(cli("--provider", "responses", "--base-url", url + "/v1",
                          "--upstream-port", str(gateway.upstream_port)))  # fmt: skip
    assert status == 0
    assert "3 of 3 rules held" in capsys.readouterr().out


def test_cli_refuses_an_upstream_port_with_live(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(cli("--provider", "anthropic", "--base-url", "http://127.0.0.1:9", "--live",
                      "--upstream-port", "4010"))  # fmt: skip
    assert status == 2
    assert "--upstream-port" in capsys.readouterr().err


@pytest.mark.usefixtures("no_keys")
def test_cli_live_without_a_key_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(cli("--provider", "gemini", "--base-url", "http://127.0.0.1:9", "--live"))
    assert status == 2
    assert "GEMINI_API_KEY" in capsys.readouterr().err


def test_cli_rejects_a_provider_it_cannot_probe(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(cli("--provider", "bedrock", "--base-url", "http://127.0.0.1:9"))
    assert exit_info.value.code == 2
    assert "choose from" in capsys.readouterr().err


def test_cli_says_when_the_gateway_never_reached_the_upstream(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with WireServer() as closed:
        dead = closed.url  # a port nothing listens on once this server stops
    status = main(cli("--provider", "openai", "--base-url", dead + "/v1"))
    out, err = capsys.readouterr()
    assert status == 1
    assert "no request of step 1 reached the upstream" in out
    assert "received no request" in err and f"the gateway at {dead}/v1" in err


def test_conform_prints_the_upstream_url_before_any_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gateway = Gateway()
    with running(gateway) as url:
        report = conform("openai", url + "/v1", upstream_port=gateway.upstream_port)
    assert report.upstream_url == f"http://127.0.0.1:{gateway.upstream_port}"
    assert report.upstream_url in capsys.readouterr().err
