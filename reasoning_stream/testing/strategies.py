"""Moved to :mod:`reasoning_stream.testing.hypothesis_strategies`; this path keeps working."""

from .hypothesis_strategies import *  # noqa: F403  (the shim re-exports exactly its public names)
from .hypothesis_strategies import __all__ as __all__
