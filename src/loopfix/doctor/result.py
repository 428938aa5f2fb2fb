"""The doctor's typed results: one frozen dataclass per stage, and the whole run.

`to_json` is what `summary.json` and a stage's cache file hold (the shapes of loopfix 0.x, kept:
a guard entry as `loopfix compare` writes it, a measured setting as its rates); `from_json`
reads a stage back from its cache file, so a rerun continues after the last finished stage. A
stage's numbers are a function of the runs in its folders, so the measure and guard stages
read them back from there (the measure scan's summary.json, the compared runs) rather than from
the subset the cache shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from loopfix.doctor.config import DoctorConfig
from loopfix.guard_summaries import GuardEntry
from loopfix.repair.result import RepairResult
from loopfix.summaries import Paired, ScanSummary, SettingSummary

__all__ = [
    "CombinedArm",
    "CombinedStage",
    "ConsistencyStage",
    "DoctorResult",
    "GuardStage",
    "MeasureStage",
    "Recommendation",
    "RepairStage",
    "StageCost",
]

# What the doctor's files show of a measured setting (its scan's summary.json has them all).
MEASURE_KEYS = (
    "temperature",
    "n",
    "loop_rate",
    "cut_rate",
    "paper_loop_rate",
    "accuracy",
    "judged",
    "mean_length",
    "loop_rate_ci95",
    "cut_rate_ci95",
    "accuracy_ci95",
    "outcomes",
    "overlong",
)


@dataclass(frozen=True)
class MeasureStage:
    suite: str
    max_new_tokens: int
    scan: str  # the scan's folder (records.jsonl, summary.json, report.html)
    settings: tuple[SettingSummary, ...]  # the scan's, one per temperature
    testbed: bool  # a star-graph testbed (its repair has the teacher's branches)
    config: DoctorConfig  # the doctor's config with every default filled for this model
    backend: str  # what generated: hf, vllm or openai
    dtype: str | None  # the weights' dtype as it ran (None: a server's, unknown)

    @property
    def loops(self) -> int:
        return sum(s.loops for s in self.settings)

    @property
    def loopiest(self) -> SettingSummary:
        """The temperature with the highest loop rate (the lowest such temperature on a tie)."""
        return max(self.settings, key=lambda s: (s.loop_rate.value or 0.0, -s.temperature))

    def to_json(self) -> dict[str, JsonValue]:
        settings = [s.to_json() for s in self.settings]
        return {
            "suite": self.suite,
            "max_new_tokens": self.max_new_tokens,
            "scan": self.scan,
            "settings": [{key: row[key] for key in MEASURE_KEYS} for row in settings],
            "testbed": self.testbed,
            "config": self.config.model_dump(mode="json"),
            "backend": self.backend,
            "dtype": self.dtype,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasureStage:
        """The stage, its settings read from its scan's summary.json."""
        summary = json.loads((Path(data["scan"]) / "summary.json").read_text())
        return cls(
            suite=data["suite"],
            max_new_tokens=data["max_new_tokens"],
            scan=data["scan"],
            settings=ScanSummary.from_json(summary).settings,
            testbed=data["testbed"],
            config=DoctorConfig.model_validate(data["config"]),
            backend=data["backend"],
            dtype=data["dtype"],
        )


@dataclass(frozen=True)
class GuardStage:
    temperature: float | None
    folder: str | None  # the comparison's folder (summary.json, report.html, runs/)
    entries: tuple[GuardEntry, ...]  # `run_compare`'s
    skipped: str | None  # why the stage did not run

    @classmethod
    def not_run(cls, reason: str) -> GuardStage:
        return cls(None, None, (), reason)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "temperature": self.temperature,
            "folder": self.folder,
            "entries": [entry.to_json() for entry in self.entries],
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GuardStage:
        """The stage, its entries read back from the compared runs."""
        from loopfix.scan.guard_comparison import compare_entries

        runs = [(e["guard"], e["temperature"], Path(e["run"])) for e in data["entries"]]
        entries = compare_entries(runs) if runs else ()
        return cls(data["temperature"], data["folder"], entries, data["skipped"])


@dataclass(frozen=True)
class RepairStage:
    """The repair's `RepairResult` (None: not run, `skipped` says why). Its stage cache and
    summary.json entry name the result's verify.json, from which it is read back."""

    result: RepairResult | None
    skipped: str | None

    @classmethod
    def not_run(cls, reason: str) -> RepairStage:
        return cls(None, reason)

    @property
    def accepted(self) -> bool | None:
        return None if self.result is None else self.result.accepted

    @property
    def verdict(self) -> str | None:
        return None if self.result is None else self.result.verdict

    @property
    def patch(self) -> Path | None:
        return None if self.result is None else self.result.patch

    def to_json(self) -> dict[str, JsonValue]:
        result = self.result
        if result is None:
            return {
                **dict.fromkeys(("accepted", "verdict", "verify", "folder", "temperature", "n")),
                "loop_rate": {},
                "accuracy": {},
                **dict.fromkeys(("kl", "touched_fraction", "patch")),
                "skipped": self.skipped,
            }
        return {
            "accepted": result.accepted,
            "verdict": result.verdict,
            "verify": str(result.verify_json),
            "folder": str(result.folder),
            "temperature": result.temperature,
            "n": result.n,
            "loop_rate": {arm: rate for arm, rate in result.loop_rate.items()},
            "accuracy": {arm: rate for arm, rate in result.accuracy.items()},
            "kl": result.kl,
            "touched_fraction": result.touched_fraction,
            "patch": None if result.patch is None else str(result.patch),
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RepairStage:
        if data["verify"] is None:
            return cls.not_run(data["skipped"])
        verify = json.loads(Path(data["verify"]).read_text())
        return cls(RepairResult.from_verify(verify, Path(data["folder"])), data["skipped"])


@dataclass(frozen=True)
class CombinedArm:
    """An arm of the patch + guard stage: the patched model's run as `loopfix compare`
    summarized it, paired with the unpatched model's run without a guard, and with its run of
    the same guard (what the patch adds to the guard, or costs it)."""

    arm: str  # "patch" or "patch + GUARD"
    entry: GuardEntry
    against_base: Paired
    against_guard: Paired

    def to_json(self) -> dict[str, JsonValue]:
        summary, base, alone = self.entry.summary, self.against_base, self.against_guard
        return {
            "arm": self.arm,
            "guard": self.entry.guard,
            "n": summary.n,
            "loop_rate": summary.loop_rate.value,
            "cut_rate": summary.cut_rate.value,
            "accuracy": summary.accuracy.value,
            "mean_length": summary.mean_length,
            "rescues": base.rescues,
            "regressions": base.regressions,
            "mcnemar_p": base.mcnemar_p,
            "loops_removed": base.loops_removed,
            "loops_added": base.loops_added,
            "vs_guard_alone": {
                "rescues": alone.rescues,
                "regressions": alone.regressions,
                "mcnemar_p": alone.mcnemar_p,
            },
            "run": self.entry.run,
        }


@dataclass(frozen=True)
class CombinedStage:
    """An accepted patch alone and with the recommended guard, at the guard stage's
    temperature on its prompts and seeds, each paired with that stage's unguarded base run."""

    temperature: float | None
    guard: str | None  # the recommended guard combined with the patch (None: none recommended)
    folder: str | None
    rows: tuple[CombinedArm, ...]
    skipped: str | None

    @classmethod
    def not_run(cls, reason: str) -> CombinedStage:
        return cls(None, None, None, (), reason)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "temperature": self.temperature,
            "guard": self.guard,
            "folder": self.folder,
            "rows": [row.to_json() for row in self.rows],
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], guards: GuardStage) -> CombinedStage:
        """The stage, its arms read back from their runs and paired again with `guards`'."""
        from loopfix.doctor.combined import combined_arms
        from loopfix.scan.guard_comparison import compare_entries

        temperature = data["temperature"]
        runs = [(row["guard"], temperature, Path(row["run"])) for row in data["rows"]]
        rows = combined_arms(guards, compare_entries(runs)) if runs else ()
        return cls(temperature, data["guard"], data["folder"], rows, data["skipped"])


@dataclass(frozen=True)
class ConsistencyStage:
    """The cheap consistency checks (`loopfix consistency`), run on a few of the suite's
    prompts: each check's status, and where the full report is."""

    report: str | None  # the consistency report.html (consistency.json beside it)
    statuses: dict[str, str]  # check name -> pass / warn / fail / skipped
    skipped: str | None

    def to_json(self) -> dict[str, JsonValue]:
        return {"report": self.report, "statuses": dict(self.statuses), "skipped": self.skipped}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsistencyStage:
        return cls(data["report"], data["statuses"], data["skipped"])


@dataclass(frozen=True)
class Recommendation:
    """The setting that removes most loops without losing accuracy (see `recommend`)."""

    temperature: float
    guard: str
    loop_rate: float | None
    cut_rate: float | None
    accuracy: float | None
    baseline: SettingSummary  # the loopiest temperature without a guard, for comparison
    reference_accuracy: float | None  # the best accuracy of any temperature without a guard
    reason: str

    def to_json(self) -> dict[str, JsonValue]:
        baseline = self.baseline
        return {
            "temperature": self.temperature,
            "guard": self.guard,
            "loop_rate": self.loop_rate,
            "cut_rate": self.cut_rate,
            "accuracy": self.accuracy,
            "baseline": {
                "temperature": baseline.temperature,
                "guard": "none",
                "n": baseline.n,
                "loop_rate": baseline.loop_rate.value,
                "cut_rate": baseline.cut_rate.value,
                "accuracy": baseline.accuracy.value,
                "mean_length": baseline.mean_length,
            },
            "reference_accuracy": self.reference_accuracy,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class StageCost:
    seconds: float
    peak_rss_mib: float


@dataclass(frozen=True)
class DoctorResult:
    model: str
    config: DoctorConfig
    measure: MeasureStage
    guards: GuardStage
    repair: RepairStage
    combined: CombinedStage
    consistency: ConsistencyStage
    recommendation: Recommendation
    stages: dict[str, StageCost]
    versions: dict[str, str]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "model": self.model,
            "config": self.config.model_dump(mode="json"),
            "measure": self.measure.to_json(),
            "guards": self.guards.to_json(),
            "repair": self.repair.to_json(),
            "combined": self.combined.to_json(),
            "consistency": self.consistency.to_json(),
            "recommendation": self.recommendation.to_json(),
            "stages": {name: asdict(cost) for name, cost in self.stages.items()},
            "versions": dict(self.versions),
        }
