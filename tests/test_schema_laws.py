"""Laws of the argument checker and the schema builder, against values built independently.

* A value built to fit a generated schema is accepted; the same value with one fault put in
  (a wrong type, a value outside an enum, a required key taken out, an extra key in a closed
  object) is refused. Values and faults are made here from the schema alone.
* A value of a hinted Python type (drawn by hypothesis's own ``from_type``, which knows
  nothing of our schemas), written as JSON, fits the schema the hint gives, and
  :func:`to_python` turns the JSON back into the same value.
* The same value as a parameter's default is that parameter's ``default``, written as JSON,
  and a call leaving the parameter out is accepted.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from typing import Any, Literal, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoning_stream._schema import function_schema, schema_for, to_python
from reasoning_stream._schema_check import parse_arguments, schema_errors
from tests.helpers import examples
from tests.test_tools import Place, Unit

# ------------------------------------------------------------- schemas and fitting values

NAMES = st.text("abcdefgh", min_size=1, max_size=4)
ENUM_VALUES = st.lists(st.one_of(st.integers(-3, 3), NAMES), min_size=1, max_size=4, unique=True)
LEAVES = st.one_of(
    st.sampled_from(["string", "integer", "number", "boolean", "null"]).map(lambda t: {"type": t}),
    st.just({"type": ["string", "null"]}),
    ENUM_VALUES.map(lambda values: {"enum": values}),
)


def _containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    arrays = children.map(lambda item: {"type": "array", "items": item})
    objects = st.dictionaries(NAMES, children, max_size=4).flatmap(
        lambda properties: st.tuples(
            st.just(properties),
            st.lists(st.sampled_from(sorted(properties)), unique=True)
            if properties
            else st.just([]),
            st.booleans(),
        ).map(
            lambda parts: {
                "type": "object",
                "properties": parts[0],
                "required": parts[1],
                "additionalProperties": not parts[2],
            }
        )
    )
    options = st.lists(children, min_size=1, max_size=3).map(lambda shapes: {"anyOf": shapes})
    return st.one_of(arrays, objects, options)


SCHEMAS = st.recursive(LEAVES, _containers, max_leaves=10)

_JSON_LEAVES = {
    "string": st.text(max_size=5),
    "integer": st.integers(-(2**40), 2**40),
    "number": st.one_of(st.integers(-100, 100), st.floats(allow_nan=False, allow_infinity=False)),
    "boolean": st.booleans(),
    "null": st.none(),
}


def fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that fit ``schema``, built from the schema's meaning."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([fitting(shape) for shape in schema["anyOf"]])
    kind = schema["type"]
    if isinstance(kind, list):
        return st.one_of([_JSON_LEAVES[name] for name in kind])
    if kind == "array":
        return st.lists(fitting(schema["items"]), max_size=3)
    if kind == "object":
        properties = schema["properties"]
        required = {name: fitting(properties[name]) for name in schema["required"]}
        optional = {
            name: fitting(value) for name, value in properties.items() if name not in required
        }
        return st.fixed_dictionaries(required, optional=optional)
    return _JSON_LEAVES[kind]


# One value of each JSON type; a fault swaps in the first one the schema does not allow.
_OTHERS: tuple[Any, ...] = ("s", 1.5, True, None, [], {})
_ALLOWS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: False,  # none of _OTHERS is an integer (1.5 is not, True is not)
    "number": lambda v: isinstance(v, float),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def faulty(schema: dict[str, Any], value: Any, draw: st.DrawFn) -> tuple[bool, Any]:
    """``(True, value with one fault)``, or ``(False, value)`` where no fault is certain (a
    fault under an ``anyOf`` may fit another shape)."""
    if "anyOf" in schema:
        return False, value
    if "enum" in schema:
        return True, "not-in-the-enum!"
    kind = schema["type"]
    kinds = kind if isinstance(kind, list) else [kind]
    wrong = [other for other in _OTHERS if not any(_ALLOWS[k](other) for k in kinds)]
    choices = ["type"]
    if kind == "array" and value:
        choices.append("item")
    if kind == "object":
        choices += ["drop"] * bool(schema["required"])
        choices += ["extra"] * (schema["additionalProperties"] is False)
        choices += ["child"] * bool(value)
    choice = draw(st.sampled_from(choices))
    if choice == "type":
        return True, wrong[0]
    if choice == "item":
        index = draw(st.integers(0, len(value) - 1))
        changed, item = faulty(schema["items"], value[index], draw)
        return changed, [*value[:index], item, *value[index + 1 :]]
    if choice == "drop":
        name = draw(st.sampled_from(schema["required"]))
        return True, {key: item for key, item in value.items() if key != name}
    if choice == "extra":
        return True, {**value, "an-extra-key": 1}
    name = draw(st.sampled_from(sorted(value)))
    changed, item = faulty(schema["properties"][name], value[name], draw)
    return changed, {**value, name: item}


@st.composite
def schema_value_fault(draw: st.DrawFn) -> tuple[dict[str, Any], Any, tuple[bool, Any]]:
    schema = draw(SCHEMAS)
    value = draw(fitting(schema))
    return schema, value, faulty(schema, value, draw)


@settings(max_examples=examples(300), deadline=None)
@given(schema_value_fault())
def test_a_fitting_value_is_accepted_and_a_faulty_one_refused(
    case: tuple[dict[str, Any], Any, tuple[bool, Any]],
) -> None:
    schema, value, (changed, broken) = case
    assert schema_errors(schema, value) == []
    assert schema_errors(schema, json.loads(json.dumps(value))) == []
    if changed:
        assert schema_errors(schema, broken), (schema, broken)


@settings(max_examples=examples(150), deadline=None)
@given(SCHEMAS.flatmap(lambda s: st.tuples(st.just(s), fitting(s))))
def test_fitting_objects_pass_as_json_text(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    wrapped = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    assert parse_arguments(wrapped, json.dumps({"x": value})) == {"x": value}


# ---------------------------------------------------------------- hints and their values


class Box(TypedDict):
    corner: Place
    tags: list[str]


HINTS: list[Any] = [
    str,
    int,
    float,
    bool,
    Literal["a", "b", 3],
    Unit,
    list[int],
    tuple[str, ...],
    set[int],
    dict[str, float],
    int | None,
    int | str,
    list[Place],
    Box,
    dict[str, list[Unit | None]],
]


def to_json(value: Any) -> Any:
    """A Python value as JSON data, written here without the package's help."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: to_json(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json(item) for item in value]
    return value


def finite(value: Any) -> bool:
    """No NaN or infinity anywhere (JSON has neither)."""
    if isinstance(value, float):
        return math.isfinite(value)
    data = to_json(value)
    if isinstance(data, dict):
        return all(finite(item) for item in data.values())
    if isinstance(data, list):
        return all(finite(item) for item in data)
    return True


@st.composite
def hinted(draw: st.DrawFn) -> tuple[Any, Any]:
    hint = draw(st.sampled_from(HINTS))
    value = draw(st.from_type(hint).filter(finite))
    return hint, value


@settings(max_examples=examples(300), deadline=None)
@given(hinted())
def test_a_hinted_value_as_json_fits_its_schema_and_comes_back(case: tuple[Any, Any]) -> None:
    hint, value = case
    data = json.loads(json.dumps(to_json(value)))
    assert schema_errors(schema_for(hint), data) == [], (hint, data)
    back = to_python(hint, data)
    if hint in (int | str, dict[str, list[Unit | None]]) or hint is Box:
        # A TypedDict stays a dict; its nested dataclasses come back too.
        assert to_json(back) == to_json(value)
    else:
        assert back == value


@settings(max_examples=examples(150), deadline=None)
@given(hinted())
def test_a_default_is_written_as_json_and_may_be_left_out(case: tuple[Any, Any]) -> None:
    hint, value = case

    def function(x=value):  # type: ignore[no-untyped-def]
        return x

    function.__annotations__ = {"x": hint}
    schema = function_schema(function)
    assert schema["required"] == []
    assert schema["properties"]["x"]["default"] == json.loads(json.dumps(to_json(value)))
    assert parse_arguments(schema, "{}") == {}
