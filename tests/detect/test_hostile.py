"""Hostile and degenerate inputs to `detect` and `clean` (issue 37), by the convention of
tests/test_bad_input.py: exit status 2 with one-line errors on stderr starting `error`, no
traceback, and the inputs byte-identical afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.cli.common import errors
from loopfix.detect.config import COUNT_LIMIT
from loopfix.detect.inputs import BOM, TextInput, read_inputs

LOOPING = "Wait, let me double-check 12 * 13: 12 * 13 = 156, so the answer is 156.\n\n" * 12
CLEAN = "The three primary colours of light are red, green and blue."
DEEP = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"  # far past Python's recursion limit


@pytest.fixture(autouse=True)
def narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 30-column terminal: a message that wrapped would show up as several lines."""
    monkeypatch.setattr(errors, "width", 30)


def invoke(*args: str | Path, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], input=stdin)


def error_lines(result: Result, code: int = 2) -> list[str]:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert all(line.startswith("error") for line in lines), lines
    return lines


def write_lines(path: Path, lines: list[str], prefix: bytes = b"") -> Path:
    path.write_bytes(prefix + "".join(line + "\n" for line in lines).encode())
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# 1. deep nesting and huge numbers: one line, not a traceback


def test_a_deeply_nested_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    data = write_lines(tmp_path / "x.jsonl", [json.dumps({"text": CLEAN}), DEEP])
    before = snapshot(tmp_path)
    (line,) = error_lines(invoke("detect", data), code=0)
    assert str(data) in line and "line 2: JSON nested too deeply" in line
    assert "1 inputs, 0 looping, 1 unreadable lines" in invoke("detect", data).stdout
    gate = error_lines(invoke("detect", data, "--fail-on-loop"))
    assert len(gate) == 2 and "could not be checked" in gate[1]
    out = tmp_path / "clean.jsonl"
    (line,) = error_lines(invoke("clean", data, "--out", out), code=0)
    assert "line 2: JSON nested too deeply" in line
    assert out.read_text() == json.dumps({"text": CLEAN}) + "\n"
    out.unlink()
    assert snapshot(tmp_path) == before


def test_a_file_of_only_a_deeply_nested_line_fails(tmp_path: Path) -> None:
    data = write_lines(tmp_path / "x.jsonl", [DEEP])
    before = snapshot(tmp_path)
    lines = error_lines(invoke("detect", data))
    assert "line 1: JSON nested too deeply" in lines[0] and "nothing checked" in lines[-1]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("option", "value", "low"),
    [
        ("--min-span", "99999999999999999999", 1),
        ("--min-span", "0", 1),
        ("--min-span", str(COUNT_LIMIT + 1), 1),
        ("--min-repeats", "99999999999999999999", 2),
        ("--min-repeats", "1", 2),
        ("--min-repeats", "-5", 2),
    ],
)
def test_count_options_out_of_range_are_one_line_naming_the_range(
    tmp_path: Path, option: str, value: str, low: int
) -> None:
    data = write_lines(tmp_path / "x.txt", [LOOPING])
    before = snapshot(tmp_path)
    (line,) = error_lines(invoke("detect", data, option, value))
    assert line == f"error: {option}: must be from {low} to {COUNT_LIMIT}, got {value}"
    assert snapshot(tmp_path) == before


def test_the_largest_allowed_counts_run(tmp_path: Path) -> None:
    data = write_lines(tmp_path / "x.txt", [LOOPING])
    limit = str(COUNT_LIMIT)
    result = invoke("detect", data, "--min-span", limit, "--min-repeats", limit, "--fail-on-loop")
    assert result.exit_code == 0, result.output  # no loop covers 2**31 - 1 tokens


# 2. nothing to check is an error for every kind of input


@pytest.mark.parametrize("name", ["empty.txt", "empty.jsonl", "empty.json", "blank.jsonl", "bom"])
@pytest.mark.parametrize("gate", [[], ["--fail-on-loop"]])
def test_an_empty_file_is_an_error(tmp_path: Path, name: str, gate: list[str]) -> None:
    content = {"blank.jsonl": b"\n  \n\t\n", "bom": BOM + b"\n"}.get(name, b"")
    data = tmp_path / name
    data.write_bytes(content)
    (line,) = error_lines(invoke("detect", data, *gate))
    assert line == f"error: {data}: empty, nothing to check"
    assert data.read_bytes() == content


@pytest.mark.parametrize("gate", [[], ["--fail-on-loop"]])
def test_dev_null_and_empty_stdin_are_errors(gate: list[str]) -> None:
    (line,) = error_lines(invoke("detect", "/dev/null", *gate))
    assert line == "error: /dev/null: empty, nothing to check"
    (line,) = error_lines(invoke("detect", "-", *gate, stdin=b""))
    assert line == "error: stdin: empty, nothing to check"


def test_clean_of_an_empty_file_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "empty.jsonl"
    data.write_bytes(b"")
    lines = error_lines(invoke("clean", data, "--out", tmp_path / "out.jsonl"))
    assert "nothing checked" in lines[-1]
    assert [p.name for p in tmp_path.iterdir()] == ["empty.jsonl"]


# 3. a UTF-8 byte order mark is read past


def test_a_jsonl_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    rows = [json.dumps({"id": "a", "text": LOOPING}), json.dumps({"id": "b", "text": CLEAN})]
    data = write_lines(tmp_path / "bom.jsonl", rows, prefix=BOM)
    before = snapshot(tmp_path)
    result = invoke("detect", data, "--fail-on-loop")
    assert result.exit_code == 1 and result.stderr == "", result.output
    assert "2 inputs, 1 looping, 0 unreadable lines" in result.stdout
    out = tmp_path / "clean.jsonl"
    assert invoke("clean", data, "--out", out).exit_code == 0
    assert out.read_text(encoding="utf-8").splitlines() == rows[1:]
    out.unlink()
    assert snapshot(tmp_path) == before


def test_a_byte_order_mark_is_dropped_from_text_and_stdin(tmp_path: Path) -> None:
    text = write_lines(tmp_path / "trace.txt", [CLEAN], prefix=BOM)
    assert list(read_inputs(str(text))) == [TextInput("trace", CLEAN + "\n")]
    record = BOM + json.dumps({"id": "s", "text": LOOPING}).encode() + b"\n"
    result = invoke("detect", "-", "--fail-on-loop", stdin=record)  # still sniffed as JSONL
    assert result.exit_code == 1 and "1 inputs, 1 looping" in result.stdout


def test_byte_offsets_still_count_the_byte_order_mark(tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_bytes(BOM + b'{"text": "\xff"}\n')
    line = error_lines(invoke("detect", data))[0]
    assert f"line 1: byte 0xff at byte offset {len(BOM) + 10} " in line
    text = tmp_path / "bad.txt"
    text.write_bytes(BOM + b"ok\n\xff")
    line = error_lines(invoke("detect", text))[0]
    assert f"line 2: byte 0xff at byte offset {len(BOM) + 3} " in line


# 4. rows are labelled by the record's own id, with the line to find it by


def test_rows_carry_the_records_id_and_line(tmp_path: Path) -> None:
    data = write_lines(
        tmp_path / "records.jsonl",
        [
            json.dumps({"prompt_id": "star-7", "text": LOOPING}),
            "",
            json.dumps({"id": "r1", "prompt_id": "ignored", "text": CLEAN}),
            json.dumps({"id": None, "text": CLEAN}),
        ],
    )
    out = tmp_path / "verdicts.jsonl"
    result = invoke("detect", data, "--json", out)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["id"], row["line"]) for row in rows] == [("star-7", 1), ("r1", 3), ("4", 4)]
    assert "star-7" in result.stdout
