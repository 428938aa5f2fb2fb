"""`loopfix detect` on agent trajectories: real public runs from data/agent_trajectories/, the
JSONL and bare-list forms of OpenAI chats, and one-line errors naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopfix.cli import app

from .chats import Chat

ITEMS = Path(__file__).resolve().parents[2] / "data" / "agent_trajectories" / "items"
STUCK_SWE_AGENT = ITEMS / "swe-agent__demo__ctf__crypto__eps.traj"
HEALTHY_MINI_SWE = ITEMS / "mini-swe-agent__deepseek_chat_test_1-100__django__django-11620.json"


def detect(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["detect", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_a_real_swe_agent_run_that_resubmits_a_wrong_flag(tmp_path: Path) -> None:
    out = tmp_path / "verdicts.jsonl"
    code, stdout, _ = detect(STUCK_SWE_AGENT, "--json", out, "--fail-on-loop")
    assert code == 1
    assert "submit(flag{People always make the best exploits.}) -> Wrong flag!" in stdout
    (row,) = map(json.loads, out.read_text().splitlines())
    assert (row["format"], row["kind"], row["onset_turn"], row["repeats"]) == (
        "swe-agent",
        "identical-calls",
        10,
        4,
    )


def test_a_real_mini_swe_agent_chat_with_tool_calls_is_not_stuck(tmp_path: Path) -> None:
    out = tmp_path / "verdicts.jsonl"
    code, stdout, _ = detect(HEALTHY_MINI_SWE, "--json", out, "--fail-on-loop")
    assert code == 0, stdout
    (row,) = map(json.loads, out.read_text().splitlines())
    assert (row["format"], row["stuck"], row["steps"]) == ("openai", False, 117)


def test_a_jsonl_of_message_lists_gets_one_verdict_per_line(tmp_path: Path) -> None:
    stuck = Chat()
    for _ in range(4):
        stuck.call("bash", "1 failed, 3 passed", command="pytest -q")
    healthy = (
        Chat()
        .call("bash", "1 failed", command="pytest -q")
        .call("bash", "4 passed", command="pytest -q")
    )
    source = tmp_path / "runs.jsonl"
    source.write_text(
        json.dumps(stuck.messages) + "\n\n" + json.dumps({"messages": healthy.messages}) + "\n"
    )
    out = tmp_path / "verdicts.jsonl"
    code, stdout, _ = detect(source, "--json", out)
    assert code == 0 and "2 trajectories, 1 stuck" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["line"], row["stuck"]) for row in rows] == [(1, True), (3, False)]


@pytest.mark.parametrize(
    "record",
    [
        {"id": "a", "text": "The answer is 4."},
        {  # a logged request with its response: the response's text is judged
            "messages": [{"role": "user", "content": "2 + 2?"}],
            "choices": [{"index": 0, "message": {"content": "The answer is 4."}}],
        },
    ],
)
def test_ordinary_jsonl_still_goes_to_the_text_detector(
    tmp_path: Path, record: dict[str, object]
) -> None:
    source = tmp_path / "outputs.jsonl"
    source.write_text(json.dumps(record) + "\n")
    code, stdout, _ = detect(source)
    assert code == 0 and "loops in" in stdout and "1 inputs, 0 looping" in stdout


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("run.traj", '{"trajectory": [{"action": 3}]}', "run.traj: trajectory[0].action: missing"),
        ("run.traj", "{not json", "run.traj: not JSON"),
        (
            "chat.json",
            '{"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}',
            "chat.json: messages[0].tool_calls[0].function.name: missing",
        ),
        ("chat.json", '{"messages": [{"content": "hi"}]}', "chat.json: messages[0].role: missing"),
        (
            "runs.jsonl",
            '[{"role": "user", "content": "hi"}]\n{"text": "not a chat"}\n',
            "runs.jsonl:2: not a trajectory",
        ),
        (
            "runs.jsonl",
            '[{"role": "user", "content": "hi"}]\n[{"role": \n',
            "runs.jsonl:2: not JSON",
        ),
    ],
)
def test_bad_trajectories_are_one_line_errors(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    source = tmp_path / name
    source.write_text(content)
    code, _, stderr = detect(source)
    assert code == 2
    (line,) = stderr.strip().splitlines()
    assert line.startswith("error:") and message in line, line
