"""Agent trajectories from files: OpenAI chat messages (assistant `tool_calls`, `tool`
results; a bare list, an object with `messages` such as a request body or a mini-SWE-agent
`.traj.json`, or a JSONL file of either), mini-SWE-agent's text format (`trajectory_format`
"mini-swe-agent-1": the command in a bash block of the assistant's text, its output the next
user message) and SWE-agent `.traj` files (`trajectory`: action, observation). Anything else is
not a trajectory (`sniff` says None), and a trajectory with a bad field is a `TrajectoryError`
naming the file, the line and the field."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loopfix.agents.normalise import (
    SHOWN_CHARS,
    collapse,
    error_signature,
    mask_numbers,
    normalise_args,
    normalise_result,
)
from loopfix.agents.steps import SAY, Step, Trajectory
from loopfix.errors import LoopfixError


class TrajectoryError(LoopfixError):
    """A trajectory that cannot be read, said as `FILE[:LINE]: FIELD: problem`."""


class _FieldError(ValueError):
    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


def _text(content: Any, field: str) -> str:
    """A message's content: a string, null, or OpenAI's list of parts (the text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return "\n".join(text for text in texts if isinstance(text, str))
    raise _FieldError(field, f"expected a string or a list of parts, got {type(content).__name__}")


def _object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _FieldError(field, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise _FieldError(field, f"expected a list, got {type(value).__name__}")
    return value


def _step(turn: int, name: str, arguments: Any, raw_result: str | None) -> Step:
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Step(
        turn=turn,
        name=name,
        args=normalise_args(arguments) if name != SAY else collapse(arguments),
        result=None if raw_result is None else normalise_result(raw_result),
        error=None if raw_result is None else error_signature(raw_result),
        shown_args=collapse(shown)[:SHOWN_CHARS],
    )


def _reply(messages: list[Any], index: int) -> str | None:
    """The user message right after `messages[index]` (a harness's answer to a message
    without a tool call), if there is one."""
    following = messages[index + 1] if index + 1 < len(messages) else None
    if not isinstance(following, dict) or following.get("role") != "user":
        return None
    return _text(following.get("content"), f"messages[{index + 1}].content")


def _call_steps(message: dict[str, Any], index: int, turn: int, later: list[Any]) -> list[Step]:
    """The steps of `messages[index]`'s tool calls, `later` the messages after it. A call's
    result is the `tool` message with its id before the next assistant message (real logs
    reuse ids across turns); calls without ids take the id-less ones there, in order."""
    where = f"messages[{index}]"
    calls = _list(message.get("tool_calls"), f"{where}.tool_calls")
    answers: dict[str, str] = {}
    unanswered: list[str] = []
    for offset, reply in enumerate(later, index + 1):
        if not isinstance(reply, dict) or reply.get("role") == "assistant":
            break
        if reply.get("role") == "tool":
            content = _text(reply.get("content"), f"messages[{offset}].content")
            if reply.get("tool_call_id"):
                answers.setdefault(str(reply["tool_call_id"]), content)
            else:
                unanswered.append(content)
    id_less = iter(unanswered)
    steps = []
    for number, raw_call in enumerate(calls):
        field = f"{where}.tool_calls[{number}]"
        function = _object(_object(raw_call, field).get("function"), f"{field}.function")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _FieldError(f"{field}.function.name", "missing")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, (str, dict)):
            raise _FieldError(f"{field}.function.arguments", "expected a string or an object")
        if raw_call.get("id") is not None:
            result = answers.get(str(raw_call["id"]))
        else:
            result = next(id_less, None)
        steps.append(_step(turn, name, arguments, result))
    return steps


def openai_steps(messages: list[Any], turns_before: int = 0) -> list[Step]:
    """Steps of an OpenAI chat: each tool call with the `tool` message answering its id, and
    each assistant message without calls with the user message that answered it. Turns count
    from `turns_before` (the assistant messages of a history before this part of it)."""
    steps: list[Step] = []
    turn = turns_before
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        message = _object(raw, where)
        role = message.get("role")
        if not isinstance(role, str):
            raise _FieldError(f"{where}.role", "missing (expected system, user, assistant, tool)")
        if role != "assistant":
            continue
        turn += 1
        if message.get("tool_calls"):
            steps += _call_steps(message, index, turn, messages[index + 1 :])
        else:
            text = _text(message.get("content"), f"{where}.content")
            steps.append(_step(turn, SAY, text, _reply(messages, index)))
    return steps


TEXT_FORMAT = "mini-swe-agent-1"
"""The `trajectory_format` of mini-SWE-agent runs whose actions are bash blocks in the text
(its later "mini-swe-agent-1.1" uses `tool_calls`, read as any OpenAI chat)."""
BASH_BLOCK = re.compile(r"```bash[ \t]*\n(.*?)\n?```", re.DOTALL)
EXECUTED = "<returncode>"
"""How the text-format harness opens the output of a command it ran; any other reply (a format
error, a timeout) refused the action."""
REFUSED = "(refused)"
"""The `name` of a text-format message the harness refused to run (no bash block, or several):
an attempted action, not a message, so that the same refusal again is an error loop."""


def _refusal(step: Step, reply: str | None) -> Step:
    """A step the harness refused is an error, the refusal's first line its signature (the
    same refusal again and again is an error loop, whatever the agent wrote)."""
    if reply is None or EXECUTED in reply or not reply.strip():
        return step
    first_line = reply.strip().splitlines()[0]
    name = REFUSED if step.name == SAY else step.name
    return dataclasses.replace(step, name=name, error=mask_numbers(collapse(first_line)))


def text_action_steps(messages: list[Any]) -> list[Step]:
    """Steps of a chat whose actions are written in the text: an assistant message with
    exactly one bash block is a `bash` call of that command (the "THOUGHT" around it is not
    part of the step), answered by the user message after it; any other assistant message
    (none or several blocks: the harness answers with a format error) is a message step. A
    reply that is no command output is the harness refusing the action: an error."""
    steps: list[Step] = []
    turn = 0
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        message = _object(raw, where)
        if not isinstance(message.get("role"), str):
            raise _FieldError(f"{where}.role", "missing (expected system, user, assistant)")
        if message["role"] != "assistant":
            continue
        turn += 1
        text = _text(message.get("content"), f"{where}.content")
        blocks = BASH_BLOCK.findall(text)
        reply = _reply(messages, index)
        if len(blocks) == 1:
            step = _step(turn, "bash", blocks[0].strip(), reply)
        else:
            step = _step(turn, SAY, text, reply)
        steps.append(_refusal(step, reply))
    return steps


def swe_agent_steps(entries: list[Any]) -> list[Step]:
    """Steps of a SWE-agent `.traj` `trajectory`: the action's first word is the tool (a
    command, `open`, `edit`, `submit`, ...), the rest its arguments, the observation its
    result. An empty action (the run ended on a limit) is no step."""
    steps: list[Step] = []
    for index, raw in enumerate(entries):
        where = f"trajectory[{index}]"
        entry = _object(raw, where)
        action = entry.get("action")
        if not isinstance(action, str):
            raise _FieldError(f"{where}.action", "missing (expected the command text)")
        observation = entry.get("observation")
        if observation is not None and not isinstance(observation, str):
            raise _FieldError(f"{where}.observation", "expected a string")
        name, _, rest = action.strip().partition(" ")
        if name:
            steps.append(_step(index + 1, name, rest, observation))
    return steps


def trajectory_of(data: Any, default_id: str, line: int | None = None) -> Trajectory | None:
    """The trajectory `data` holds, or None when its shape is no trajectory format's."""
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return Trajectory(default_id, openai_steps(data), "openai", line)
    if not isinstance(data, dict):
        return None
    identity = str(data.get("instance_id") or data.get("id") or default_id)
    if isinstance(data.get("messages"), list) and data.get("trajectory_format") == TEXT_FORMAT:
        return Trajectory(identity, text_action_steps(data["messages"]), TEXT_FORMAT, line)
    # a record with `choices` is a logged response: its text is what `loopfix detect` judges
    if isinstance(data.get("messages"), list) and "choices" not in data:
        steps = openai_steps(data["messages"])
        return Trajectory(identity, steps, "openai", line)
    if isinstance(data.get("trajectory"), list):
        return Trajectory(identity, swe_agent_steps(data["trajectory"]), "swe-agent", line)
    return None


def _records(path: Path, text: str) -> Iterator[tuple[int | None, Any]]:
    """(line, parsed JSON) of each JSONL record, or (None, the whole file's JSON); a record that
    is not JSON yields (line, `TrajectoryError`) for the caller to raise or ignore."""
    if path.suffix.lower() != ".jsonl":
        try:
            yield None, json.loads(text)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
            yield None, TrajectoryError(f"{path}: not JSON: {error}")
        return
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                yield number, json.loads(raw)
            except (ValueError, RecursionError) as error:
                yield number, TrajectoryError(f"{path}:{number}: not JSON: {error}")


def sniff(path: Path) -> list[Trajectory] | None:
    """The trajectories in `path` (.json, .traj or .jsonl), or None when the file holds no
    trajectory: its first record (the whole file for .json) decides, so other JSON and JSONL
    inputs go on to the text detector untouched. Raises `TrajectoryError` for a trajectory file
    with a record that is not JSON, not a trajectory, or has a bad field (a `.traj` file is a
    trajectory file whatever it holds)."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".traj", ".jsonl"):
        return None
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        if suffix == ".traj":
            raise TrajectoryError(f"{path}: not UTF-8 at byte offset {error.start}") from None
        return None  # the text detector reads it and names the line and byte
    found: list[Trajectory] = []
    for line, data in _records(path, text):
        where = f"{path}:{line}" if line is not None else str(path)
        if isinstance(data, TrajectoryError):
            if found or suffix == ".traj":
                raise data
            return None
        name = path.name.split(".")[0] if line is None else f"{path.stem}:{line}"
        try:
            trajectory = trajectory_of(data, name, line)
        except _FieldError as error:
            raise TrajectoryError(f"{where}: {error}") from None
        if trajectory is None:
            if found or suffix == ".traj":
                raise TrajectoryError(
                    f"{where}: not a trajectory (expected messages or trajectory)"
                )
            return None
        found.append(trajectory)
    return found or None
