import json
from pathlib import Path

import torch

from loopfix.models import load_model
from loopfix.patch import load_patch, patched
from loopfix.repair import RepairResult, run_repair
from loopfix.repair.report import render_report
from tests.repair.small import SMALL_TESTBED_REPAIR


def test_repair_writes_verify_json_and_a_revertible_patch(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_repair("loopfix:stargraph", tmp_path, SMALL_TESTBED_REPAIR, report=lines.append)
    verify = json.loads((tmp_path / "verify.json").read_text())
    assert verify["accepted"] == result.accepted
    # verify.json has one writer and one reader: what it holds reads back to the same result,
    # which renders the same report.
    assert RepairResult.from_verify(verify, tmp_path) == result
    assert json.loads(json.dumps(result.to_json())) == verify
    assert render_report(result) == (tmp_path / "report.md").read_text()
    for arm in ("base", "patched", "random_control"):
        assert {"loop_rate", "cut_rate", "accuracy", "mean_length", "n"} <= verify[arm].keys()
        assert verify[arm]["n"] == 50
    assert set(verify["by_temperature"]) == {"0.0", "0.6", "1.0"}
    assert verify["by_temperature"]["0.6"]["base"] == verify["base"]
    assert {"kl", "rescues", "regressions", "touched_fraction"} <= verify.keys()
    assert 0 < verify["touched_fraction"] <= 0.01
    assert sum(verify["base"]["outcomes"].values()) == 50
    assert abs(verify["control"]["edit_norm"] - verify["candidate"]["edit_norm"]) < 1e-9
    assert {"load", "search", "verify"} <= verify["timing"]["seconds"].keys()
    sites = verify["directions"]["sites"]
    assert {(row["layer"], row["site"]) for row in sites} == {
        (0, "attn_out"),
        (1, "attn_out"),
        (2, "attn_out"),
    }
    assert all(0 < row["share_of_top8_columns"] <= 1 for row in sites)
    assert any("peak memory" in line for line in lines)
    assert "where the walks went" in (tmp_path / "report.md").read_text()
    # The written patch (accepted or not) applies to the testbed and reverts bit-exactly.
    patch = load_patch(Path(verify["patch"]))
    model, _ = load_model("loopfix:stargraph", device="cpu")
    original = {k: v.clone() for k, v in model.state_dict().items()}
    with patched(model, patch):
        assert patch.metrics["accepted"] == verify["accepted"]
    assert all(torch.equal(original[k], v) for k, v in model.state_dict().items())
