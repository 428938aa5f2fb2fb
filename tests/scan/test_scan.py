import json
from html import escape
from pathlib import Path

import pytest

from loopfix.records import DecodeSettings
from loopfix.scan import ConfigMismatchError, ScanConfig, run_scan
from loopfix.scan.cap import fitting_cap
from loopfix.scan.config import NothingGeneratedError
from loopfix.suites import stargraph_suite
from loopfix.suites.render import prompting_note
from loopfix.summaries import ScanSummary

REQUIRED = {
    "prompt_id",
    "sample_index",
    "settings",
    "tokens",
    "text",
    "finish_reason",
    "length",
    "loop",
    "correct",
}
RATES = ("loop_rate", "paper_loop_rate", "cut_rate", "accuracy", "accuracy_non_looping")


def config(out: Path, **changes: object) -> ScanConfig:
    base = {
        "model": "loopfix:stargraph",
        "suite": "stargraph",
        "n": 5,
        "temperatures": [0.0, 1.0],
        "samples": 2,
        "max_new_tokens": 32,
        "batch_size": 4,
        "out": out,
    }
    return ScanConfig(**{**base, **changes})  # type: ignore[arg-type]


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_scan_writes_records_summary_and_report(tmp_path: Path, testbed_backend) -> None:
    result = run_scan(config(tmp_path), backend=testbed_backend)
    rows = records(tmp_path)
    assert result.generated == len(rows) == 5 * 2 * 2
    assert all(REQUIRED <= row.keys() for row in rows)
    assert {row["settings"]["temperature"] for row in rows} == {0.0, 1.0}
    assert all(
        row["settings"]["max_new_tokens"] == 32 and "seed" in row["settings"] for row in rows
    )
    assert all(row["length"] == len(row["tokens"]) <= 32 for row in rows)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(json.dumps(result.summary.to_json()))
    assert ScanSummary.from_json(summary) == result.summary
    for row in summary["settings"]:
        assert row["n"] == 10 and row["paper_ngram"] == [4, 3]
        for rate in RATES:
            low, high = row[f"{rate}_ci95"]
            assert low <= row[rate] <= high
        assert row["median_length"] <= row["p90_length"] <= 32
    greedy = [r for r in rows if r["settings"]["temperature"] == 0.0]
    # Greedy samples of one prompt are identical; the verdict matches the stored tokens.
    by_prompt = {(r["prompt_id"], r["sample_index"]): r["tokens"] for r in greedy}
    assert all(by_prompt[(p, 0)] == by_prompt[(p, 1)] for p, _ in by_prompt)
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_rerun_resumes_without_duplicates_and_changed_config_is_refused(
    tmp_path: Path, testbed_backend
) -> None:
    run_scan(config(tmp_path, temperatures=[1.0]), backend=testbed_backend)
    before = records(tmp_path)
    again = run_scan(config(tmp_path, temperatures=[1.0]), backend=testbed_backend)
    assert again.generated == 0 and records(tmp_path) == before
    with pytest.raises(ConfigMismatchError, match=r"temperatures: \[1\.0\] there, \[0\.0\] now"):
        run_scan(config(tmp_path, temperatures=[0.0]), backend=testbed_backend)
    assert records(tmp_path) == before


def test_overlong_prompt_is_flagged_not_truncated(tmp_path: Path, testbed_backend) -> None:
    short = stargraph_suite(1, seed=0)[0].to_dict()
    long = {**short, "id": "long", "prompt": " ".join([short["prompt"]] * 8)}  # 256+ tokens
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(short) + "\n" + json.dumps(long) + "\n")
    out = tmp_path / "run"
    result = run_scan(
        config(out, suite=str(suite), n=None, temperatures=[0.0], samples=1),
        backend=testbed_backend,
    )
    flagged = {r["prompt_id"]: r for r in records(out)}["long"]
    assert flagged["finish_reason"] == "error" and flagged["tokens"] == []
    assert (
        flagged["meta"]["overlong"]
        and "exceeds the model's context of 256" in flagged["meta"]["error"]
    )
    assert result.summary.overlong_prompts == ("long",)
    assert result.summary.settings[0].overlong == 1 and result.summary.settings[0].n == 1


def test_think_on_a_template_without_enable_thinking_is_flagged(tmp_path, testbed_backend) -> None:
    asked = run_scan(config(tmp_path / "think", think=True, n=2), backend=testbed_backend)
    (warning,) = asked.summary.warnings
    assert "--think on had no effect" in warning and "enable_thinking" in warning
    assert escape(warning) in (tmp_path / "think" / "report.html").read_text()
    plain = run_scan(config(tmp_path / "plain", n=2), backend=testbed_backend)
    assert plain.summary.warnings == ()


def test_without_a_cap_the_scan_fits_the_model_and_says_so(tmp_path: Path, testbed_backend) -> None:
    out = tmp_path / "run"
    result = run_scan(
        config(out, max_new_tokens=None, temperatures=[0.0], samples=1, n=3),
        backend=testbed_backend,
    )
    longest = max(
        len(testbed_backend.tokenizer(item.prompt)["input_ids"])
        for item in stargraph_suite(3, seed=0)
    )
    cap = 256 - longest  # the testbed's context minus its longest prompt
    assert {r["settings"]["max_new_tokens"] for r in records(out)} == {cap}
    assert result.summary.settings[0].n == 3 and result.summary.settings[0].overlong == 0
    assert list(result.summary.notes) == [
        f"max_new_tokens {cap}: the context of 256 tokens minus the longest prompt ({longest}) "
        "(--max-new-tokens sets it)",
        prompting_note("completion"),  # the testbed's tokenizer has no chat template
    ]
    assert result.summary.prompting == "completion"


def test_a_scan_that_generates_nothing_is_an_error_naming_the_flag(
    tmp_path: Path, testbed_backend
) -> None:
    with pytest.raises(NothingGeneratedError, match="lower --max-new-tokens"):
        run_scan(
            config(tmp_path / "run", max_new_tokens=256, temperatures=[0.0], samples=1),
            backend=testbed_backend,
        )


def test_the_cap_prefers_the_generation_config_and_never_exceeds_the_context() -> None:
    assert fitting_cap(None, 256, 100, [30, 60]).value == 100
    assert fitting_cap(None, 256, 500, [30, 60]).value == 196
    assert fitting_cap(None, 256, None, [30, 300]).value == 226  # 300 cannot fit at all
    assert fitting_cap(None, None, None, []).value == DecodeSettings().max_new_tokens
    assert fitting_cap(64, 256, 100, [30]).value == 64
