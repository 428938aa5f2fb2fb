import json

import pytest
import typer
from typer.testing import CliRunner

from loopfix.cli.common import LoopfixGroup
from loopfix.cli.detect import register

LOOPING = (
    "Compute 12 * 13. It is 156.\n\n"
    + "Wait, let me double-check 12 * 13: 12 * 13 = 156, so the answer is 156.\n\n" * 12
)
CLEAN = "The three primary colours of light are red, green and blue."


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer(cls=LoopfixGroup)
    register(app)
    return app


def invoke(app, *args, input=None):
    return CliRunner().invoke(app, list(args), input=input)


def write_jsonl(path, rows):
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")


def test_help_has_a_description_and_an_example(app):
    for command in ("detect", "clean"):
        result = invoke(app, command, "--help")
        assert result.exit_code == 0
        assert "Example: loopfix " + command in result.output


def test_detect_jsonl_with_a_bad_line(app, tmp_path):
    data = tmp_path / "outputs.jsonl"
    write_jsonl(
        data,
        [
            json.dumps({"id": "ok", "text": CLEAN}),
            '{"id": "bad", "text": ',
            json.dumps({"id": "loop", "text": LOOPING}),
        ],
    )
    out = tmp_path / "verdicts.jsonl"
    result = invoke(app, "detect", str(data), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "line 2, column 23" in result.output
    assert "2 inputs, 1 looping, 1 unreadable lines" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["looping"], r["kind"]) for r in rows] == [
        ("ok", False, None),
        ("loop", True, "verbatim"),
    ]
    assert set(rows[1]) == {
        "id",
        "line",
        "looping",
        "kind",
        "onset",
        "period",
        "repeats",
        "decided_by",
        "score",
    }
    assert rows[1]["decided_by"] == "periodic-tail" and rows[1]["score"] > 0.5
    assert rows[1]["repeats"] == 12


def test_fail_on_loop_for_ci(app, tmp_path):
    looping, clean = tmp_path / "loop.txt", tmp_path / "clean.txt"
    looping.write_text(LOOPING, encoding="utf-8")
    clean.write_text(CLEAN, encoding="utf-8")
    assert invoke(app, "detect", str(looping), "--fail-on-loop").exit_code == 1
    assert invoke(app, "detect", str(looping)).exit_code == 0
    assert invoke(app, "detect", str(clean), "--fail-on-loop").exit_code == 0


def test_openai_responses_field_and_stdin(app, tmp_path):
    response = {"id": "r1", "choices": [{"message": {"reasoning_content": LOOPING, "content": ""}}]}
    out = tmp_path / "verdicts.jsonl"
    result = invoke(app, "detect", "-", "--json", str(out), input=json.dumps(response) + "\n")
    assert result.exit_code == 0
    assert "2 inputs, 1 looping" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["looping"]) for r in rows] == [
        ("r1:choices[0].message.reasoning_content", True),
        ("r1:choices[0].message.content", False),
    ]
    data = tmp_path / "custom.jsonl"
    write_jsonl(data, [json.dumps({"output": LOOPING})])
    assert "1 looping" in invoke(app, "detect", str(data), "--field", "output").output


def test_clean_drop_and_cut(app, tmp_path):
    data = tmp_path / "teacher.jsonl"
    clean_row = json.dumps({"id": 1, "text": CLEAN})
    write_jsonl(data, [clean_row, json.dumps({"id": 2, "text": LOOPING}), "not json"])
    out = tmp_path / "clean.jsonl"
    result = invoke(app, "clean", str(data), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == [clean_row]
    assert "line 3, column 1" in result.output and "loops: verbatim" in result.output
    result = invoke(app, "clean", str(data), "--out", str(out), "--mode", "cut")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["text"].count("Wait, let me double-check") == 1
    assert invoke(app, "clean", str(data), "--out", str(out), "--mode", "trim").exit_code != 0


def test_bad_settings_are_reported(app, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(CLEAN, encoding="utf-8")
    result = invoke(app, "detect", str(path), "--min-repeats", "1")
    assert result.exit_code == 2 and "--min-repeats" in result.output
