"""A function's type hints and docstring as a tool's JSON Schema, and arguments back as values.

:func:`function_schema` reads a function's parameters: ``str``, ``int``, ``float``, ``bool``,
``None``, ``Literal``, ``Enum``, ``list[X]`` (and ``tuple[X, ...]``, ``set[X]``, ``Sequence[X]``),
``dict[str, X]``, ``X | None`` and other unions, ``TypedDict`` and dataclasses (nested
objects), ``Annotated[X, "description"]``, and ``Any``; a parameter with a default is not
required, and its default is written as the property's ``"default"`` when JSON can carry it.
Objects are closed (``additionalProperties: false``), so a misspelt argument is caught.
:func:`python_arguments` turns checked JSON arguments back into what the hints ask for (an
``Enum`` member, a dataclass instance, a ``float`` for ``2``).

>>> def forecast(city: str, days: int = 3) -> str: ...
>>> function_schema(forecast)["required"], function_schema(forecast)["properties"]["days"]
(['city'], {'type': 'integer', 'default': 3})
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from ._exceptions import UsageError
from ._schema_check import schema_errors

__all__ = [
    "describe_function",
    "function_schema",
    "python_arguments",
    "schema_for",
    "with_default",
]

_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}
_ARRAYS = {list, tuple, set, frozenset}
_ARRAY_ORIGINS = {"Sequence", "MutableSequence", "Iterable", "Collection", "AbstractSet"}


def describe_function(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's first paragraph, and each parameter's description from its ``Args:``
    section (Google style) or ``:param name:`` lines (Sphinx style)."""
    doc = inspect.getdoc(function) or ""
    summary: list[str] = []
    for line in doc.strip().splitlines():
        # The first paragraph ends at a blank line or where a section or field list starts.
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    return " ".join(summary), _parameter_docs(doc)


_SECTION = re.compile(
    r"(Args|Arguments|Parameters|Keyword Args|Keyword Arguments|Returns|Raises|Yields|"
    r"Examples?|Notes?):\s*$|:(param|type|returns?|rtype|raises)\b"
)


def _parameter_docs(doc: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for match in re.finditer(r":param\s+(?:\S+\s+)?(\w+):\s*(.*?)(?=\n\s*:|\Z)", doc, re.S):
        found[match.group(1)] = " ".join(match.group(2).split())
    lines = doc.splitlines()
    inside, indent, current = False, 0, ""
    for line in lines:
        stripped = line.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters|Keyword Args|Keyword Arguments):", stripped):
            inside, indent, current = True, -1, ""
            continue
        if not inside:
            continue
        if not stripped:
            continue
        depth = len(line) - len(line.lstrip())
        entry = re.match(r"(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", stripped)
        if indent < 0 and entry:
            indent = depth
        if entry and depth == indent:
            current = entry.group(1).lstrip("*")
            found[current] = entry.group(2).strip()
        elif depth > indent >= 0 and current:
            found[current] = f"{found[current]} {stripped}".strip()
        else:
            inside = False
    return found


def function_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema object of ``function``'s parameters (see the module docstring).

    Raises ``UsageError`` naming the parameter for what a JSON object cannot carry
    (``*args``, ``**kwargs``, positional-only parameters) or a type without a schema.
    """
    signature = inspect.signature(function)
    hints = _hints(function)
    _, docs = describe_function(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise UsageError(
                f"tool {_name(function)}: *{name} cannot be a tool parameter (a model sends "
                "one JSON object of named arguments); give each argument its own parameter"
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise UsageError(
                f"tool {_name(function)}: {name} is positional-only; tools are called with "
                "keyword arguments, so remove the / from the signature"
            )
        hint = hints.get(name, Any)
        try:
            schema = schema_for(hint)
        except UsageError as error:
            raise UsageError(f"tool {_name(function)}, parameter {name}: {error}") from None
        if name in docs and docs[name] and "description" not in schema:
            schema = {**schema, "description": docs[name]}
        if parameter.default is parameter.empty:
            required.append(name)
        else:
            schema = with_default(schema, parameter.default)
        properties[name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(function, include_extras=True)
    except Exception as error:  # a forward reference that does not resolve, and the like
        raise UsageError(
            f"tool {_name(function)}: its type hints cannot be read ({error}); define the "
            "types it names before the function, or give the schema as Tool(parameters=...)"
        ) from None


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def schema_for(hint: Any, _seen: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """The JSON Schema of one type hint.

    >>> schema_for(list[int])
    {'type': 'array', 'items': {'type': 'integer'}}
    """
    if hint in _SIMPLE:
        return dict(_SIMPLE[hint])
    if hint is Any or hint is object:
        return {}
    origin = get_origin(hint)
    arguments = get_args(hint)
    if origin is typing.Annotated:
        inner = schema_for(arguments[0], _seen)
        notes = [note for note in arguments[1:] if isinstance(note, str)]
        return {**inner, "description": " ".join(notes)} if notes else inner
    if origin is Literal:
        return _enum_schema(list(arguments))
    if origin is Union or origin is types.UnionType:
        return _union_schema(arguments, _seen)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    if hint in _ARRAYS or dict in (hint, origin) or origin in _ARRAYS or _is_abstract(origin):
        return _container_schema(hint, origin, arguments, _seen)
    if hint in _seen:
        raise UsageError(f"{_type_name(hint)} refers to itself; a tool schema cannot recurse")
    if typing.is_typeddict(hint):
        return _typeddict_schema(hint, _seen | {hint})
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_schema(hint, _seen | {hint})
    raise UsageError(
        f"{_type_name(hint)} has no JSON Schema here; use str, int, float, bool, Literal, an "
        "Enum, list[...], dict[str, ...], a TypedDict or a dataclass"
    )


def _is_abstract(origin: Any) -> bool:
    return getattr(origin, "__name__", None) in _ARRAY_ORIGINS | {"Mapping", "MutableMapping"}


def _container_schema(
    hint: Any, origin: Any, arguments: tuple[Any, ...], seen: frozenset[Any]
) -> dict[str, Any]:
    mapping = dict in (hint, origin) or getattr(origin, "__name__", "").endswith("Mapping")
    if mapping:
        if arguments and arguments[0] is not str:
            raise UsageError(
                f"{_type_name(hint)}: JSON object keys are strings; use dict[str, ...]"
            )
        schema: dict[str, Any] = {"type": "object"}
        if len(arguments) == 2 and arguments[1] is not Any:
            schema["additionalProperties"] = schema_for(arguments[1], seen)
        return schema
    schema = {"type": "array"}
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        raise UsageError(
            f"{_type_name(hint)}: a fixed-length tuple has no schema here; use tuple[X, ...] "
            "or list[X]"
        )
    if arguments and arguments[0] is not Any:
        schema["items"] = schema_for(arguments[0], seen)
    if origin in (set, frozenset) or hint in (set, frozenset):
        schema["uniqueItems"] = True
    return schema


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {_SIMPLE[type(value)]["type"] for value in values if type(value) in _SIMPLE}
    if len(kinds) != 1 or len({type(value) for value in values}) != 1:
        if not all(type(value) in _SIMPLE for value in values):
            raise UsageError(f"enum values {values!r} must be str, int, float, bool or None")
        return {"enum": values}
    return {"type": kinds.pop(), "enum": values}


def _union_schema(arguments: tuple[Any, ...], seen: frozenset[Any]) -> dict[str, Any]:
    members = [argument for argument in arguments if argument is not type(None)]
    nullable = len(members) < len(arguments)
    schemas = [schema_for(member, seen) for member in members]
    if len(schemas) == 1 and not nullable:
        return schemas[0]
    if nullable and len(schemas) == 1 and set(schemas[0]) == {"type"}:
        # {"type": ["string", "null"]}: the short form every provider reads.
        return {"type": [schemas[0]["type"], "null"]}
    if nullable:
        schemas.append({"type": "null"})
    return {"anyOf": schemas}


def _typeddict_schema(hint: Any, seen: frozenset[Any]) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    properties, required = {}, []
    for name, value in hints.items():
        # The class records which keys are required, except under ``from __future__ import
        # annotations`` before Python 3.12, where NotRequired in a string goes unseen: the
        # resolved hint says it then.
        wrapper = get_origin(value)
        if wrapper is typing.Required or (
            wrapper is not typing.NotRequired and name in hint.__required_keys__
        ):
            required.append(name)
        properties[name] = schema_for(_required_inner(value), seen)
    return _object(properties, required, hint)


def _dataclass_schema(hint: type, seen: frozenset[Any]) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    properties, required = {}, []
    for item in dataclasses.fields(hint):
        if not item.init:
            continue
        schema = schema_for(hints.get(item.name, Any), seen)
        if item.default is not dataclasses.MISSING:
            schema = with_default(schema, item.default)
        elif item.default_factory is dataclasses.MISSING:
            required.append(item.name)
        properties[item.name] = schema
    return _object(properties, required, hint)


def with_default(schema: dict[str, Any], default: Any) -> dict[str, Any]:
    """``schema`` with ``"default"``: ``default`` as JSON (an ``Enum`` member as its value, a
    dataclass as an object, a tuple or set as an array), as pydantic writes it.

    ``schema`` itself when JSON cannot carry the default (NaN, an arbitrary object) or the
    schema would refuse it (``limit: int = "five"``): the model is never shown a default the
    argument checker turns down.

    >>> with_default({"type": "integer"}, 3)
    {'type': 'integer', 'default': 3}
    """
    try:
        data = json.loads(json.dumps(default, default=_as_json, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return schema
    if schema_errors(schema, data):
        return schema
    return {**schema, "default": data}


def _as_json(value: Any) -> Any:
    # json.dumps asks here for what it cannot write itself.
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: getattr(value, item.name) for item in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _object(properties: dict[str, Any], required: list[str], hint: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    doc = inspect.getdoc(hint)
    generated = doc is not None and doc.startswith(f"{hint.__name__}(")  # dataclass's own
    if doc and not generated and doc not in (inspect.getdoc(dict), inspect.getdoc(object)):
        schema["description"] = " ".join(re.split(r"\n\s*\n", doc, maxsplit=1)[0].split())
    return schema


def _type_name(hint: Any) -> str:
    return getattr(hint, "__qualname__", None) or repr(hint)


# ---------------------------------------------------------------------- arguments back


def python_arguments(function: Callable[..., Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Checked JSON ``arguments`` as the values ``function``'s hints ask for.

    An ``Enum`` parameter gets its member, a dataclass its instance (nested too), a ``float``
    a float for ``2``, a ``tuple`` or ``set`` one of those; anything else stays as decoded.
    """
    hints = _hints(function)
    return {name: to_python(hints.get(name, Any), value) for name, value in arguments.items()}


def to_python(hint: Any, value: Any) -> Any:
    """One JSON value as the type hint asks (see :func:`python_arguments`)."""
    origin = get_origin(hint)
    arguments = get_args(hint)
    if origin is typing.Annotated:
        return to_python(arguments[0], value)
    if value is None:
        return None
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if origin is Union or origin is types.UnionType:
        for member in arguments:
            if member is not type(None) and not schema_errors(schema_for(member), value):
                return to_python(member, value)
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if isinstance(value, list):
        item = arguments[0] if arguments else Any
        items = [to_python(item, element) for element in value]
        container = origin or hint
        return container(items) if container in (tuple, set, frozenset) else items
    if isinstance(value, dict):
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            fields = get_type_hints(hint, include_extras=True)
            return hint(**{key: to_python(fields.get(key, Any), v) for key, v in value.items()})
        if typing.is_typeddict(hint):
            fields = get_type_hints(hint, include_extras=True)
            return {key: to_python(_required_inner(fields.get(key, Any)), v)
                    for key, v in value.items()}  # fmt: skip
        if len(arguments) == 2:
            return {key: to_python(arguments[1], v) for key, v in value.items()}
    return value


def _required_inner(hint: Any) -> Any:
    if get_origin(hint) in (typing.NotRequired, typing.Required):
        return get_args(hint)[0]
    return hint
