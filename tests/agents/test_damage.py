"""A real chat damaged at random (a value of another type, a key deleted) is read or refused
with `TrajectoryError`/ValueError and nothing else: the proxy checks every chat request's
history with these readers, so any other exception would turn a request into a 500."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopfix.agents import AgentConfig, TrajectoryError, detect_stuck, openai_steps, sniff
from loopfix.serve.agent_check import stuck_agent

from .test_cli import HEALTHY_MINI_SWE

CHAT: list[dict[str, Any]] = json.loads(HEALTHY_MINI_SWE.read_text())["messages"][:12]
ODD_VALUES = st.sampled_from(
    [None, True, "x", "", -1, 10**30, 1e308, [], {}, [[[1]]], {"a": {}}, [{"text": 5}]]
)


def places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value`."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*path, index))
    return found


PLACES = [path for path in places(CHAT) if path]


def damaged(path: tuple[Any, ...], odd: Any, delete: bool) -> list[Any]:
    chat = copy.deepcopy(CHAT)
    target = chat
    for part in path[:-1]:
        target = target[part]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = odd
    return chat


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PLACES), ODD_VALUES, st.booleans())
def test_a_damaged_chat_is_read_or_refused_as_a_value_error(
    path: tuple[Any, ...], odd: Any, delete: bool
) -> None:
    chat = damaged(path, odd, delete)
    try:
        detect_stuck(openai_steps(chat))
    except ValueError:
        pass
    stuck_agent(chat, AgentConfig())  # never raises


@pytest.mark.parametrize("index", range(0, len(PLACES), 7))
def test_a_damaged_chat_file_is_read_or_one_trajectory_error(tmp_path: Path, index: int) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps({"messages": damaged(PLACES[index], 3, delete=False)}))
    try:
        sniff(source)
    except TrajectoryError as error:
        assert "\n" not in str(error) and str(source) in str(error)
