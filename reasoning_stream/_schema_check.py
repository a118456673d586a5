"""Checking a model's tool arguments against the tool's JSON Schema, with messages it can read.

A small validator for the part of JSON Schema that tool parameters use: what :func:`tool`
builds (``type``, ``enum``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``anyOf``, ``description``) and what people commonly write by hand or get from pydantic
(``type`` lists, ``const``, ``oneOf``, ``allOf``, OpenAPI's ``nullable``, local ``$ref`` into
``$defs`` / ``definitions``, the length, count and range bounds, ``pattern``). Keywords it does not
know are ignored, as JSON Schema itself says to. No dependency: jsonschema is a large package
for a job this size.

>>> schema_errors({"type": "object", "required": ["city"]}, {})
['missing required property "city"']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

__all__ = ["ArgumentsError", "parse_arguments", "schema_errors"]

MAX_REPORTED: Final = 5
"""At most this many problems go into one message (the model fixes them and tries again)."""


class ArgumentsError(ValueError):
    """A tool call's arguments are not valid JSON or do not fit the tool's schema.

    The message is written for the model: it goes back as the tool's error result.
    """


def parse_arguments(schema: Mapping[str, Any], text: str | Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a model wrote (JSON text, or an already decoded object), checked.

    Blank text means no arguments (``{}``): some servers send ``""`` for a tool without
    parameters. Raises :class:`ArgumentsError` naming every problem (up to five).

    >>> parse_arguments({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": 2}')
    {'n': 2}
    """
    if isinstance(text, Mapping):
        value: Any = dict(text)
    elif not isinstance(text, str):
        raise ArgumentsError(f"arguments must be a JSON object, got {type(text).__name__}")
    elif not text.strip():
        value = {}
    else:
        try:
            value = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as error:
            raise ArgumentsError(f"arguments are not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {_json_type(value)}")
    problems = schema_errors(schema, value)
    if problems:
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        tail = f" (and {more} more)" if more else ""
        raise ArgumentsError("arguments do not fit the tool's schema: " + "; ".join(shown) + tail)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def schema_errors(schema: Mapping[str, Any] | bool, value: Any) -> list[str]:
    """Every way ``value`` breaks ``schema``, as readable lines (empty: it fits).

    >>> schema_errors({"type": "string", "enum": ["c", "f"]}, "k")
    ['must be one of "c", "f"; got "k"']
    """
    walk = _Walk(schema if isinstance(schema, Mapping) else {})
    walk.check(schema, value, "", 0)
    return walk.problems


_MAX_DEPTH: Final = 64
"""Deeper than this a ``$ref`` cycle is assumed, and the check stops there."""


class _Walk:
    """One check of a value: the root schema (``$ref`` targets) and the problems found."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.problems: list[str] = []

    def fits(self, schema: Any, value: Any, depth: int) -> bool:
        """Whether ``value`` fits ``schema``, without reporting anything."""
        inner = _Walk(self.root)
        inner.check(schema, value, "", depth + 1)
        return not inner.problems

    def check(self, schema: Any, value: Any, path: str, depth: int) -> None:
        problems = self.problems
        where = f"{path}: " if path else ""
        if schema is False:
            problems.append(f"{where}no value is allowed here")
            return
        if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
            return
        reference = schema.get("$ref")
        if isinstance(reference, str):
            target = _resolve(self.root, reference)
            if target is not None:
                self.check(target, value, path, depth + 1)
        if value is None and schema.get("nullable") is True:
            return
        if not _type_fits(schema, value, where, problems):
            return
        if "const" in schema and not _same(value, schema["const"]):
            problems.append(f"{where}must be {_show(schema['const'])}; got {_show(value)}")
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_same(value, option) for option in enum):
            shown = ", ".join(_show(option) for option in enum)
            problems.append(f"{where}must be one of {shown}; got {_show(value)}")
        self.combinations(schema, value, path, depth)
        if isinstance(value, dict):
            self.object(schema, value, path, depth)
        elif isinstance(value, list):
            self.array(schema, value, path, depth)
        elif isinstance(value, str):
            _check_string(schema, value, where, problems)
        elif _is_number(value):
            _check_number(schema, value, where, problems)

    def combinations(self, schema: Mapping[str, Any], value: Any, path: str, depth: int) -> None:
        where = f"{path}: " if path else ""
        for sub in schema.get("allOf") or ():
            self.check(sub, value, path, depth + 1)
        any_of = schema.get("anyOf")
        if (
            isinstance(any_of, list)
            and any_of
            and not any(self.fits(sub, value, depth) for sub in any_of)
        ):
            self.closest(any_of, value, path, depth)
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            count = sum(self.fits(sub, value, depth) for sub in one_of)
            if count != 1:
                detail = "none" if count == 0 else f"{count}"
                self.problems.append(
                    f"{where}{_show(value)} must fit exactly one shape, fits {detail}"
                )

    def closest(self, shapes: list[Any], value: Any, path: str, depth: int) -> None:
        """Why ``value`` fits none of ``shapes``: the one shape of its JSON type explains in
        detail (an object with a bad field); otherwise one line says so."""
        typed = [
            shape
            for shape in shapes
            if isinstance(shape, Mapping) and "type" in shape and _type_fits(shape, value, "", [])
        ]
        if len(typed) == 1:
            self.check(typed[0], value, path, depth + 1)
            return
        where = f"{path}: " if path else ""
        self.problems.append(f"{where}{_show(value)} fits none of the allowed shapes")

    def object(
        self, schema: Mapping[str, Any], value: dict[str, Any], path: str, depth: int
    ) -> None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        for name in schema.get("required") or ():
            if name not in value:
                self.problems.append(f'missing required property "{_join(path, name)}"')
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            child = _join(path, name)
            if name in properties:
                self.check(properties[name], item, child, depth + 1)
            elif extra is False:
                allowed = ", ".join(f'"{key}"' for key in properties) or "none"
                self.problems.append(f'unexpected property "{child}" (allowed: {allowed})')
            elif isinstance(extra, Mapping):
                self.check(extra, item, child, depth + 1)
        _bounds(schema, "minProperties", "maxProperties", len(value), "properties", path,
                self.problems)  # fmt: skip

    def array(self, schema: Mapping[str, Any], value: list[Any], path: str, depth: int) -> None:
        items = schema.get("items")
        if isinstance(items, Mapping | bool):
            for index, item in enumerate(value):
                self.check(items, item, f"{path}[{index}]", depth + 1)
        _bounds(schema, "minItems", "maxItems", len(value), "items", path, self.problems)


def _type_fits(schema: Mapping[str, Any], value: Any, where: str, problems: list[str]) -> bool:
    wanted = schema.get("type")
    if wanted is None:
        return True
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    if schema.get("nullable") is True:
        names.append("null")
    if any(_is_type(value, name) for name in names):
        return True
    expected = " or ".join(str(name) for name in names)
    problems.append(f"{where}expected {expected}, got {_json_type(value)} {_show(value)}")
    return False


def _check_string(schema: Mapping[str, Any], value: str, where: str, problems: list[str]) -> None:
    _bounds(schema, "minLength", "maxLength", len(value), "characters", where[:-2], problems)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            return  # a pattern Python cannot read is not the model's fault
        if not matched:
            problems.append(f"{where}{_show(value)} does not match the pattern {pattern!r}")


def _check_number(schema: Mapping[str, Any], value: float, where: str, problems: list[str]) -> None:
    for keyword, words in _LIMITS:
        limit = schema.get(keyword)
        if _is_number(limit) and not _within(keyword, value, limit):
            problems.append(f"{where}must be {words} {limit}; got {_show(value)}")


_LIMITS: Final = (
    ("minimum", "at least"),
    ("maximum", "at most"),
    ("exclusiveMinimum", "above"),
    ("exclusiveMaximum", "below"),
)


def _within(keyword: str, value: float, limit: float) -> bool:
    if keyword == "minimum":
        return value >= limit
    if keyword == "maximum":
        return value <= limit
    if keyword == "exclusiveMinimum":
        return value > limit
    return value < limit


def _bounds(
    schema: Mapping[str, Any],
    low: str,
    high: str,
    size: int,
    unit: str,
    path: str,
    problems: list[str],
) -> None:
    where = f"{path}: " if path else ""
    least, most = schema.get(low), schema.get(high)
    if isinstance(least, int) and size < least:
        problems.append(f"{where}needs at least {least} {unit}, has {size}")
    if isinstance(most, int) and size > most:
        problems.append(f"{where}allows at most {most} {unit}, has {size}")


def _resolve(root: Mapping[str, Any], reference: str) -> Any:
    """A local ``#/...`` pointer into the root schema; ``None`` for anything else."""
    if not reference.startswith("#"):
        return None
    target: Any = root
    for part in reference[1:].split("/"):
        if not part:
            continue
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            return None
        target = target[key]
    return target


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


_JSON_TYPES: Final = frozenset(
    {"string", "integer", "number", "boolean", "null", "object", "array"}
)


def _is_type(value: Any, name: Any) -> bool:
    if name not in _JSON_TYPES:
        return True  # a type name JSON Schema does not define constrains nothing
    actual = _json_type(value)
    if actual == name or (name == "number" and actual == "integer"):
        return True
    # JSON has one number type: 2.0 is an integer in JSON Schema's sense.
    return name == "integer" and isinstance(value, float) and value.is_integer()


_TYPE_NAMES: Final = (
    (bool, "boolean"),  # before int: True is an int in Python, never in JSON
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _same(value: Any, expected: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, and ``1`` is ``1.0``."""
    if isinstance(value, bool) or isinstance(expected, bool):
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    if isinstance(value, list) and isinstance(expected, list):
        return len(value) == len(expected) and all(map(_same, value, expected))
    if isinstance(value, dict) and isinstance(expected, dict):
        return value.keys() == expected.keys() and all(
            _same(value[key], expected[key]) for key in value
        )
    return bool(type(value) is type(expected) or (_is_number(value) and _is_number(expected))) and (
        value == expected
    )


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else str(name)
