"""The catalogue and the user's rows: loading, lookup by specificity, register, the warning."""

from __future__ import annotations

import os
import threading
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from .._exceptions import UsageError
from ._ids import (
    candidates,
    canonical_root,
    is_application_profile,
    matches,
    normalize,
    root_applies,
    specificity,
)
from ._model import ModelProfile, conservative, with_fields

__all__ = [
    "ENV",
    "ProfileRow",
    "Registered",
    "UnknownModelWarning",
    "load_file",
    "lookup",
    "register",
    "registered",
    "table",
    "unregister",
]

ENV = "REASONING_STREAM_PROFILES"
"""The environment variable naming a TOML file of user rows, loaded when profiles is imported."""


class UnknownModelWarning(UserWarning):
    """No profile row describes a model: it got the conservative profile. Describe it with
    ``profiles.register``; issued once per (provider, model) in a process."""


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """One row: the providers and model patterns it covers, the API roots it is limited to
    (none: any), whether a user registered it, and the profile it gives."""

    providers: tuple[str, ...]
    patterns: tuple[str, ...]
    api_roots: tuple[str, ...]
    profile: ModelProfile
    user: bool = False
    written: tuple[str, ...] = ()
    """The patterns as the user wrote them (``patterns`` are normalized for matching)."""


class Registered(NamedTuple):
    """A user row as ``profiles.registered()`` lists it."""

    provider: str
    pattern: str


_ROW_KEYS = frozenset({"provider", "providers", "pattern", "models", "api_roots", "base"})

_lock = threading.Lock()
_user: list[ProfileRow] = []
_warned: set[tuple[str, str]] = set()
_catalogue: tuple[ProfileRow, ...] | None = None
# Answers by (provider, model, base_url); emptied whenever the user rows change.
_answers: dict[tuple[str, str, str | None], ModelProfile] = {}
_ANSWERS_KEPT = 4096


def _listed(row: Mapping[str, Any], one: str, many: str, where: str) -> tuple[str, ...]:
    value = row.get(many, row.get(one))
    if isinstance(value, str):
        value = [value]
    if not value or not all(isinstance(item, str) and item for item in value):
        raise UsageError(f'{where}: name the {many} it covers ({one} = "..." or {many} = [...])')
    return tuple(value)


def _row(
    raw: Mapping[str, Any], where: str, base: ModelProfile
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], ModelProfile]:
    providers = tuple(p.lower() for p in _listed(raw, "provider", "providers", where))
    patterns = tuple(normalize(p) for p in _listed(raw, "pattern", "models", where))
    roots = raw.get("api_roots", ())
    if isinstance(roots, str) or not all(isinstance(r, str) for r in roots):
        raise UsageError(f"{where}: api_roots takes a list of URLs")
    fields = {k: v for k, v in raw.items() if k not in _ROW_KEYS}
    profile = with_fields(base, fields, where)
    return providers, patterns, tuple(canonical_root(r) for r in roots), profile


def _load_catalogue() -> tuple[ProfileRow, ...]:
    text = resources.files(__package__).joinpath("catalogue.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    rows: list[ProfileRow] = []
    for index, raw in enumerate(data.get("row", ())):
        where = f"catalogue.toml row {index + 1}"
        base = replace(conservative(), known=True)
        providers, patterns, roots, profile = _row(raw, where, base)
        if not profile.sources:
            raise UsageError(f"{where}: every catalogue row cites its sources")
        rows.append(ProfileRow(providers, patterns, roots, profile))
    return tuple(rows)


def catalogue() -> tuple[ProfileRow, ...]:
    """The shipped rows, read once."""
    global _catalogue
    if _catalogue is None:
        _catalogue = _load_catalogue()
    return _catalogue


def _best(
    rows: Iterable[ProfileRow], provider: str, forms: tuple[str, ...], base_url: str | None
) -> tuple[ProfileRow, str] | None:
    best: tuple[tuple[Any, ...], ProfileRow, str] | None = None
    for order, row in enumerate(rows):
        if provider not in row.providers:
            continue
        rooted = bool(row.api_roots)
        if rooted and not (base_url and any(root_applies(r, base_url) for r in row.api_roots)):
            continue
        for pattern in row.patterns:
            if matches(pattern, forms):
                # A row for this API root first; then the most specific pattern; then the
                # later row (a newer registration replaces an older one of equal rank).
                key = (rooted, *specificity(pattern), order)
                if best is None or key > best[0]:
                    best = (key, row, pattern)
    return None if best is None else (best[1], best[2])


def lookup(
    provider: str, model: str, base_url: str | None = None, *, warn: bool = True
) -> ModelProfile:
    """The profile of ``model`` on ``provider`` (at ``base_url`` when rows differ by API root).

    User rows win over the catalogue; within each, the most specific pattern wins. A model no
    row describes gets the conservative profile and one :class:`UnknownModelWarning` per
    (provider, model) in a process (``warn=False``: none, for callers that only consult the
    profile, such as the passback scope; the effort plan warns). Never raises.
    """
    provider_id = str(provider).strip().lower()
    name = str(model)
    key = (provider_id, name, base_url)
    with _lock:
        answer = _answers.get(key)
        user = tuple(_user)
    if answer is None:
        answer = _resolve(user, provider_id, name, base_url)
        with _lock:
            if len(_answers) >= _ANSWERS_KEPT:
                _answers.clear()
            if user == tuple(_user):  # no row registered meanwhile
                _answers[key] = answer
    if warn and not answer.known:
        _warn_unknown(provider_id, name)
    return answer


def _resolve(
    user: tuple[ProfileRow, ...], provider: str, model: str, base_url: str | None
) -> ModelProfile:
    forms = candidates(provider, model)
    for rows in (user, catalogue()):
        found = _best(rows, provider, forms, base_url)
        if found is not None:
            row, pattern = found
            return replace(row.profile, pattern=pattern, known=True)
    return conservative()


def _warn_unknown(provider: str, model: str) -> None:
    with _lock:
        if (provider, model) in _warned:
            return
        _warned.add((provider, model))
    hint = (
        " An application inference profile ARN names no model: register the ARN with the model "
        "it routes to as base."
        if provider == "bedrock" and is_application_profile(model)
        else ""
    )
    warnings.warn(
        f"no profile describes {provider} model {model!r}; using a conservative one (thinking "
        "optional, efforts low/medium/high, reasoning passed back within the tool loop)."
        f"{hint} Describe it with profiles.register({provider!r}, {model!r}, base=<a known "
        "model>, ...) or a REASONING_STREAM_PROFILES file.",
        UnknownModelWarning,
        stacklevel=3,
    )


def _base(provider: str, base: str | ModelProfile | None, where: str) -> ModelProfile:
    if base is None:
        return replace(conservative(), known=True)
    if isinstance(base, ModelProfile):
        return replace(base, pattern=None, known=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelWarning)
        found = lookup(provider, base)
    if not found.known:
        raise UsageError(
            f"{where}: base={base!r} is no model the {provider} profiles know; name a known "
            "model (profiles.table() lists the rows) or give every field yourself"
        )
    return replace(found, pattern=None)


def register(
    provider: str,
    pattern: str,
    base: str | ModelProfile | None = None,
    *,
    api_roots: Iterable[str] = (),
    **fields: Any,
) -> ModelProfile:
    """Describe models: ``pattern`` (an id or a glob) on ``provider`` gets ``base``'s profile
    (a model id the profiles know, or a :class:`ModelProfile`) with ``fields`` changed.

    User rows win over the catalogue; registering the same provider and pattern again
    replaces the row. Returns the registered profile. A bad field raises :class:`UsageError`.
    """
    where = f"profiles.register({provider!r}, {pattern!r})"
    if not isinstance(provider, str) or not provider.strip():
        raise UsageError(f"{where}: provider is a provider id such as 'anthropic'")
    if not isinstance(pattern, str) or not pattern.strip():
        raise UsageError(f"{where}: pattern is a model id or a glob such as 'claude-next-*'")
    provider_id = provider.strip().lower()
    start = _base(provider_id, base, where)
    raw = {"provider": provider_id, "pattern": pattern, "api_roots": list(api_roots), **fields}
    providers, patterns, roots, profile = _row(raw, where, start)
    row = ProfileRow(
        providers, patterns, roots, replace(profile, known=True), user=True, written=(pattern,)
    )
    with _lock:
        _user[:] = [
            r
            for r in _user
            if (r.providers, r.patterns, r.api_roots)
            != (row.providers, row.patterns, row.api_roots)
        ]
        _user.append(row)
        _answers.clear()
    return row.profile


def unregister(provider: str, pattern: str) -> bool:
    """Remove the user rows for ``provider`` and ``pattern``; ``False`` when there were none."""
    key = (str(provider).strip().lower(), normalize(str(pattern)))
    with _lock:
        kept = [r for r in _user if (r.providers[0], r.patterns[0]) != key]
        removed = len(kept) != len(_user)
        _user[:] = kept
        _answers.clear()
    return removed


def registered() -> tuple[Registered, ...]:
    """The user rows, oldest first, as ``(provider, pattern)`` pairs."""
    with _lock:
        return tuple(Registered(r.providers[0], (r.written or r.patterns)[0]) for r in _user)


def table(*, include_registered: bool = False) -> tuple[ProfileRow, ...]:
    """The catalogue's rows in file order (the README's tables come from them); with
    ``include_registered``, the user's rows follow."""
    rows = catalogue()
    if include_registered:
        with _lock:
            rows = (*rows, *_user)
    return rows


def load_file(path: str | os.PathLike[str]) -> tuple[Registered, ...]:
    """Register every row of a profiles TOML file (``[[row]]`` tables with ``provider`` or
    ``providers``, ``pattern`` or ``models``, an optional ``base`` and profile fields)."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{ENV}={file}: cannot read the profiles file: {exc}") from exc
    rows = data.get("row")
    if not isinstance(rows, list):
        raise UsageError(f"{ENV}={file}: no [[row]] tables; each row describes models")
    added: list[Registered] = []
    for index, raw in enumerate(rows):
        where = f"{file} row {index + 1}"
        if not isinstance(raw, dict):
            raise UsageError(f"{where}: a row is a table")
        fields = {k: v for k, v in raw.items() if k not in _ROW_KEYS}
        base = raw.get("base")
        for provider in _listed(raw, "provider", "providers", where):
            for pattern in _listed(raw, "pattern", "models", where):
                try:
                    register(provider, pattern, base, api_roots=raw.get("api_roots", ()), **fields)
                except UsageError as exc:
                    raise UsageError(f"{where}: {exc}") from exc
                added.append(Registered(provider.strip().lower(), pattern))
    return tuple(added)


def load_environment() -> None:
    """Load ``REASONING_STREAM_PROFILES`` when it is set (at import)."""
    path = os.environ.get(ENV, "").strip()
    if path:
        load_file(path)
