import json
from pathlib import Path

import pytest

from loopfix.doctor import NotATestbedError, doctor_repair_config, run_doctor
from loopfix.models.tiny import tiny_model, tiny_tokenizer
from loopfix.repair import RepairConfig
from tests.repair.small import SMALL_TESTBED_REPAIR

# The repair stage at test size (the pipeline is the doctor's, only smaller).
SMALL_REPAIR = SMALL_TESTBED_REPAIR.model_copy(update={"prompts": 60, "gen_batch_size": 60})


def test_doctor_on_the_bundled_testbed_measures_repairs_and_reports(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_doctor(
        "loopfix:stargraph",
        tmp_path,
        n=60,
        temperatures=(0.0, 1.0),
        repair_config=SMALL_REPAIR,
        report=lines.append,
    )
    evaluation = result.evaluation
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["model"] == "loopfix:stargraph"
    assert [s["temperature"] for s in summary["settings"]] == [0.0, 1.0]
    assert summary["settings"][0]["loop_rate"] == evaluation.settings[0].loop_rate
    assert {"torch", "transformers", "loopfix"} <= summary["versions"].keys()
    # The repair stage ran into OUT/repair, and its numbers are the ones in its verify.json.
    assert set(summary["stages"]) == {"measure", "repair"}
    assert any(line.startswith("[repair]") for line in lines)
    verify = json.loads((tmp_path / "repair" / "verify.json").read_text())
    repair = summary["repair"]
    assert repair == result.repair
    assert repair["accepted"] == verify["accepted"] and repair["verdict"] == verify["verdict"]
    assert repair["temperature"] == verify["temperature"] == 0.6
    assert repair["n"] == verify["base"]["n"] == 60
    for arm in ("base", "patched", "random_control"):
        assert repair[f"{arm}_loop_rate"] == verify[arm]["loop_rate"]
        assert repair[f"{arm}_success"] == verify[arm]["accuracy"]
    assert repair["kl"] == verify["kl"] and repair["touched_fraction"] == verify["touched_fraction"]
    assert Path(repair["patch"]).is_file() and repair["seconds"] == summary["stages"]["repair"]
    report = (tmp_path / "report.md").read_text()
    assert f"{evaluation.settings[0].loop_rate:.1%}" in report
    assert "## Repair" in report and verify["verdict"] in report
    assert f"{verify['base']['loop_rate']:.1%} -> {verify['patched']['loop_rate']:.1%}" in report
    assert f"control {verify['random_control']['loop_rate']:.1%}" in report


def test_the_doctors_repair_verifies_on_its_own_number_of_prompts() -> None:
    assert doctor_repair_config(300).prompts == doctor_repair_config(300).causal_prompts == 300
    assert doctor_repair_config(10).prompts == 50  # the repair's floor
    assert doctor_repair_config(300).train_pairs == RepairConfig().train_pairs


def test_doctor_refuses_a_model_that_is_not_a_testbed(tmp_path: Path) -> None:
    folder = tmp_path / "llama"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    with pytest.raises(NotATestbedError, match="not a star-graph testbed"):
        run_doctor(str(folder), tmp_path / "out", n=4)
    assert not (tmp_path / "out" / "repair").exists()
