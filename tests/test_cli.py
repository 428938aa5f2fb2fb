import json
from pathlib import Path

from typer.testing import CliRunner

from loopfix.cli import app

runner = CliRunner()


def test_help_lists_every_verb_with_a_description() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for verb in ("doctor", "lab"):
        assert verb in result.output
    lab = runner.invoke(app, ["lab", "--help"])
    assert "train" in lab.output and "eval" in lab.output


def test_lab_train_then_eval_writes_the_json_shape(tmp_path: Path) -> None:
    model = tmp_path / "testbed"
    trained = runner.invoke(
        app, ["lab", "train", "--out", str(model), "--steps", "3", "--threads", "1"]
    )
    assert trained.exit_code == 0, trained.output
    out = tmp_path / "eval.json"
    result = runner.invoke(
        app,
        [
            "lab",
            "eval",
            str(model),
            "--n",
            "20",
            "--temperatures",
            "0,1",
            "--max-new-tokens",
            "12",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [s["temperature"] for s in data["settings"]] == [0.0, 1.0]
    for row in data["settings"]:
        assert row["n"] == 20
        assert {"success", "loop_rate", "legal_rate", "mean_length"} <= row.keys()
    assert len(data["flywheel"]) == 6


def test_bad_arguments_are_named() -> None:
    result = runner.invoke(app, ["lab", "eval", "--temperatures", "0,hot"])
    assert result.exit_code != 0 and "--temperatures" in result.output
    result = runner.invoke(app, ["lab", "train", "--out", "x", "--variant", "nope"])
    assert result.exit_code != 0 and "stargraph-clean" in result.output


def test_doctor_command_writes_its_files_and_refuses_a_non_testbed(tmp_path: Path) -> None:
    from loopfix.models.tiny import tiny_model, tiny_tokenizer

    # The repair stage itself is tested through run_doctor (tests/test_doctor.py).
    out = tmp_path / "doctor"
    result = runner.invoke(app, ["doctor", "--n", "20", "--no-repair", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [s["temperature"] for s in summary["settings"]] == [0.0, 1.0]
    assert summary["repair"] is None and "repair" not in summary["stages"]
    assert "Skipped (`--no-repair`)" in (out / "report.md").read_text()
    assert not (out / "repair").exists()
    folder = tmp_path / "llama"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    refused = runner.invoke(app, ["doctor", str(folder), "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and "not a star-graph testbed" in refused.output
