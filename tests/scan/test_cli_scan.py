"""`loopfix scan` on bad inputs: clear messages, exit code 2, nothing written."""

from pathlib import Path

from typer.testing import CliRunner

from loopfix.cli import app

runner = CliRunner()


def test_unknown_model_path_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scan", str(tmp_path / "no-model"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "does not exist" in " ".join(result.output.split())
    assert not (tmp_path / "o" / "records.jsonl").exists()
    # The typo fixed, the same directory is accepted: it holds no records yet.
    fixed = runner.invoke(
        app,
        [
            "scan",
            "loopfix:stargraph",
            "--n",
            "1",
            "--temperatures",
            "0",
            "--max-new-tokens",
            "4",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert fixed.exit_code == 0, fixed.output


def test_malformed_suite_names_file_line_and_field(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text('{"id": "a", "prompt": "ka"}\n{"id": "b", "prompt": "ka", "checker": "x"}\n')
    result = runner.invoke(
        app, ["scan", "loopfix:stargraph", "--suite", str(suite), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "suite.jsonl:2: field 'checker'" in " ".join(result.output.split())


def test_compare_needs_two_scan_directories(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scan", "--compare", str(tmp_path), str(tmp_path / "b")])
    assert result.exit_code == 2 and "not a scan directory" in " ".join(result.output.split())
