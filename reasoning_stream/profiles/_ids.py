"""Model ids as the catalogue compares them: gateway and Bedrock wrappers taken off, versions
written one way, and how specific a pattern is. Pure string work."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from .._endpoints import canonical_endpoint

__all__ = [
    "candidates",
    "canonical_root",
    "is_application_profile",
    "matches",
    "normalize",
    "root_applies",
    "specificity",
]

_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")
_GLOB = re.compile(r"[*?\[]")

# arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-...
_ARN = re.compile(r"^arn:aws[a-z-]*:bedrock:[^:]*:[^:]*:(?P<kind>[a-z-]+)/(?P<rest>.+)$")
# Cross-region (system-defined) inference profiles prefix the model id with a geography.
_GEO = re.compile(r"^(?:global|us-gov|apac|[a-z]{2})\.(?=[a-z0-9-]+\.)")
# A Bedrock version suffix: -v1, -v1:0, :0, and context variants such as -v1:0:256k.
_BEDROCK_VERSION = re.compile(r"(?:-v\d+)?(?::[0-9a-z]+)*$")


def normalize(text: str) -> str:
    """Lower case, and a dotted version written with hyphens (``5.5`` as ``5-5``), so
    ``claude-opus-5.5`` and ``claude-opus-5-5`` are one id, in patterns and ids alike.

    >>> normalize("Anthropic/Claude-Opus-5.5")
    'anthropic/claude-opus-5-5'
    """
    return _DOTTED_VERSION.sub("-", text.strip().lower())


def is_application_profile(model: str) -> bool:
    """Whether ``model`` is a Bedrock application-inference-profile ARN, which names no model."""
    match = _ARN.match(model.strip().lower())
    return match is not None and match["kind"] == "application-inference-profile"


def _bedrock(name: str) -> list[str]:
    found = [name]
    arn = _ARN.match(name)
    if arn is not None:
        if arn["kind"] == "application-inference-profile":
            # An opaque id: only a row registered for this exact ARN can describe it.
            return found
        name = arn["rest"]
        found.append(name)
    name = _GEO.sub("", name)
    name = _BEDROCK_VERSION.sub("", name)
    found.append(name)
    _vendor, dot, bare = name.partition(".")
    if dot and bare:
        found.append(bare)
    return found


def candidates(provider: str, model: str) -> tuple[str, ...]:
    """The forms of ``model`` a pattern may match, most literal first (all normalized).

    Bedrock ids lose an ARN around them, a geographic or ``global.`` prefix, the version
    suffix and then the vendor; a gateway's ``vendor/model`` id also stands for ``model``; a
    ``:tag`` (Ollama sizes, OpenRouter variants) may be left off.

    >>> candidates("bedrock", "us.anthropic.claude-opus-5-v1:0")
    ('us.anthropic.claude-opus-5-v1:0', 'anthropic.claude-opus-5', 'claude-opus-5')
    >>> candidates("openrouter", "anthropic/claude-opus-5.5")
    ('anthropic/claude-opus-5-5', 'claude-opus-5-5')
    """
    name = normalize(model)
    found = _bedrock(name) if provider == "bedrock" else [name]
    if provider != "bedrock":
        tail = name.rsplit("/", 1)[-1]
        found.append(tail)
        for form in (name, tail):
            head, colon, _ = form.partition(":")
            if colon and head:
                found.append(head)
    return tuple(dict.fromkeys(form for form in found if form))


def matches(pattern: str, forms: tuple[str, ...]) -> bool:
    """Whether a (normalized) glob pattern matches any form of an id."""
    return any(fnmatchcase(form, pattern) for form in forms)


def specificity(pattern: str) -> tuple[bool, int, int]:
    """How specific a pattern is; higher wins: an exact id over any glob, then the longer
    literal prefix (the text before the first ``*``, ``?`` or ``[``), then more literal text.

    >>> specificity("claude-opus-5") > specificity("claude-opus-5*") > specificity("claude-*")
    True
    """
    glob = _GLOB.search(pattern)
    if glob is None:
        return (True, len(pattern), len(pattern))
    literal = len(re.sub(r"\[[^\]]*\]|[*?]", "", pattern))
    return (False, glob.start(), literal)


def canonical_root(url: str) -> str:
    """An API root in one form: scheme and host in lower case, no default port, no trailing
    slash (``HTTPS://API.Example.com:443/v1/`` is ``https://api.example.com/v1``); the form
    opaque state compares endpoints in too.

    >>> canonical_root("HTTPS://Dashscope.AliyunCS.com:443/compatible-mode/v1/")
    'https://dashscope.aliyuncs.com/compatible-mode/v1'
    """
    return canonical_endpoint(url)


def root_applies(root: str, base_url: str) -> bool:
    """Whether a row's API root covers ``base_url`` (the same host, and a path under it)."""
    mine = canonical_root(root)
    theirs = canonical_root(base_url)
    return theirs == mine or theirs.startswith(mine + "/")
