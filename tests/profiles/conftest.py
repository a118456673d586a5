"""Every test starts and ends with no user rows registered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasoning_stream import profiles


def _clear() -> None:
    for provider, pattern in profiles.registered():
        profiles.unregister(provider, pattern)


@pytest.fixture(autouse=True)
def no_user_rows() -> Iterator[None]:
    _clear()
    yield
    _clear()
