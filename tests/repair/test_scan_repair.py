"""`loopfix repair` on a model that is not a testbed: branches and verification from scans."""

import json
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import load_model
from loopfix.patch import apply_patch, load_patch
from loopfix.records import SampleStore
from loopfix.repair import RepairConfig, run_repair
from loopfix.repair.scan_verify import patch_id
from loopfix.repair.sources import source_for
from loopfix.scan import ScanConfig, compare_runs, run_scan

# Every stage on a tiny random llama (it loops at greedy), verified at T=0 only.
SMALL = RepairConfig(
    train_pairs=8,
    heldout_pairs=8,
    kl_walks=8,
    sites=("attn_out", "down_proj"),
    max_layers=1,
    search_layers=1,
    ks=(8,),
    alphas=(2.0, 4.0),
    verify_top=2,
    causal_prompts=50,
    prompts=50,
    temperature=0.0,
    temperatures=(0.0,),
    gen_batch_size=16,
    batch_size=16,
    # The tiny model's screening pick removes nothing; these tests read the verified arms.
    verify_screened_out=True,
)


def test_repair_from_scan_records_writes_an_honest_verify_json(
    tiny_folder: Path, tmp_path: Path
) -> None:
    scan = ScanConfig(
        model=str(tiny_folder),
        suite="arith",
        n=16,
        temperatures=[0.0],
        max_new_tokens=40,
        out=tmp_path / "scan",
    )
    run_scan(scan)
    config = SMALL.model_copy(
        update={"suite": "arith", "records": scan.out / "records.jsonl", "source": "scan"}
    )
    result = run_repair(str(tiny_folder), tmp_path / "out", config, report=lambda line: None)
    verify = json.loads((tmp_path / "out" / "verify.json").read_text())
    assert verify["accepted"] == result.accepted
    for arm in ("base", "patched", "random_control"):
        assert {"loop_rate", "cut_rate", "accuracy", "mean_length", "n"} <= verify[arm].keys()
        # A built-in suite's verification prompts are fresh ones, as many as asked.
        assert verify[arm]["n"] == verify["branches"]["prompts"]["verify"] == SMALL.prompts
    assert verify["by_temperature"]["0.0"]["base"] == verify["base"]
    assert {"kl", "rescues", "regressions", "touched_fraction", "accepted"} <= verify.keys()
    assert verify["config"]["positions"] == "mode"  # no star-graph decision states in text
    branches = verify["branches"]
    assert branches["source"] == "scan" and branches["records"] == str(config.records)
    assert branches["verify_prompts"] == "fresh suite prompts"
    prompts = branches["prompts"]
    assert (prompts["train"], prompts["causal"], prompts["verify"]) == (8, 8, 50)
    assert 1 <= prompts["screening"] <= 8
    scanned = {s.prompt_id for s in SampleStore(scan.out / "records.jsonl")}
    verified = {s.prompt_id for s in SampleStore(Path(verify["base"]["records"]))}
    assert len(verified) == 50 and not verified & scanned
    assert 0 < branches["train"]["pairs"] <= 8 and 0 < branches["heldout"]["pairs"] <= 8
    # Each arm's scan.json names the weights it ran: the base model's files, and on a patched
    # arm the patch (each candidate and control its own), so no arm passes for the base.
    arms = {
        arm: json.loads((Path(verify[arm]["records"]).parent / "scan.json").read_text())
        for arm in ("base", "patched", "random_control")
    }
    assert "patch" not in arms["base"]
    for arm in ("patched", "random_control"):
        assert arms[arm]["model_files"] == arms["base"]["model_files"]
        assert len(arms[arm]["patch"]) == 64
    assert arms["patched"]["patch"] != arms["random_control"]["patch"]
    # The patched arm's id is the written patch's, read from weights it is applied to.
    with apply_patch(load_model(tiny_folder, device="cpu")[0], load_patch(verify["patch"])) as on:
        assert patch_id(on) == arms["patched"]["patch"]
    # The decision follows from the numbers, check by check.
    checks, paired = verify["checks"], verify["by_temperature"]["0.0"]["paired"]["patched"]
    base, patched = verify["base"]["loop_rate"], verify["patched"]["loop_rate"]
    assert checks["loops_fall_enough"] == (base > 0 and patched <= 0.5 * base)
    assert checks["loops_fall_significantly"] == (
        paired["loops_removed"] > paired["loops_added"] and paired["loop_mcnemar_p"] < 0.05
    )
    assert checks["success_not_down_primary"] == (paired["rescues"] >= paired["regressions"])
    assert checks["kl_within_budget"] == (verify["kl"] <= config.max_kl)
    assert checks["touched_within_budget"] == (
        verify["touched_fraction"] <= verify["config"]["max_touched_fraction"]
    )
    answers = verify["answers"]["0.0"]
    assert (answers["rescues"], answers["regressions"]) == (
        paired["rescues"],
        paired["regressions"],
    )
    assert checks["answers_rise_significantly"] == (
        paired["rescues"] > paired["regressions"] and paired["mcnemar_p"] < 0.05
    )
    routes = verify["routes"]
    passed = [r for r in ("answers", "loops") if all(checks[name] for name in routes[r])]
    within = all(checks[name] for name in routes["budgets"])
    assert verify["routes_passed"] == (passed if within else [])
    assert verify["accepted"] == bool(verify["routes_passed"])
    assert verify["verdict"].startswith("accepted" if verify["accepted"] else "rejected")
    folder = tmp_path / "out" / ("" if verify["accepted"] else "rejected_candidate")
    assert Path(verify["patch"]) == folder / "patch.json" and (folder / "patch.json").is_file()
    # The arms are scans: re-pairing their records gives the same rescues and regressions.
    runs = [Path(verify[arm]["records"]).parent for arm in ("base", "patched")]
    assert all(len(list(SampleStore(run / "records.jsonl"))) == 50 for run in runs)
    overall = compare_runs(*runs).overall
    assert (overall.rescues, overall.regressions) == (
        verify["rescues"],
        verify["regressions"],
    )
    report = (tmp_path / "out" / "report.md").read_text()
    assert "where the samples went" in report and "Branches from" in report


runner = CliRunner()


def test_cli_scans_the_suite_itself(tiny_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    arguments = ["repair", str(tiny_folder), "--suite", "arith", "--n", "8", "--out", str(out)]
    # The tiny model's greedy loops have no converging run of the same prompt to pair with (the
    # default outcome source refuses them, below): the rescue source makes its own partners.
    grid = ["--source", "rescue", "--max-new-tokens", "32", "--ks", "8", "--alphas", "2"]
    small = ["--prompts", "50", "--batch-size", "16", "--max-touched-fraction", "0.05"]
    small.append("--verify-screened-out")  # the tiny model's pick removes nothing
    result = runner.invoke(app, arguments + grid + small)
    assert result.exit_code == 0, result.output
    verify = json.loads((out / "verify.json").read_text())
    assert verify["branches"]["records"] == str(out / "scan" / "records.jsonl")
    assert (
        verify["branches"]["scan"]["n"] == 8 and verify["branches"]["scan"]["max_new_tokens"] == 32
    )
    # From a suite: the text defaults (greedy primary, T=0.6 beside it, the outcome pairs of the
    # two samples per prompt the own scan gives, the first-order search, k up to 64).
    assert set(verify["by_temperature"]) == {"0.0", "0.6"}
    assert len(list(SampleStore(out / "scan" / "records.jsonl"))) == 8 * 2
    assert verify["config"]["temperature"] == 0.0 and verify["config"]["batch_size"] == 16
    assert verify["search"]["method"] == "linear" and verify["config"]["ks"] == [8]
    # Every layer x site x k ranked; screened: the 3 best and the best two layers together.
    search, screened = verify["search"], verify["screening"]
    assert search["candidates"] == 2 * len(verify["directions"]["layers"]["separations"])
    selectivity = [row["selectivity"] for row in search["top"]]
    assert selectivity == sorted(selectivity, reverse=True)
    assert [len(row["layers"]) for row in screened] == [1, 1, 1, 2]
    best = search["top"][0]
    assert (screened[0]["site"], screened[0]["layers"]) == (best["site"], [best["layer"]])
    assert verify["config"]["perplexity_text"] is not None and verify["perplexity"] is not None
    # Screening priced every candidate's perplexity; the pick is the best within that budget.
    limit = 1 + verify["config"]["max_perplexity_increase"]

    def pick_key(row: dict) -> tuple[bool, bool, int]:
        return (
            row["perplexity_ratio"] <= limit,
            not (
                row["regressions"] > row["rescues"]
                and row["mcnemar_p"] < verify["config"]["significance"]
            ),
            row["loops_removed"] - row["loops_added"],
        )

    chosen = verify["candidate"]
    (row,) = [r for r in screened if all(r[k] == chosen[k] for k in ("site", "layers", "alpha"))]
    assert pick_key(row) == max(map(pick_key, screened))
    assert verify["perplexity"]["ratio"] == pytest.approx(row["perplexity_ratio"])
    assert "| perplexity |" in (out / "report.md").read_text()
    # Records of another suite are refused with the reason, not a traceback.
    again = runner.invoke(
        app,
        [
            "repair",
            str(tiny_folder),
            "--suite",
            "stargraph",
            "--records",
            str(out / "scan" / "records.jsonl"),
            "--out",
            str(tmp_path / "again"),
        ],
    )
    assert again.exit_code == 2
    assert "records are of suite 'arith', not 'stargraph'" in " ".join(again.output.split())


def test_default_text_source_pairs_runs_where_a_prompt_has_two(
    tiny_folder: Path, tmp_path: Path
) -> None:
    """The outcome source by default where a prompt has two or more samples, the rescue source
    where it has one; an outcome source with nothing to pair says so in one line."""
    runs = {}
    for name, temperatures in (("one", [0.0]), ("two", [0.0, 0.6])):
        scan = ScanConfig(
            model=str(tiny_folder),
            suite="arith",
            n=8,
            temperatures=temperatures,
            max_new_tokens=24,
            out=tmp_path / name,
        )
        run_scan(scan)
        runs[name] = scan.out / "records.jsonl"
    suite = partial(RepairConfig.preset, "suite", suite="arith")
    assert source_for(suite(records=runs["one"])).name == "rescue"
    assert source_for(suite(records=runs["two"].parent)).name == "outcome"
    assert source_for(suite()).name == "outcome"  # own scan: T=0 and 0.6
    assert source_for(suite(temperatures=(0.0,))).name == "rescue"
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["repair", str(tiny_folder), "--records", str(runs["two"]), "--out", str(out)]
    )
    assert result.exit_code == 2
    assert "too few outcome branch pairs" in " ".join(result.output.split())
    assert not (out / "verify.json").exists()
