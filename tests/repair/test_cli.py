from pathlib import Path

from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import tiny_model, tiny_tokenizer

runner = CliRunner()


def test_repair_asks_for_a_suite_for_a_model_that_is_not_a_testbed(tmp_path: Path) -> None:
    folder = tmp_path / "tiny"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    result = runner.invoke(app, ["repair", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    output = " ".join(result.output.split())
    assert "not a star-graph testbed" in output and "pass --suite SUITE" in output


def test_repair_rejects_malformed_grids() -> None:
    result = runner.invoke(app, ["repair", "--alphas", "1,big"])
    assert result.exit_code != 0 and "--alphas" in result.output
