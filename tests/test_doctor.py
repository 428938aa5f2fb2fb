import json
from pathlib import Path

import pytest

from loopfix.doctor import NotATestbedError, run_doctor
from loopfix.models.tiny import tiny_model, tiny_tokenizer


def test_doctor_on_the_bundled_testbed_writes_summary_and_report(tmp_path: Path) -> None:
    evaluation = run_doctor("loopfix:stargraph", tmp_path, n=60, temperatures=(0.0, 1.0))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["model"] == "loopfix:stargraph"
    assert [s["temperature"] for s in summary["settings"]] == [0.0, 1.0]
    assert summary["settings"][0]["loop_rate"] == evaluation.settings[0].loop_rate
    assert {"torch", "transformers", "loopfix"} <= summary["versions"].keys()
    report = (tmp_path / "report.md").read_text()
    assert f"{evaluation.settings[0].loop_rate:.1%}" in report


def test_doctor_refuses_a_model_that_is_not_a_testbed(tmp_path: Path) -> None:
    folder = tmp_path / "llama"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    with pytest.raises(NotATestbedError, match="not a star-graph testbed"):
        run_doctor(str(folder), tmp_path / "out", n=4)
