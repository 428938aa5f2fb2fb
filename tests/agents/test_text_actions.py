"""mini-SWE-agent's text format ("mini-swe-agent-1": the command in a bash block of the
assistant's text, its output in the next user message) on a real run from
data/agent_trajectories/, and its bad input as one-line errors naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopfix.agents import TrajectoryError, detect_stuck, sniff
from loopfix.agents.readers import REFUSED, TEXT_FORMAT

ITEMS = Path(__file__).resolve().parents[2] / "data" / "agent_trajectories" / "items"
FORMAT_ERRORS = ITEMS / "mini-swe-agent-text__gemini-3-pro__sphinx-doc__sphinx-10466.json"


def test_a_real_text_format_run_is_read_as_bash_calls_and_format_errors() -> None:
    (trajectory,) = sniff(FORMAT_ERRORS) or []
    assert trajectory.format == TEXT_FORMAT and len(trajectory.steps) == 31
    first = trajectory.steps[0]
    assert first.name == "bash" and first.turn == 1
    assert first.result is not None and first.result.startswith("<returncode>0</returncode>")
    # turns 6 to 9: answered by the harness's refusal ("found N actions"), an error each time
    refused = [step for step in trajectory.steps if 6 <= step.turn <= 9]
    assert [step.name for step in refused] == [REFUSED, REFUSED, "bash", REFUSED]
    assert {step.error for step in refused} == {
        "Please always provide EXACTLY ONE action in triple backticks, found # actions."
    }
    verdict = detect_stuck(trajectory.steps)
    assert (verdict.kind, verdict.onset_turn, verdict.repeats) == ("error-loop", 6, 4)


def test_a_refused_action_is_an_error_and_a_command_output_is_not(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action, found 2 actions."},
        {"role": "assistant", "content": "```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>src</output>"},
    ]
    file = tmp_path / "run.traj.json"
    file.write_text(json.dumps({"trajectory_format": TEXT_FORMAT, "messages": messages}))
    (trajectory,) = sniff(file) or []
    refused, ran = trajectory.steps
    assert refused.name == REFUSED and refused.error == (
        "Please always provide EXACTLY ONE action, found # actions."
    )
    assert (ran.name, ran.args, ran.error) == ("bash", "ls", None)


def test_the_thought_around_a_command_is_not_part_of_the_step(tmp_path: Path) -> None:
    def turn(thought: str) -> list[dict[str, str]]:
        return [
            {"role": "assistant", "content": f"THOUGHT: {thought}\n\n```bash\npytest -x\n```"},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>1 failed</output>"},
        ]

    messages = [{"role": "user", "content": "fix it"}, *turn("first"), *turn("again")]
    file = tmp_path / "run.traj.json"
    file.write_text(json.dumps({"trajectory_format": TEXT_FORMAT, "messages": messages}))
    (trajectory,) = sniff(file) or []
    assert [step.pair for step in trajectory.steps] == [trajectory.steps[0].pair] * 2
    assert trajectory.steps[0].args == "pytest -x"


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([{"content": "```bash\nls\n```"}], "messages[0].role: missing"),
        ([{"role": "assistant", "content": 7}], "messages[0].content: expected a string"),
        (["ls"], "messages[0]: expected an object"),
    ],
)
def test_bad_text_format_runs_are_one_line_errors(
    tmp_path: Path, messages: list[object], field: str
) -> None:
    file = tmp_path / "bad.json"
    file.write_text(json.dumps({"trajectory_format": TEXT_FORMAT, "messages": messages}))
    with pytest.raises(TrajectoryError) as error:
        sniff(file)
    assert str(error.value).startswith(f"{file}: {field}")
    assert "\n" not in str(error.value)
