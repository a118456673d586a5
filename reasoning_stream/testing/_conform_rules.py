"""The conformance probe's rules: what each one checks on a recorded run of a tool loop.

A rule reads one recorded run of a tool loop (:class:`LoopRun`: what the client got back at
each step and what the upstream received) and the transcripts the upstream replayed, and
says whether reasoning survived the gateway, in words naming what was sent and what came
back. Opaque payloads appear only as fingerprints. Which rules apply follows the passback
policy the provider registry gives the transcripts' model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reasoning_stream import PassbackPolicy, PipeResult
from reasoning_stream.testing._conform_wire import (
    anthropic_blocks,
    chat_message,
    fingerprint,
    gemini_parts,
    ollama_message,
    responses_output,
)
from reasoning_stream.testing._transcript import Transcript
from reasoning_stream.testing._wire import RecordedRequest

__all__ = [
    "LoopRun",
    "Rule",
    "StepRun",
    "anthropic_blocks_rule",
    "anthropic_order",
    "chat_echo",
    "gemini_signature",
    "reasoning_as_reasoning",
    "responses_item",
    "sends_reasoning",
    "sends_states",
    "stream_equals_oneshot",
]

ANTHROPIC_DOC = (
    "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
    "#preserving-thinking-blocks"
)
RESPONSES_DOC = "https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items"
DEEPSEEK_DOC = "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
GEMINI_DOC = "https://ai.google.dev/gemini-api/docs/thought-signatures"
OPENROUTER_DOC = "https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks"
OLLAMA_DOC = "https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion"


@dataclass
class StepRun:
    """One step of a loop as the client saw it: the result and the streamed pieces."""

    result: PipeResult | None = None
    reasoning: str = ""
    text: str = ""


@dataclass
class LoopRun:
    """One run of a loop through the gateway, streamed or one-shot."""

    loop: str
    stream: bool
    transcripts: tuple[Transcript, ...]
    steps: list[StepRun] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    error: str | None = None
    step_of: Callable[[Any], int] = lambda body: 0

    @property
    def mode(self) -> str:
        """``"streamed"`` or ``"one-shot"``."""
        return "streamed" if self.stream else "one-shot"

    def body(self, step: int) -> Any:
        """The last upstream request body of ``step`` (a gateway may retry), or ``None``."""
        found = None
        for request in self.requests:
            try:
                body = request.json()
            except ValueError:
                continue
            if self.step_of(body) == step:
                found = body
        return found

    def result(self, step: int) -> PipeResult | None:
        """The client's result of ``step``, if the loop got that far."""
        return self.steps[step].result if step < len(self.steps) else None

    def missing(self, step: int) -> str:
        """Why there is no upstream request of ``step``: the error, or that none arrived."""
        where = f"no request of step {step + 1} reached the upstream"
        return f"{where} ({self.error})" if self.error else where


Check = Callable[[LoopRun], tuple[bool, str]]


@dataclass(frozen=True)
class Rule:
    """One documented rule: a name, the doc that states it, the loop it reads, its check,
    and when it applies: given the passback policy the registry has for the model."""

    name: str
    doc: str
    loop: str
    check: Check
    applies: Callable[[PassbackPolicy], bool]


def sends_states(kind: str) -> Callable[[PassbackPolicy], bool]:
    """Applies when the policy sends opaque states of ``kind`` back in a tool loop."""

    def applies(policy: PassbackPolicy) -> bool:
        kinds = policy.kinds
        return policy.states != "never" and (kinds is None or kind in kinds)

    return applies


def sends_reasoning(policy: PassbackPolicy) -> bool:
    """Applies when the policy sends readable reasoning back on tool-call turns."""
    return policy.reasoning != "never"


def _sequence(values: Sequence[Any]) -> str:
    return "[" + ", ".join(fingerprint(value) for value in values) + "]" if values else "none"


def _states(run: LoopRun, kind: str) -> list[Any]:
    result = run.result(0)
    if result is None:
        return []
    return [state.payload for state in result.reasoning_state if state.kind == kind]


def _last_message(body: Any, role: str, key: str = "messages") -> Any:
    messages = [m for m in (body or {}).get(key) or () if isinstance(m, Mapping)]
    found = [m for m in messages if m.get("role") == role]
    return found[-1] if found else None


def _compare(sent: Sequence[Any], got: Sequence[Any], carried: Sequence[Any], what: str) -> str:
    """Upstream sent / client got / follow-up carried, as one sentence."""
    client = "unchanged" if list(got) == list(sent) else _sequence(got)
    back = "unchanged" if list(carried) == list(sent) else _sequence(carried)
    return (
        f"upstream step 1 sent {what} {_sequence(sent)}; the client got {client}; "
        f"the step 2 request upstream carried {back}"
    )


# ------------------------------------------------------------------------------ anthropic


def _anthropic_content(run: LoopRun) -> list[Mapping[str, Any]] | None:
    message = _last_message(run.body(1), "assistant")
    if message is None or not isinstance(message.get("content"), list):
        return None
    return [block for block in message["content"] if isinstance(block, Mapping)]


def anthropic_blocks_rule(kind: str, field_name: str, state_kind: str, what: str) -> Check:
    """Blocks of ``kind`` go back with ``field_name`` byte for byte, in order; a thinking
    block's text too (its signature covers it)."""

    def check(run: LoopRun) -> tuple[bool, str]:
        def counts(block: Mapping[str, Any]) -> bool:
            # The omitted loop checks signature-only blocks: no thinking text at all.
            any_block = kind != "thinking" or run.loop != "omitted"
            return block.get("type") == kind and (any_block or not block.get("thinking"))

        blocks = [b for b in anthropic_blocks(run.transcripts[0]) if counts(b)]
        content = _anthropic_content(run)
        if content is None:
            return False, run.missing(1)
        sent = [block for block in content if counts(block)]
        reference = [block[field_name] for block in blocks]
        carried = [block.get(field_name) for block in sent]
        detail = _compare(reference, _states(run, state_kind), carried, what)
        texts_kept = [b.get("thinking") for b in blocks] == [b.get("thinking") for b in sent]
        if kind == "thinking" and carried == reference and not texts_kept:
            detail += ", but the thinking text it signs went back changed"
        return carried == reference and (kind != "thinking" or texts_kept), detail

    return check


def anthropic_order(run: LoopRun) -> tuple[bool, str]:
    reference = [block["type"] for block in anthropic_blocks(run.transcripts[0])]
    content = _anthropic_content(run)
    if content is None:
        return False, run.missing(1)
    carried = [str(block.get("type")) for block in content]
    return carried == reference, (
        f"upstream step 1 sent blocks {reference}; the step 2 request upstream carried the "
        f"assistant turn as {carried}"
    )


# ------------------------------------------------------------------------------ responses


def responses_item(run: LoopRun) -> tuple[bool, str]:
    items = responses_output(run.transcripts[0])
    reasoning = next(item for item in items if item["type"] == "reasoning")
    call = next(item for item in items if item["type"] == "function_call")
    first, second = run.body(0), run.body(1)
    if first is None or second is None:
        return False, run.missing(0 if first is None else 1)
    problems: list[str] = []
    for step, body in ((1, first), (2, second)):
        if body.get("store") is not False:
            problems.append(f"step {step} went upstream with store={body.get('store')!r}")
    if "reasoning.encrypted_content" not in (first.get("include") or ()):
        problems.append("step 1 went upstream without include=['reasoning.encrypted_content']")
    sent = [item for item in second.get("input") or () if isinstance(item, Mapping)]
    kinds = [str(item.get("type", item.get("role"))) for item in sent]
    at = next(
        (
            index
            for index, item in enumerate(sent)
            if item.get("type") == "reasoning"
            and item.get("encrypted_content") == reasoning["encrypted_content"]
        ),
        None,
    )
    if at is None:
        problems.append("step 2 carried no reasoning item with the encrypted_content sent")
    elif not (
        at + 1 < len(sent)
        and sent[at + 1].get("type") == "function_call"
        and sent[at + 1].get("call_id") == call["call_id"]
    ):
        problems.append("the reasoning item is not directly followed by its function_call")
    got = _states(run, "encrypted")
    detail = (
        f"upstream step 1 sent {reasoning['id']} (encrypted_content "
        f"{fingerprint(reasoning['encrypted_content'])}) then function_call "
        f"{call['call_id']}; the client got {len(got)} encrypted item(s)"
        f"{' unchanged' if got == [reasoning['encrypted_content']] else ''}; step 2 input "
        f"upstream: {kinds}"
    )
    return not problems, detail + ("; " + "; ".join(problems) if problems else "")


# ------------------------------------------------------------------------------ chat shapes


def chat_echo(
    field_name: str,
    kinds: str,
    read: Callable[[Transcript], Mapping[str, Any]] = chat_message,
) -> Check:
    """The tool-call turn goes back with ``field_name`` as ``read`` finds it in the stream;
    ``kinds`` is ``"text"`` (readable reasoning) or the opaque state kind the client keeps."""

    def check(run: LoopRun) -> tuple[bool, str]:
        reference = read(run.transcripts[0]).get(field_name)
        body = run.body(1)
        if body is None:
            return False, run.missing(1)
        turns = [
            m
            for m in body.get("messages") or ()
            if isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("tool_calls")
        ]
        carried = turns[-1].get(field_name) if turns else None
        result = run.result(0)
        if kinds == "text":
            got = result.model_reasoning if result is not None else ""
            shown_got = "unchanged" if got == reference else fingerprint(got)
        else:
            shown_got = f"{len(_states(run, kinds))} {kinds} state(s)"
        shown_carried = (
            "unchanged"
            if carried == reference
            else ("nothing" if carried is None else fingerprint(carried))
        )
        return carried == reference, (
            f"upstream step 1 sent {field_name} {fingerprint(reference)} with its tool calls; "
            f"the client got {shown_got}; the assistant tool-call turn of the step 2 request "
            f"upstream carried {field_name}: {shown_carried}"
        )

    return check


# --------------------------------------------------------------------------------- gemini


def _signed_parts(parts: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    signed = []
    for part in parts:
        if "thoughtSignature" in part:
            call = part.get("functionCall")
            where = (
                f"functionCall {call.get('name')}({_compact(call.get('args'))})"
                if isinstance(call, Mapping)
                else ("thought" if part.get("thought") else "text")
            )
            signed.append((where, part["thoughtSignature"]))
    return signed


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def gemini_signature(run: LoopRun) -> tuple[bool, str]:
    reference = _signed_parts(gemini_parts(run.transcripts[0]))
    turn = _last_message(run.body(1), "model", key="contents")
    if turn is None:
        return False, run.missing(1)
    carried = _signed_parts([p for p in turn.get("parts") or () if isinstance(p, Mapping)])

    def shown(pairs: Sequence[tuple[str, Any]]) -> str:
        return ", ".join(f"{where}: {fingerprint(sig)}" for where, sig in pairs) or "none"

    return carried == reference, (
        f"upstream step 1 sent signatures on [{shown(reference)}]; the client got "
        f"{len(_states(run, 'signature'))} signature(s); the model turn of the step 2 request "
        f"upstream carried them on [{shown(carried)}]"
    )


# ----------------------------------------------------------------------------- every shape


def _summary(result: PipeResult | None) -> Any:
    if result is None:
        return None
    return {
        "reasoning": result.model_reasoning,
        "text": result.text,
        "tool_calls": [(call.name, _json_or_text(call.arguments)) for call in result.tool_calls],
        "states": [(state.kind, fingerprint(state.payload)) for state in result.reasoning_state],
        "status": result.status,
    }


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def stream_equals_oneshot(streamed: LoopRun, oneshot: LoopRun) -> tuple[bool, str]:
    """Whether the client's results per step are the same streamed and one-shot."""
    problems: list[str] = []
    for run in (streamed, oneshot):
        if run.error:
            problems.append(f"the {run.mode} loop failed: {run.error}")
    steps = max(len(streamed.steps), len(oneshot.steps))
    for step in range(steps):
        one, two = _summary(streamed.result(step)), _summary(oneshot.result(step))
        if one is None or two is None:
            continue
        for key in one:
            if one[key] != two[key]:
                shown = f"streamed {_short(one[key])}, one-shot {_short(two[key])}"
                problems.append(f"step {step + 1} {key}: {shown}")
    detail = f"loop '{streamed.loop}': {steps} step(s) each way; " + (
        "; ".join(problems)
        if problems
        else "reasoning, text, tool calls and opaque states equal at every step"
    )
    return not problems, detail


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _reference_pieces(shape: str, transcript: Transcript) -> tuple[list[str], list[str]]:
    """(reasoning pieces, answer pieces) a transcript streams, read by hand."""
    if shape == "anthropic":
        blocks = anthropic_blocks(transcript)
        return (
            [b["thinking"] for b in blocks if b["type"] == "thinking"],
            [b["text"] for b in blocks if b["type"] == "text"],
        )
    if shape == "responses":
        items = responses_output(transcript)
        return (
            [s["text"] for i in items if i["type"] == "reasoning" for s in i.get("summary") or ()],
            [
                c["text"]
                for i in items
                if i["type"] == "message"
                for c in i.get("content") or ()
                if c.get("type") == "output_text"
            ],
        )
    if shape == "gemini":
        parts = gemini_parts(transcript)
        return (
            [str(p["text"]) for p in parts if "text" in p and p.get("thought")],
            [str(p["text"]) for p in parts if "text" in p and not p.get("thought")],
        )
    if shape == "ollama":
        said = ollama_message(transcript)
        return [str(said.get("thinking") or "")], [str(said.get("content") or "")]
    message = chat_message(transcript)
    field_name = "reasoning" if shape == "openrouter" else "reasoning_content"
    return [str(message.get(field_name) or "")], [str(message.get("content") or "")]


def reasoning_as_reasoning(shape: str, run: LoopRun) -> tuple[bool, str]:
    """Whether each step's reasoning reached the client as reasoning deltas, not as text."""
    problems: list[str] = []
    counted = 0
    for step, transcript in enumerate(run.transcripts):
        if step >= len(run.steps):
            problems.append(run.missing(step))
            break
        seen = run.steps[step]
        reasoning, answer = _reference_pieces(shape, transcript)
        for piece in (p.strip() for p in reasoning if p.strip()):
            counted += len(piece)
            if piece in seen.text:
                problems.append(f"step {step + 1}: reasoning {_short(piece)} arrived as text")
            elif piece not in seen.reasoning:
                problems.append(f"step {step + 1}: reasoning {_short(piece)} never arrived")
        for piece in (p.strip() for p in answer if p.strip()):
            if piece not in seen.text:
                problems.append(f"step {step + 1}: answer {_short(piece)} missing from the text")
    if problems:
        verdict = "; ".join(problems)
    elif counted:
        verdict = "all of it reached the client as reasoning deltas, none as text"
    else:
        verdict = "nothing readable to show, and the answer arrived as text"
    detail = (
        f"upstream streamed {counted} characters of reasoning over {len(run.transcripts)} "
        f"step(s); {verdict}"
    )
    return not problems, detail
