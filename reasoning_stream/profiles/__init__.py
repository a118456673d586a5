"""Model profiles: what each model can do, as data.

One catalogue (``catalogue.toml``, shipped with the package, every row citing its doc source
and the date it was checked) answers for any provider and model id::

    >>> from reasoning_stream import profiles
    >>> p = profiles.lookup("anthropic", "claude-opus-5")
    >>> p.thinking, p.passback
    ('default_on', 'always')
    >>> profiles.lookup("bedrock", "global.anthropic.claude-opus-5-v1:0") == p
    True

The most specific pattern wins (an exact id over a glob, a longer literal prefix over a
shorter); rows the user registers win over the catalogue. Bedrock ids resolve with or without
an ARN, a geographic or ``global.`` prefix and a version suffix; gateway ids (``vendor/model``)
resolve to the model, with dots or hyphens in versions. An application-inference-profile ARN
names no model, so it resolves only through a row registered for that ARN
(``profiles.register("bedrock", arn, base="claude-opus-5")``); until then it gets the
conservative profile and a warning saying so.

A model no row describes gets a conservative profile (``thinking="optional"``, efforts
low/medium/high, passback within the tool loop, no cross-model reading, no binding) and one
:class:`UnknownModelWarning` naming ``profiles.register``, once per (provider, model).
``REASONING_STREAM_PROFILES=/path/profiles.toml`` registers a file of rows at import.
"""

from __future__ import annotations

from ._model import (
    CONTROLS,
    DISPLAY_CONTROLS,
    DISPLAYS,
    FIELDS,
    LEVELS,
    PASSBACK,
    THINKING,
    Inline,
    ModelProfile,
)
from ._registry import (
    ENV,
    ProfileRow,
    Registered,
    UnknownModelWarning,
    load_file,
    lookup,
    register,
    registered,
    table,
    unregister,
)
from ._registry import load_environment as _load_environment
from ._tables import passback_table

__all__ = [
    "CONTROLS",
    "DISPLAYS",
    "DISPLAY_CONTROLS",
    "ENV",
    "FIELDS",
    "LEVELS",
    "PASSBACK",
    "THINKING",
    "Inline",
    "ModelProfile",
    "ProfileRow",
    "Registered",
    "UnknownModelWarning",
    "load_file",
    "lookup",
    "passback_table",
    "register",
    "registered",
    "table",
    "unregister",
]

_load_environment()
