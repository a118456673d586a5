"""``Tool``, ``@tool`` and ``ToolResult``: schemas from hints and docstrings, and the checks a
model's arguments go through (messages it can read)."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest

import reasoning_stream
from reasoning_stream import Tool, ToolCall, ToolResult, UsageError, tool
from reasoning_stream._schema import schema_for
from reasoning_stream._schema_check import schema_errors
from reasoning_stream._tools import ArgumentsError, is_strict_compatible, to_tools


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


@dataclasses.dataclass
class Place:
    """Where to look."""

    city: str
    country: str | None = None


class Window(TypedDict):
    days: int
    hours: NotRequired[list[int]]


def test_simple_hints_give_the_json_schema_types() -> None:
    assert schema_for(str) == {"type": "string"}
    assert schema_for(int) == {"type": "integer"}
    assert schema_for(float) == {"type": "number"}
    assert schema_for(bool) == {"type": "boolean"}
    assert schema_for(Any) == {}
    assert schema_for(Literal["a", "b"]) == {"type": "string", "enum": ["a", "b"]}
    assert schema_for(Literal[1, "a"]) == {"enum": [1, "a"]}
    assert schema_for(Unit) == {"type": "string", "enum": ["c", "f"]}
    assert schema_for(list[int]) == {"type": "array", "items": {"type": "integer"}}
    assert schema_for(set[str]) == {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
    }
    assert schema_for(dict[str, float]) == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert schema_for(str | None) == {"type": ["string", "null"]}
    assert schema_for(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert schema_for(Annotated[int, "how many"]) == {"type": "integer", "description": "how many"}


def test_dataclasses_and_typeddicts_are_closed_objects() -> None:
    assert schema_for(Place) == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": ["string", "null"], "default": None},
        },
        "required": ["city"],
        "additionalProperties": False,
        "description": "Where to look.",
    }
    assert schema_for(Window) == {
        "type": "object",
        "properties": {
            "days": {"type": "integer"},
            "hours": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["days"],
        "additionalProperties": False,
    }


@tool
def forecast(place: Place, days: int = 3, unit: Unit = Unit.CELSIUS, detail: bool = False) -> str:
    """The weather ahead for a place.

    Longer words the model need not read.

    Args:
        place: where to look.
        days: how many days,
            counting today.
    """
    return f"{place.city} {days} {unit.value} {detail}"


def test_the_decorator_reads_the_signature_and_the_docstring() -> None:
    assert isinstance(forecast, Tool)
    assert forecast.name == "forecast"
    assert forecast.description == "The weather ahead for a place."
    parameters = forecast.parameters
    assert parameters["required"] == ["place"]
    assert parameters["additionalProperties"] is False
    assert parameters["properties"]["days"] == {
        "type": "integer",
        "description": "how many days, counting today.",
        "default": 3,
    }
    assert parameters["properties"]["place"]["description"] == "Where to look."
    assert parameters["properties"]["unit"] == {
        "type": "string",
        "enum": ["c", "f"],
        "default": "c",
    }


def test_a_default_json_can_carry_is_written_into_the_schema() -> None:
    """As pydantic and the OpenAI SDK's helpers do, so the model sees what leaving an argument
    out means; a default JSON cannot carry, or that its own hint would refuse, is left out."""
    marker = object()

    @tool
    def search(
        query: str,
        limit: int = 5,
        unit: Unit = Unit.FAHRENHEIT,
        fields: tuple[str, ...] = ("title", "url"),
        near: Place = Place("Oslo"),  # noqa: B008 - a default is what this test is about
        language: str | None = None,
        ratio: float = math.nan,
        anything: Any = marker,
        wrong: int = "five",  # type: ignore[assignment]
    ) -> str:
        """Search."""
        return query

    properties = search.parameters["properties"]
    assert search.parameters["required"] == ["query"]
    assert {
        name: schema["default"] for name, schema in properties.items() if "default" in schema
    } == {
        "limit": 5,
        "unit": "f",
        "fields": ["title", "url"],
        "near": {"city": "Oslo", "country": None},
        "language": None,
    }
    for schema in properties.values():
        if "default" in schema:
            assert schema_errors(schema, schema["default"]) == [], schema
    # The checker still takes a call that leaves every defaulted argument out.
    assert search.parse_arguments('{"query": "tags"}') == {"query": "tags"}
    assert search.parse_arguments({"query": "tags", "limit": 2}) == {"query": "tags", "limit": 2}


def test_a_decorated_function_stays_callable_and_introspectable() -> None:
    assert forecast(Place("Oslo"), 2) == "Oslo 2 c False"
    assert forecast.__name__ == "forecast"
    assert forecast.__doc__ is not None and forecast.__doc__.startswith("The weather ahead")
    assert list(inspect.signature(forecast).parameters) == ["place", "days", "unit", "detail"]


def test_the_decorator_takes_a_name_a_description_and_sphinx_docstrings() -> None:
    @tool(name="lookup", description="Find a word.")
    def find(word: str, limit: int = 5) -> list[str]:
        """Ignored summary.

        :param word: the word to find.
        :param limit: at most this many.
        """
        return [word] * limit

    assert (find.name, find.description) == ("lookup", "Find a word.")
    assert find.parameters["properties"]["word"]["description"] == "the word to find."
    assert find("a", 2) == ["a", "a"]


def test_async_tools_say_so() -> None:
    @tool
    async def wait(seconds: float) -> str:
        """Wait."""
        return "done"

    @tool
    def now() -> str:
        """Now."""
        return "12:00"

    assert wait.is_async and not now.is_async
    assert now.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_arguments_come_back_as_the_hinted_python_values() -> None:
    arguments = forecast.parse_arguments('{"place": {"city": "Oslo"}, "unit": "f", "days": 2.0}')
    assert arguments == {"place": Place("Oslo"), "unit": Unit.FAHRENHEIT, "days": 2}
    assert forecast.function is not None and forecast.function(**arguments) == "Oslo 2 f False"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not valid JSON"),
        ("[1]", "must be a JSON object, got array"),
        ('{"days": 2}', 'missing required property "place"'),
        ('{"place": {"city": 3}}', "place.city: expected string, got integer 3"),
        ('{"place": {"city": "a"}, "unit": "k"}', 'unit: must be one of "c", "f"; got "k"'),
        ('{"place": {"city": "a"}, "dayz": 1}', 'unexpected property "dayz"'),
        ('{"place": {"city": "a", "zip": 1}}', 'unexpected property "place.zip"'),
        ('{"place": {"city": "a"}, "detail": 1}', "detail: expected boolean, got integer"),
        ('{"place": {"city": "a"}, "days": NaN}', "not valid JSON"),
    ],
)
def test_arguments_that_do_not_fit_say_why_in_words_a_model_can_use(text: str, words: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        forecast.parse_arguments(text)
    assert words in str(caught.value)


def test_blank_arguments_are_no_arguments() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.parse_arguments("") == {}
    assert ping.parse_arguments("  ") == {}


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: Tool("get weather", "d", {"type": "object"}), "not allowed"),
        (lambda: Tool("9lives", "d", {"type": "object"}), "starting with a letter"),
        (lambda: Tool("x" * 65, "d", {"type": "object"}), "1 to 64"),
        (lambda: Tool("t", "d", {"type": "string"}), "must describe an object"),
        (lambda: Tool("t", "d", [1]), "must be a JSON Schema object"),  # type: ignore[arg-type]
        (lambda: Tool("t", "d", {"type": "object", "x": object()}), "must be JSON"),
        (lambda: Tool("t", "d", {"type": "object"}, function=3), "callable"),  # type: ignore[arg-type]
        (
            lambda: Tool("t", "d", {"type": "object", "properties": {"a": {}}}, strict=True),
            "strict=True needs",
        ),
    ],
)
def test_a_tool_that_no_provider_would_take_is_refused(build: Any, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        build()


class Opaque:
    pass


def test_hints_without_a_schema_are_refused_naming_the_parameter() -> None:
    def takes(thing: Opaque) -> None: ...

    def star(*names: str) -> None: ...

    def slash(a: int, /) -> None: ...

    with pytest.raises(UsageError, match=r"parameter thing: .*Opaque has no JSON Schema"):
        tool(takes)
    with pytest.raises(UsageError, match=r"\*names cannot be a tool parameter"):
        tool(star)
    with pytest.raises(UsageError, match="positional-only"):
        tool(slash)
    with pytest.raises(UsageError, match="JSON object keys are strings"):
        schema_for(dict[int, str])


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


def test_recursive_types_are_refused() -> None:
    with pytest.raises(UsageError, match="refers to itself"):
        schema_for(Node)


def test_dicts_in_the_provider_shapes_become_tools() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    chat = {
        "type": "function",
        "function": {"name": "a", "description": "A.", "parameters": schema},
    }
    flat = {"type": "function", "name": "b", "parameters": schema, "strict": False}
    claude = {"name": "c", "description": "C.", "input_schema": schema}
    a, b, c = to_tools([chat, flat, claude])
    assert (a.name, a.description, a.parameters) == ("a", "A.", schema)
    assert (b.name, b.strict) == ("b", False)
    assert c.parameters == schema


def test_strict_compatibility_follows_openais_rule() -> None:
    assert is_strict_compatible(forecast.parameters) is False  # optional parameters
    closed = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {}}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert is_strict_compatible(closed) is False  # the nested object is open
    closed["properties"]["a"]["items"]["additionalProperties"] = False
    assert is_strict_compatible(closed) is True


def test_tool_result_is_an_event_next_to_tool_call() -> None:
    result = ToolResult("call_1", "get_weather", "18 C", source="pipe")
    assert result.kind == "tool_result"
    assert (result.is_error, result.duration) == (False, 0.0)
    assert result == ToolResult("call_1", "get_weather", "18 C")  # source is not compared
    assert result.to_message() == {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
    assert "source='pipe'" in repr(result)
    assert not hasattr(result, "__dict__")  # slotted, as every event
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = "x"  # type: ignore[misc]
    assert ToolResult in reasoning_stream.Event.__args__  # type: ignore[attr-defined]
    assert ToolCall in reasoning_stream.Event.__args__  # type: ignore[attr-defined]


def test_the_description_stops_where_a_section_or_field_list_starts() -> None:
    @tool
    def sphinx(x: int) -> int:
        """Double a number
        exactly.
        :param x: the number.
        """
        return 2 * x

    @tool
    def sections_only(x: int) -> int:
        """Args:
        x: the number.
        """
        return x

    assert sphinx.description == "Double a number exactly."
    assert sphinx.parameters["properties"]["x"]["description"] == "the number."
    assert sections_only.description == ""
    assert sections_only.parameters["properties"]["x"]["description"] == "the number."
