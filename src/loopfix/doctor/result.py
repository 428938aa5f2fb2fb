"""The doctor's typed results: one frozen dataclass per stage, and the whole run.

Each stage computes its numbers once, from its runs, and its `to_json` holds all of them:
`summary.json` and the stage's cache file (OUT/stages/NAME.json) are that record, and
`from_json` reads a stage back from it alone, so a rerun continues after the last finished
stage without reading a run or pairing one again. The shapes keep loopfix 0.x's keys (a
measured setting as its scan's summary writes it, a guard entry as `loopfix compare` does) and
add what the report needs (each setting's output lengths and its pairing with the loopiest
temperature; each entry's summary and pairs in full). The repair's record is its verify.json.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from loopfix.doctor.config import DoctorConfig
from loopfix.guard_summaries import GuardEntry
from loopfix.repair.result import RepairResult
from loopfix.summaries import FlatRecord, Paired, SettingSummary

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


def loopiest(settings: Iterable[SettingSummary]) -> SettingSummary:
    """The temperature with the highest loop rate (the lowest such temperature on a tie)."""
    return max(settings, key=lambda s: (s.loop_rate.value or 0.0, -s.temperature))


def _optional(paired: Paired | None) -> dict[str, JsonValue] | None:
    return None if paired is None else paired.to_json()


def _entry_json(entry: GuardEntry) -> dict[str, JsonValue]:
    """An entry as `loopfix compare` writes it, with its summary and pairs in full."""
    full = {"summary": entry.summary.to_json(), "paired": _optional(entry.paired)}
    return entry.to_json() | full


def _entry(data: Mapping[str, Any]) -> GuardEntry:
    paired = data["paired"]
    return GuardEntry(
        guard=data["guard"],
        summary=SettingSummary.from_json(data["summary"]),
        paired=None if paired is None else Paired.from_json(paired),
        rescues_performed=data["rescues"],
        tokens_per_s=data["tokens_per_s"],
        run=data["run"],
        rank=data["rank"],
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
    # By temperature: each other temperature against the loopiest on the scan's (prompt,
    # sample) pairs (absent: no pair), and the output length of each sample that generated.
    paired: dict[float, Paired] = field(default_factory=dict)
    lengths: dict[float, tuple[int, ...]] = field(default_factory=dict)

    @property
    def loops(self) -> int:
        return sum(s.loops for s in self.settings)

    @property
    def loopiest(self) -> SettingSummary:
        return loopiest(self.settings)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "suite": self.suite,
            "max_new_tokens": self.max_new_tokens,
            "scan": self.scan,
            "settings": [
                s.to_json()
                | {
                    "against_loopiest": _optional(self.paired.get(s.temperature)),
                    "lengths": list(self.lengths.get(s.temperature, ())),
                }
                for s in self.settings
            ],
            "testbed": self.testbed,
            "config": self.config.model_dump(mode="json"),
            "backend": self.backend,
            "dtype": self.dtype,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasureStage:
        rows = data["settings"]
        return cls(
            suite=data["suite"],
            max_new_tokens=data["max_new_tokens"],
            scan=data["scan"],
            settings=tuple(SettingSummary.from_json(row) for row in rows),
            testbed=data["testbed"],
            config=DoctorConfig.model_validate(data["config"]),
            backend=data["backend"],
            dtype=data["dtype"],
            paired={
                row["temperature"]: Paired.from_json(row["against_loopiest"])
                for row in rows
                if row["against_loopiest"] is not None
            },
            lengths={row["temperature"]: tuple(row["lengths"]) for row in rows},
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
            "entries": [_entry_json(entry) for entry in self.entries],
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GuardStage:
        entries = tuple(_entry(entry) for entry in data["entries"])
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
        return {
            "arm": self.arm,
            "entry": _entry_json(self.entry),
            "against_base": self.against_base.to_json(),
            "against_guard": self.against_guard.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CombinedArm:
        base, alone = (
            Paired.from_json(data["against_base"]),
            Paired.from_json(data["against_guard"]),
        )
        return cls(data["arm"], _entry(data["entry"]), base, alone)


@dataclass(frozen=True)
class CombinedStage(FlatRecord):
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


@dataclass(frozen=True)
class ConsistencyStage(FlatRecord):
    """The cheap consistency checks (`loopfix consistency`), run on a few of the suite's
    prompts: each check's status, and where the full report is."""

    report: str | None  # the consistency report.html (consistency.json beside it)
    statuses: dict[str, str]  # check name -> pass / warn / fail / skipped
    skipped: str | None


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
