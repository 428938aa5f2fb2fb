"""The doctor's typed results: one frozen dataclass per stage, and the whole run.

`to_dict` is what `summary.json` holds; `from_dict` reads a stage back from its cache file, so
a rerun continues after the last finished stage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

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
    accepted: bool | None
    verdict: str | None
    verify: str | None  # path of the repair's verify.json
    folder: str | None
    temperature: float | None
    n: int | None
    loop_rate: dict[str, float | None]  # base / patched / random_control
    accuracy: dict[str, float | None]
    kl: float | None
    touched_fraction: float | None
    patch: str | None
    skipped: str | None

    @classmethod
    def not_run(cls, reason: str) -> RepairStage:
        return cls(None, None, None, None, None, None, {}, {}, None, None, None, reason)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepairStage:
        return cls(**data)


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
        return asdict(self)
