"""Moved to :mod:`reasoning_stream.prompting` (prompt strategies); this path keeps working."""

from .prompting import *  # noqa: F403  (the shim re-exports exactly the module's public names)
from .prompting import __all__ as __all__
