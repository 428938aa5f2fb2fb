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


def test_doctor_command_writes_its_files_and_names_what_to_change(tmp_path: Path) -> None:
    from loopfix.models.tiny import tiny_model, tiny_tokenizer

    # Every stage is tested through run_doctor (tests/test_doctor.py); this is the command.
    out = tmp_path / "doctor"
    arguments = ["doctor", "--n", "20", "--guards", "none,dry", "--no-repair", "--out", str(out)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [s["temperature"] for s in summary["measure"]["settings"]] == [0.0, 0.6, 1.0]
    assert summary["repair"]["skipped"] == "--no-repair" and not (out / "repair").exists()
    advice = summary["recommendation"]
    assert f"recommendation: T={advice['temperature']:g}, guard {advice['guard']}." in result.output
    assert "Skipped: --no-repair" in (out / "report.md").read_text()
    folder = tmp_path / "llama"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    too_long = ["doctor", str(folder), "--n", "2", "--max-new-tokens", "300"]
    refused = runner.invoke(app, [*too_long, "--out", str(tmp_path / "x")])
    # One line (no wrapping at any terminal width) that names the flag to change.
    line = next(line for line in refused.output.splitlines() if line.startswith("error:"))
    assert refused.exit_code == 2 and "lower --max-new-tokens" in line, refused.output
