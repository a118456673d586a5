"""The metaclass of the provider pipes: whole-configuration checks after construction, and
the signature ``inspect`` shows."""

from __future__ import annotations

from typing import Any

__all__ = ["Validated"]


class Validated(type):
    """Runs a provider pipe's whole-configuration checks once, after its outermost ``__init__``.

    Provider constructors are layered (``OpenRouterPipe`` -> ``OpenAIChatPipe`` ->
    ``ProviderPipe``), and some checks need what the outer layers set (a transport, an
    output limit): a misconfigured pipe fails at its construction, not at its first run.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        pipe = super().__call__(*args, **kwargs)
        pipe.validate()
        return pipe

    @property
    def __signature__(cls) -> Any:
        # ``inspect.signature(AnthropicPipe)`` would otherwise read ``__call__`` above and show
        # ``(*args, **kwargs)``: IDEs, docs and introspecting frameworks get ``__init__``'s.
        import inspect

        # A layer that passes ``**options`` on shows the keywords of the layer below it
        # instead, with their defaults (``stream=True``, ...), so the signature is complete.
        parameters: dict[str, inspect.Parameter] = {}
        rest: inspect.Parameter | None = None
        for layer in cls.__mro__:
            init = vars(layer).get("__init__")
            if init is None:
                continue
            rest = None
            for parameter in list(inspect.signature(init).parameters.values())[1:]:
                if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                    rest = parameter
                elif parameter.name not in parameters:
                    parameters[parameter.name] = parameter
            if rest is None or "_signature_root" in vars(layer):
                break
        ordered = sorted(parameters.values(), key=lambda parameter: parameter.kind)
        return inspect.Signature([*ordered, *([rest] if rest is not None else [])])
