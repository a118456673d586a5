"""Where opaque state may go: the scope a pipe offers, and what preflight says about the rest.

A state goes back only to the provider that made it, for its model or one whose profile
``reads_from`` it, at the endpoint that made it (compared canonically), under the account it
is bound to (profile ``binding`` ``account``), and, when bound to the request prefix
(``binding`` ``prefix``), only while the system prompt, the tools and every earlier message are
what they were when it was made. This module holds the pieces: the scope a pipe offers
(:func:`scope_target`), the digest of a request prefix and the name of an account (recorded on
the states a bound model makes), and the conversation-level problems preflight reports for
state that cannot go to this pipe: ``state_other_endpoint``, ``state_other_account`` and
``thinking_prefix_changed``. Nothing here names a provider.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._endpoints import canonical_endpoint, endpoint_of, same_endpoint
from .._events import PREFIX_KEY, ReasoningState
from .._turns import HistoryTurn, PassbackProblem
from ..profiles import ModelProfile
from ._policy import PassbackPolicy, profile_of

__all__ = [
    "STATE_OTHER_ACCOUNT",
    "STATE_OTHER_ENDPOINT",
    "THINKING_PREFIX_CHANGED",
    "ScopeTarget",
    "account_fingerprint",
    "drop_prefix_bound",
    "merged_problems",
    "prefix_digest",
    "prefix_digests",
    "record_refusal",
    "scope_problems",
    "scope_target",
    "tool_turn_flags",
    "turn_reasoning",
]

STATE_OTHER_ENDPOINT = "state_other_endpoint"
STATE_OTHER_ACCOUNT = "state_other_account"
THINKING_PREFIX_CHANGED = "thinking_prefix_changed"

_ACCOUNT_DIGEST_KEY = b"reasoning-stream account v1"
_PREFIX_OPTIONS = ("system", "tools")
"""Pipe options that are part of every request's prefix (beside the history)."""
_PREFIX_BODY_KEYS = ("system", "tools", "toolConfig")
"""``extra_body`` keys that are part of it too (a top-level ``system`` or ``tools``, a
``toolConfig``)."""


@dataclass(frozen=True, slots=True)
class ScopeTarget:
    """The scope a pipe offers, resolved once per request: what ``may_go_to`` reads."""

    provider: str | None
    model: str | None
    endpoint: str | None
    account: str | None
    profile: ModelProfile


def scope_target(pipe: object) -> ScopeTarget:
    """``pipe``'s provider, model, endpoint (its provider's default when it names none),
    account and model profile."""
    return ScopeTarget(
        provider=getattr(pipe, "provider", None),
        model=getattr(pipe, "model", None),
        endpoint=endpoint_of(pipe),
        account=getattr(pipe, "account", None),
        profile=profile_of(pipe),
    )


def _default_root(provider: str | None) -> str | None:
    # Where a pipe of ``provider`` that names no endpoint talks to: its variable, else the
    # documented default (what ``ProviderPipe.api_url()`` says for such a pipe).
    from ..providers._spec import spec  # at call time: the registry loads no provider

    found = spec(provider)
    root = found.api_root if found is not None else None
    if root is None:
        return None
    return (os.environ.get(root.env) if root.env else None) or root.default


def record_refusal(record: Any, pipe: object) -> str | None:
    """Why the turn ``record`` describes was not made for ``pipe``: ``"provider"``,
    ``"model"`` or ``"endpoint"``; ``None`` when it was (its states may then go back, each
    under its own :meth:`~reasoning_stream.ReasoningState.refusal`).

    The model is the pipe's or one its profile reads; endpoints compare canonically, and an
    endpoint not recorded (a pipe that named none) is the provider's default.
    """
    provider = getattr(pipe, "provider", None)
    if provider is None or record.provider != provider:
        return "provider"
    model = getattr(pipe, "model", None)
    if record.model != model:
        profile = profile_of(pipe)
        if record.model is None or not profile.reads(record.model, provider):
            return "model"
    made: str | None = record.endpoint
    asking = endpoint_of(pipe)
    if made is None and getattr(pipe, "endpoint", None) is None:
        return None  # neither says where: as before, one unnamed endpoint
    if made is None:
        made = _default_root(record.provider)
    return None if same_endpoint(made, asking) else "endpoint"


def account_fingerprint(key: str) -> str:
    """An account's name made from its API key without keeping the key: ``key:`` and the
    first 16 hex digits of an HMAC-SHA256 of the key under a fixed label. The same key gives
    the same name in every process; the name does not give the key back.

    >>> account_fingerprint("sk-one") == account_fingerprint("sk-one") != account_fingerprint("x")
    True
    """
    digest = hmac.new(_ACCOUNT_DIGEST_KEY, key.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"key:{digest[:16]}"


def _canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_plain
    ).encode("utf-8")


def _plain(value: Any) -> Any:
    # Tools given as objects: their schema when they have one, else their name and type.
    for method in ("to_json", "to_dict", "schema"):
        found = getattr(value, method, None)
        if callable(found):
            try:
                return found()
            except TypeError:
                continue
    return {"type": type(value).__name__, "name": getattr(value, "name", None)}


def _request_prefix(pipe: object) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in _PREFIX_OPTIONS:
        value = getattr(pipe, name, None)
        if value:
            found[name] = value
    extra = getattr(pipe, "extra_body", None)
    if isinstance(extra, Mapping):
        for name in _PREFIX_BODY_KEYS:
            if name in extra:
                found[f"extra_body.{name}"] = extra[name]
    return found


def prefix_digests(messages: Sequence[Mapping[str, Any]], pipe: object) -> list[str]:
    """The digest of the request prefix before each message and after the last one:
    ``len(messages) + 1`` digests of the pipe's system and tools and the messages before.

    Messages are compared as sent (inert keys already removed), as canonical JSON.
    """
    running = hashlib.sha256(_canonical(_request_prefix(pipe)))
    digests = [running.hexdigest()[:32]]
    for message in messages:
        running.update(b"\n")
        running.update(_canonical(message))
        digests.append(running.hexdigest()[:32])
    return digests


def prefix_digest(messages: Sequence[Mapping[str, Any]], pipe: object) -> str:
    """The digest of the prefix a new turn after ``messages`` is made under (see
    :func:`prefix_digests`)."""
    return prefix_digests(messages, pipe)[-1]


def _wanted(record: Any, policy: PassbackPolicy) -> list[ReasoningState]:
    return [state for state in record.states if policy.kinds is None or state.kind in policy.kinds]


def scope_problems(
    pipe: object,
    target: ScopeTarget,
    policy: PassbackPolicy,
    messages: Sequence[Mapping[str, Any]],
    records: Sequence[Any],
    turns: Sequence[HistoryTurn],
    loop_start: int,
) -> list[PassbackProblem]:
    """What cannot go to ``pipe`` of the state the policy would send back: a state made at
    another endpoint or under another account (it is left out: named, never silently), and
    the first prefix-bound state whose prefix changed (it and every later one are invalid)."""
    problems: list[PassbackProblem] = []
    for index, (message, record) in enumerate(zip(messages, records, strict=True)):
        if message.get("role") != "assistant" or record is None:
            continue
        if not policy.gives_states(index >= loop_start):
            continue
        refused = record_refusal(record, target)
        wanted = _wanted(record, policy)
        if refused in ("provider", "model") or not wanted:
            continue
        reason = refused or next(
            (
                why
                for why in (state.refusal(target) for state in wanted)
                if why in ("endpoint", "account")
            ),
            None,
        )
        if reason == "endpoint":
            made = record.endpoint or "the provider's default endpoint"
            problems.append(
                PassbackProblem(
                    index,
                    STATE_OTHER_ENDPOINT,
                    f"this turn's reasoning state was made at {_shown(made)}, and it goes back "
                    f"only there, not to {_shown(target.endpoint or 'no endpoint')} (endpoints "
                    "are compared without case, default port or trailing slash). Run the "
                    "conversation at the endpoint that made it, or repair (the state is left "
                    "out)",
                )
            )
        elif reason == "account":
            problems.append(
                PassbackProblem(
                    index,
                    STATE_OTHER_ACCOUNT,
                    "this turn's reasoning state is bound to the account that made it, and "
                    "this pipe runs under another (its API key or account= label differs). "
                    "Run it under the account that made it, or repair (the state is left out)",
                )
            )
    first = _first_prefix_change(pipe, turns)
    if first is not None:
        problems.append(
            PassbackProblem(
                first,
                THINKING_PREFIX_CHANGED,
                "this turn's thinking is bound to the request prefix it was made after, and "
                "the system prompt, the tools or an earlier message changed since (a compaction, "
                "an edit); it is no longer valid, and nor is any later one. Keep the prefix as "
                "it was, or repair (this block and every later prefix-bound one are dropped)",
            )
        )
    return sorted(problems, key=lambda problem: problem.index)


def _shown(endpoint: str) -> str:
    # An endpoint as an error may show it: no user info, query or fragment.
    return canonical_endpoint(endpoint) if "://" in endpoint else endpoint


def _first_prefix_change(pipe: object, turns: Sequence[HistoryTurn]) -> int | None:
    bound = [
        index
        for index, turn in enumerate(turns)
        if any(PREFIX_KEY in state.extra for state in turn.states)
    ]
    if not bound:
        return None
    digests = prefix_digests([turn.message for turn in turns], pipe)
    for index in bound:
        recorded = {
            state.extra[PREFIX_KEY] for state in turns[index].states if PREFIX_KEY in state.extra
        }
        if recorded != {digests[index]}:
            return index
    return None


def drop_prefix_bound(
    turns: Sequence[HistoryTurn], problems: Sequence[PassbackProblem]
) -> tuple[list[HistoryTurn], list[str]]:
    """``turns`` without what the scope ``problems`` name: from the first message whose
    prefix changed on, every prefix-bound state; a sentence per kind of change. (States made
    at another endpoint or under another account were left out already.)"""
    notes: list[str] = []
    kept = list(turns)
    by_code: dict[str, list[int]] = {}
    for problem in problems:
        by_code.setdefault(problem.code, []).append(problem.index)
    first = min(by_code.get(THINKING_PREFIX_CHANGED, ()), default=None)
    if first is not None:
        dropped = [
            index
            for index in range(first, len(kept))
            if any(PREFIX_KEY in state.extra for state in kept[index].states)
        ]
        for index in dropped:
            kept[index] = _without(kept[index], lambda state: PREFIX_KEY in state.extra)
        notes.append(
            "the prefix changed before message "
            f"{first}: prefix-bound thinking of messages {_listed(dropped)} is dropped"
        )
    for code, what in (
        (STATE_OTHER_ENDPOINT, "made at another endpoint"),
        (STATE_OTHER_ACCOUNT, "made under another account"),
    ):
        if code in by_code:
            notes.append(f"reasoning state {what} is left out of messages {_listed(by_code[code])}")
    return kept, notes


def _without(turn: HistoryTurn, drop: Callable[[ReasoningState], bool]) -> HistoryTurn:
    return replace(turn, states=tuple(state for state in turn.states if not drop(state)))


def _listed(indexes: Sequence[int]) -> str:
    return ", ".join(str(index) for index in indexes)


def merged_problems(
    scope: Sequence[PassbackProblem], rules: Sequence[PassbackProblem]
) -> list[PassbackProblem]:
    """The scope's problems and the provider's, in message order; a message the scope names
    already says why its state is missing, so the provider's problem there is left out."""
    named = {problem.index for problem in scope}
    merged = [*scope, *(problem for problem in rules if problem.index not in named)]
    return sorted(merged, key=lambda problem: problem.index)


def tool_turn_flags(messages: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per message: whether it belongs to a turn (a user message and what answers it, up to
    the next user message) in which the assistant called tools.

    >>> tool_turn_flags([{"role": "user"}, {"role": "assistant", "tool_calls": [{}]},
    ...                  {"role": "tool"}, {"role": "assistant"}, {"role": "user"}])
    [True, True, True, True, False]
    """
    flags = [False] * len(messages)
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    bounds = [0, *(index for index in users if index > 0), len(messages)]
    for start, stop in itertools.pairwise(bounds):
        used = any(
            message.get("role") == "assistant" and message.get("tool_calls")
            for message in messages[start:stop]
        )
        flags[start:stop] = [bool(used)] * (stop - start)
    return flags


def turn_reasoning(
    message: Mapping[str, Any],
    record: Any,
    policy: PassbackPolicy,
    in_tool_loop: bool,
    in_tool_turn: bool,
) -> str | None:
    """The readable reasoning an assistant turn its pipe made carries back, or ``None``.

    Its ``thinking`` where the policy gives it back; the empty text for a tool turn whose run
    reasoned nothing (what some hosts need back on it: not missing, empty).
    """
    calls = bool(message.get("tool_calls"))
    if not policy.gives_reasoning(calls, in_tool_loop, in_tool_turn):
        return None
    thinking = message.get("thinking")
    if isinstance(thinking, str) and thinking:
        return thinking
    tool_turn = calls or (in_tool_turn and policy.reasoning == "tool_turns")
    if thinking is None and record.reasoned is False and tool_turn:
        return ""
    return None
