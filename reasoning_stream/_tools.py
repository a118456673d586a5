"""Tools a model may call: :class:`Tool`, the :func:`tool` decorator, and the pipes' options.

A tool is a name, a description and a JSON Schema object for its arguments, with the Python
function that runs it (optional: a tool run elsewhere has none). The provider pipes turn each
tool into their API's documented shape; :meth:`Tool.parse_arguments` checks what a model
wrote against the schema and gives back what the function takes, or an error the model can
read.

>>> @tool
... def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
...     '''Current weather for a city.'''
...     return f"12 degrees {unit} in {city}"
>>> get_weather.name, get_weather.description, get_weather.parameters["required"]
('get_weather', 'Current weather for a city.', ['city'])
>>> get_weather("Oslo")
'12 degrees c in Oslo'
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, overload

from ._exceptions import UsageError
from ._schema import describe_function, function_schema, python_arguments
from ._schema_check import ArgumentsError, parse_arguments

__all__ = [
    "ArgumentsError",
    "Tool",
    "ToolChoice",
    "ToolLike",
    "check_tool_choice",
    "is_strict_compatible",
    "to_tools",
    "tool",
]

NAME_PATTERN: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
"""The strictest of the providers' tool-name rules, so one name works everywhere: OpenAI's,
Anthropic's and Bedrock's ``[a-zA-Z0-9_-]{1,64}``
(platform.openai.com/docs/api-reference/chat/create#chat-create-tools), and Gemini's "must
start with a letter or an underscore" (ai.google.dev/api/caching#FunctionDeclaration)."""

ToolChoice = Literal["auto", "required", "none"] | str
"""``"auto"`` (the model decides), ``"required"`` (it must call one), ``"none"`` (it must not),
or a tool's name (it must call that one)."""


@dataclass(frozen=True)
class Tool:
    """A tool a model may call.

    Args:
        name: what the model calls it: 1 to 64 letters, digits, ``_`` and ``-``, starting
            with a letter or ``_``.
        description: what it does and when to use it (the model reads this).
        parameters: a JSON Schema object (``{"type": "object", "properties": ...}``) for the
            arguments.
        function: the Python function that runs it (sync or async), called with the
            arguments as keywords; ``None`` for a tool run elsewhere.
        strict: ``True`` asks the provider to hold the model to the schema exactly (OpenAI's
            structured outputs; the schema must then require every property and close every
            object); ``False`` never asks; ``None`` (the default) asks where the API does so
            by default and the schema allows it (OpenAI Responses).

    A :func:`tool`-decorated function is a ``Tool`` and stays callable as the function.

    >>> Tool("add", "Add two numbers.", {"type": "object", "properties": {}}).name
    'add'
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] | None = field(default=None, compare=False)
    strict: bool | None = None
    _typed: bool = field(default=False, init=False, repr=False, compare=False)
    """Built by :func:`tool` from a function's hints: arguments become the hinted types."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise UsageError(
                f"tool name {self.name!r} is not allowed: use 1 to 64 letters, digits, _ or -, "
                "starting with a letter or _ (the one rule every provider accepts)"
            )
        if not isinstance(self.description, str):
            raise UsageError(
                f"tool {self.name}: description must be a str, got {self.description!r}"
            )
        object.__setattr__(self, "parameters", _checked_schema(self.name, self.parameters))
        if self.function is not None and not callable(self.function):
            raise UsageError(f"tool {self.name}: function must be callable, got {self.function!r}")
        if self.strict not in (None, True, False):
            raise UsageError(f"tool {self.name}: strict must be True, False or None")
        if self.strict is True and not is_strict_compatible(self.parameters):
            raise UsageError(
                f"tool {self.name}: strict=True needs every object in the schema to list all its "
                "properties in required and set additionalProperties to false (OpenAI's "
                "structured outputs rule); give the optional ones a null type instead, or "
                "leave strict unset"
            )

    def __hash__(self) -> int:
        return hash((self.name, self.description, self.function))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool's function directly (a decorated function stays a function)."""
        if self.function is None:
            raise UsageError(f"tool {self.name} has no function to call (Tool(..., function=...))")
        return self.function(*args, **kwargs)

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (to be awaited)."""
        return self.function is not None and inspect.iscoroutinefunction(self.function)

    def parse_arguments(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function from what the model wrote.

        ``arguments`` is the call's JSON text (or a decoded object). It is checked against
        :attr:`parameters`; for a decorated function the values then become what its hints
        ask for (an ``Enum`` member, a dataclass instance). Raises :class:`ArgumentsError`
        with a message written for the model (invalid JSON, a missing or unexpected
        property, a wrong type, a value not in an enum).
        """
        checked = parse_arguments(self.parameters, arguments)
        if self.function is None or not self._typed:
            return checked
        try:
            return python_arguments(self.function, checked)
        except (TypeError, ValueError) as error:
            raise ArgumentsError(f"arguments do not fit the tool: {error}") from None

    def to_openai(self) -> dict[str, Any]:
        """The tool in the OpenAI Chat Completions function shape (also Ollama's)."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tool:
        """A tool from a dict in the OpenAI chat shape (``{"type": "function", "function":
        {...}}``), the Responses flat shape, or Anthropic's (``input_schema``)."""
        inner = data.get("function") if isinstance(data.get("function"), Mapping) else data
        assert isinstance(inner, Mapping)
        schema = inner.get("parameters", inner.get("input_schema"))
        if "name" not in inner:
            raise UsageError(
                "a tool given as a dict must be in the OpenAI function shape: "
                '{"type": "function", "function": {"name": ..., "description": ..., '
                f'"parameters": {{...}}}}}}; got keys {sorted(data)}'
            )
        return cls(
            name=inner["name"],
            description=inner.get("description") or "",
            parameters=schema if schema is not None else {"type": "object", "properties": {}},
            strict=inner.get("strict"),
        )


def _checked_schema(name: str, parameters: Any) -> dict[str, Any]:
    if not isinstance(parameters, Mapping):
        raise UsageError(
            f"tool {name}: parameters must be a JSON Schema object (a dict such as "
            f'{{"type": "object", "properties": {{...}}}}), got {type(parameters).__name__}'
        )
    if parameters.get("type") != "object":
        raise UsageError(
            f'tool {name}: parameters must describe an object ({{"type": "object", ...}}): '
            "a model sends its arguments as one JSON object"
        )
    try:
        copied: dict[str, Any] = json.loads(json.dumps(parameters))
    except (TypeError, ValueError) as error:
        raise UsageError(f"tool {name}: parameters must be JSON: {error}") from None
    return copied


def is_strict_compatible(schema: Any) -> bool:
    """Whether ``schema`` meets OpenAI's strict-mode rule: every object lists all its
    properties in ``required`` and sets ``additionalProperties`` to false
    (platform.openai.com/docs/guides/structured-outputs#supported-schemas).

    >>> is_strict_compatible({"type": "object", "properties": {"a": {"type": "string"}},
    ...                       "required": ["a"], "additionalProperties": False})
    True
    """
    if isinstance(schema, list):
        return all(is_strict_compatible(item) for item in schema)
    if not isinstance(schema, Mapping):
        return True
    kinds = schema.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    if is_object or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    return all(
        is_strict_compatible(value)
        for key, value in schema.items()
        if key not in ("enum", "const", "default", "required", "examples")
    )


ToolLike = Tool | Callable[..., Any] | Mapping[str, Any]
"""What ``tools=`` takes: a :class:`Tool` (a decorated function is one), a plain function
(its hints give the schema), or a dict in the OpenAI function shape."""


def to_tools(tools: Iterable[ToolLike] | None) -> tuple[Tool, ...]:
    """``tools=`` as :class:`Tool` objects, names unique (``UsageError`` otherwise)."""
    if tools is None:
        return ()
    if isinstance(tools, Tool | Mapping) or callable(tools) or isinstance(tools, str):
        raise UsageError("tools= takes a list of tools, e.g. tools=[get_weather]")
    converted: list[Tool] = []
    for item in tools:
        if isinstance(item, Tool):
            converted.append(item)
        elif isinstance(item, Mapping):
            converted.append(Tool.from_dict(item))
        elif callable(item):
            converted.append(tool(item))
        else:
            raise UsageError(
                f"tools= holds {type(item).__name__} {item!r:.40}; give Tool objects, "
                "@tool-decorated functions, or dicts in the OpenAI function shape"
            )
    names = [item.name for item in converted]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"tools= names {', '.join(repeated)} more than once; names must be unique")
    return tuple(converted)


def check_tool_choice(choice: ToolChoice | None, tools: tuple[Tool, ...]) -> None:
    """Refuse a ``tool_choice`` that cannot work with ``tools`` (``UsageError``)."""
    if choice is None:
        return
    if not isinstance(choice, str):
        raise UsageError(
            f'tool_choice must be "auto", "required", "none" or a tool\'s name, got {choice!r}'
        )
    if choice == "none":
        return
    if not tools:
        raise UsageError(f"tool_choice={choice!r} needs tools=: the pipe has no tools")
    if choice in ("auto", "required"):
        return
    names = [item.name for item in tools]
    if choice not in names:
        raise UsageError(
            f'tool_choice={choice!r} names no tool of this pipe; use "auto", "required", '
            f'"none" or one of: {", ".join(names)}'
        )


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, strict: bool | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a :class:`Tool`: its hints give the schema, its docstring the words.

    Use it bare (``@tool``) or with options (``@tool(name="weather", description="...")``).
    The docstring's first paragraph is the description; an ``Args:`` section (or
    ``:param x:`` lines) describes the parameters. Hints: ``str``, ``int``, ``float``,
    ``bool``, ``Literal``, ``Enum``, ``list[X]``, ``dict[str, X]``, ``X | None``,
    ``TypedDict``, dataclasses, ``Annotated[X, "description"]``; a default makes a parameter
    optional. The result stays callable as the function.
    """

    def build(target: Callable[..., Any]) -> Tool:
        if isinstance(target, Tool):
            raise UsageError(f"{target.name} is a Tool already; apply @tool once")
        if not callable(target):
            raise UsageError(f"@tool decorates a function, got {type(target).__name__}")
        summary, _ = describe_function(target)
        made = Tool(
            name=name if name is not None else getattr(target, "__name__", ""),
            description=summary if description is None else description,
            parameters=function_schema(target),
            function=target,
            strict=strict,
        )
        object.__setattr__(made, "_typed", True)
        # Introspection sees the function: help(), inspect.signature(), a wrapped __doc__.
        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            if hasattr(target, attribute):
                object.__setattr__(made, attribute, getattr(target, attribute))
        object.__setattr__(made, "__wrapped__", target)
        return made

    if function is not None:
        return build(function)
    return build
