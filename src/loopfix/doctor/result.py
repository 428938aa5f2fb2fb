"""The doctor's typed results: one frozen dataclass per stage, and the whole run.

`to_dict` is what `summary.json` holds; `from_dict` reads a stage back from its cache file, so
a rerun continues after the last finished stage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from loopfix.repair.result import RepairResult

__all__ = [
    "ConsistencyStage",
    "DoctorResult",
    "GuardStage",
    "MeasureSetting",
    "MeasureStage",
    "Recommendation",
    "RepairStage",
    "StageCost",
]


@dataclass(frozen=True)
class MeasureSetting:
    """One temperature of the measure scan (rates over generated samples)."""

    temperature: float
    n: int
    loop_rate: float | None
    cut_rate: float | None
    paper_loop_rate: float | None
    accuracy: float | None  # over judged samples; None when no checker judged any
    judged: int
    mean_length: float | None
    loop_rate_ci95: list[float] | None
    cut_rate_ci95: list[float] | None
    accuracy_ci95: list[float] | None
    outcomes: dict[str, int]
    overlong: int

    @classmethod
    def from_summary(cls, row: dict[str, Any]) -> MeasureSetting:
        """From one entry of a scan's summary.json `settings`."""
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class MeasureStage:
    suite: str
    max_new_tokens: int
    scan: str  # the scan's folder (records.jsonl, summary.json, report.html)
    settings: list[MeasureSetting]
    testbed: bool  # a star-graph testbed (its repair has the teacher's branches)
    config: dict[str, Any]  # the doctor's config with every default filled for this model
    backend: str  # what generated: hf, vllm or openai
    dtype: str | None  # the weights' dtype as it ran (None: a server's, unknown)

    @property
    def loops(self) -> int:
        return sum(round((s.loop_rate or 0.0) * s.n) for s in self.settings)

    @property
    def loopiest(self) -> MeasureSetting:
        """The temperature with the highest loop rate (the lowest such temperature on a tie)."""
        return max(self.settings, key=lambda s: (s.loop_rate or 0.0, -s.temperature))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasureStage:
        settings = [MeasureSetting(**row) for row in data["settings"]]
        return cls(**{**data, "settings": settings})


@dataclass(frozen=True)
class GuardStage:
    temperature: float | None
    folder: str | None  # the comparison's folder (summary.json, report.html, runs/)
    entries: list[dict[str, Any]]  # as `loopfix compare` writes them
    skipped: str | None  # why the stage did not run

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuardStage:
        return cls(**data)


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

    def to_json(self) -> dict[str, object]:
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
            "loop_rate": result.loop_rate,
            "accuracy": result.accuracy,
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
class CombinedStage:
    """An accepted patch alone and with the recommended guard, at the guard stage's
    temperature on its prompts and seeds, each paired with that stage's unguarded base run:
    rows as `loopfix compare` writes its entries, with `rescued_samples` / `regressions` /
    `mcnemar_p` against the unpatched model without a guard."""

    temperature: float | None
    guard: str | None  # the recommended guard combined with the patch (None: none recommended)
    folder: str | None
    rows: list[dict[str, Any]]  # arm ("patch", "patch + GUARD"), the rates, the pairs
    skipped: str | None

    @classmethod
    def not_run(cls, reason: str) -> CombinedStage:
        return cls(None, None, None, [], reason)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CombinedStage:
        return cls(**data)


@dataclass(frozen=True)
class ConsistencyStage:
    """The cheap consistency checks (`loopfix consistency`), run on a few of the suite's
    prompts: each check's status, and where the full report is."""

    report: str | None  # the consistency report.html (consistency.json beside it)
    statuses: dict[str, str]  # check name -> pass / warn / fail / skipped
    skipped: str | None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConsistencyStage:
        return cls(**data)


@dataclass(frozen=True)
class Recommendation:
    """The setting that removes most loops without losing accuracy (see `recommend`)."""

    temperature: float
    guard: str
    loop_rate: float | None
    cut_rate: float | None
    accuracy: float | None
    baseline: dict[str, Any]  # the loopiest temperature without a guard, for comparison
    reference_accuracy: float | None  # the best accuracy of any temperature without a guard
    reason: str


@dataclass(frozen=True)
class StageCost:
    seconds: float
    peak_rss_mib: float


@dataclass(frozen=True)
class DoctorResult:
    model: str
    config: dict[str, Any]
    measure: MeasureStage
    guards: GuardStage
    repair: RepairStage
    combined: CombinedStage
    consistency: ConsistencyStage
    recommendation: Recommendation
    stages: dict[str, StageCost]
    versions: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"repair": self.repair.to_json()}
