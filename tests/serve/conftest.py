"""The scripted upstream every proxy test module runs its proxy in front of."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .scripted_upstream import ScriptedUpstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server
