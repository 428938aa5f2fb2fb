"""`loopfix consistency`: the files it writes, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.consistency import ConsistencyResult, write_consistency

runner = CliRunner()


def test_writes_json_and_a_self_contained_report(tmp_path: Path) -> None:
    out, extra = tmp_path / "run", tmp_path / "copy.json"
    arguments = ["consistency", "loopfix:stargraph", "--n", "4", "--max-new-tokens", "16"]
    arguments += ["--checks", "determinism,batch_invariance", "--batch-sizes", "4"]
    result = runner.invoke(app, [*arguments, "--out", str(out), "--json", str(extra)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "consistency.json").read_text())
    assert data == json.loads(extra.read_text())
    assert [c["name"] for c in data["checks"]] == ["determinism", "batch_invariance"]
    assert {"name", "status", "numbers", "divergences"} <= set(data["checks"][0])
    assert data["environment"]["torch"] and data["config"]["seed"] == 0
    html = (out / "report.html").read_text()
    assert "determinism" in html and "batch_invariance" in html
    assert "<script" not in html and "http" not in html.split("</style>", 1)[1]


def test_report_shows_divergences_with_their_top_5(
    testbed_result: ConsistencyResult, tmp_path: Path
) -> None:
    paths = write_consistency(testbed_result, tmp_path)
    html = paths["html"].read_text()
    divergences = [d for c in testbed_result.checks for d in c.divergences]
    assert divergences  # the preamble changes some outputs of the testbed
    assert "top-5 (reference)" in html and f"#{divergences[0].top[0].id} p=" in html


def _error(arguments: list[str]) -> str:
    result = runner.invoke(app, ["consistency", "loopfix:stargraph", *arguments])
    assert result.exit_code == 2, result.output
    return result.output


def test_unknown_check_is_a_one_line_error() -> None:
    output = _error(["--checks", "determinism,speed"])
    assert "unknown check 'speed'" in output and "--checks" in output


def test_empty_temperature_list_is_an_error() -> None:
    output = _error(["--temperatures", ""])
    assert "--temperatures" in output and "at least one temperature" in output


def test_template_on_a_model_without_one_is_a_one_line_error(tmp_path: Path) -> None:
    output = _error(["--template", "--checks", "context", "--out", str(tmp_path)])
    assert "error: template: the model's tokenizer has no chat template" in output
    assert len([line for line in output.splitlines() if "error" in line]) == 1


def test_a_url_as_model_skips_every_check_with_the_reason(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "consistency",
            "http://127.0.0.1:9",
            "--checks",
            "determinism,backend",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    checks = json.loads((tmp_path / "consistency.json").read_text())["checks"]
    assert [c["status"] for c in checks] == ["skipped", "skipped"]
    assert all("no local weights" in c["reason"] for c in checks)
