"""What `run_repair` returns and writes: `RepairResult`, whose one writer `to_json` is verify.json
and whose one reader is `from_verify`; report.md is rendered from it.

A repair either verified its chosen candidate (`Verified`: the decision, the control, the
activation-level check) or stopped at screening, when the screening's pick already failed (no
arm, no patch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopfix.repair.arms import ScreenRow, TemperatureResult
from loopfix.repair.candidates import EditShape, SearchRecord
from loopfix.repair.causal import CausalResult
from loopfix.repair.decide import Decision
from loopfix.repair.scoring import ProxyScore
from loopfix.repair.sources.description import Branches, branches_from_json
from loopfix.stages import StageClock
from loopfix.summaries import FlatRecord

__all__ = ["ARMS", "RepairResult", "ScoredEdit", "Timing", "Verified"]

ARMS = ("base", "patched", "random_control")


@dataclass(frozen=True)
class ScoredEdit:
    """A candidate or control edit as verify.json names it: its shape and, once scored, its
    exact proxy and the norm of its weight change."""

    shape: EditShape
    proxy: ProxyScore | None = None  # None: a repair stopped at screening scores nothing
    edit_norm: float | None = None

    def to_json(self, labelled: bool) -> dict[str, object]:
        """`labelled`: with the label (the chosen candidate's entry carries it)."""
        data: dict[str, object] = self.shape.to_json()
        if labelled:
            data["label"] = self.shape.label()
        if self.proxy is not None:
            data |= {"proxy": self.proxy.to_dict(), "edit_norm": self.edit_norm}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoredEdit:
        proxy = data.get("proxy")
        return cls(
            EditShape.from_json(data),
            None if proxy is None else ProxyScore.from_json(proxy),
            data.get("edit_norm"),
        )


@dataclass(frozen=True)
class Timing(FlatRecord):
    """Wall time and peak memory by stage (`StageClock`)."""

    seconds: dict[str, float]
    total_seconds: float
    peak_rss_mib: dict[str, float]

    @classmethod
    def of(cls, clock: StageClock) -> Timing:
        return cls.from_json(clock.to_dict())


@dataclass(frozen=True)
class Verified:
    """A verified candidate: the decision on its arms, its norm-matched control (the first
    seed's) with that control's KL, the activation-level check and the directions found."""

    decision: Decision
    control: ScoredEdit
    control_kl: float
    causal: CausalResult | None  # None: a neuron edit (no activation-level check)
    directions: Mapping[str, object]  # per layer and per edit site, as `find_directions` gives


@dataclass(frozen=True)
class RepairResult:
    model: str
    verdict: str
    temperature: float  # the primary verification temperature
    n: int  # prompts at it (verification; the screening's when stopped there)
    touched_fraction: float
    candidate: ScoredEdit  # the chosen edit
    source: Branches  # what the branches were built from (verify.json "branches")
    search: SearchRecord
    screening: tuple[ScreenRow, ...]
    config: Mapping[str, object]  # the `RepairConfig` as run, dumped
    verified: Verified | None  # None: stopped at screening (no arm, no patch)
    patch: Path | None  # patch.json (OUT, or OUT/rejected_candidate when rejected)
    timing: Timing
    folder: Path  # OUT: verify.json, report.md

    @property
    def accepted(self) -> bool:
        return self.verified is not None and self.verified.decision.accepted

    @property
    def decision(self) -> Decision | None:
        return None if self.verified is None else self.verified.decision

    @property
    def checks(self) -> dict[str, bool]:
        """Every acceptance check by name (none when stopped at screening)."""
        return {} if self.decision is None else self.decision.checks

    @property
    def kl(self) -> float | None:
        """nats/token on normal text (None: stopped before scoring)."""
        return None if self.decision is None else self.decision.kl

    @property
    def by_temperature(self) -> dict[str, TemperatureResult]:
        return {} if self.decision is None else self.decision.by_temperature

    @property
    def loop_rate(self) -> dict[str, float | None]:
        """Arm (`ARMS`) -> loop rate at `temperature` (None: not run)."""
        arms = None if self.decision is None else self.decision.primary.arms
        return {arm: None if arms is None else arms[arm].loop_rate for arm in ARMS}

    @property
    def accuracy(self) -> dict[str, float | None]:
        """Arm -> success rate at `temperature` (None: not run)."""
        arms = None if self.decision is None else self.decision.primary.arms
        return {arm: None if arms is None else arms[arm].accuracy for arm in ARMS}

    @property
    def verify_json(self) -> Path:
        return self.folder / "verify.json"

    @property
    def report(self) -> Path:
        return self.folder / "report.md"

    def to_json(self) -> dict[str, object]:
        """verify.json."""
        shared = {
            "branches": self.source.to_json(),
            "search": self.search.to_json(),
            "screening": [row.to_json() for row in self.screening],
            "config": self.config,
            "patch": None if self.patch is None else str(self.patch),
            "timing": self.timing.to_json(),
        }
        if self.verified is None:
            return {
                "model": self.model,
                "accepted": False,
                "stopped_at": "screen",
                "verdict": self.verdict,
                "checks": {},
                "temperature": self.temperature,
                "n": self.n,
                **dict.fromkeys(ARMS),
                "by_temperature": {},
                "answers": {},
                "routes_passed": [],
                "kl": None,
                "touched_fraction": self.touched_fraction,
                "candidate": self.candidate.to_json(labelled=True),
                **shared,
            }
        verified = self.verified
        return {
            **verified.decision.to_json(),
            "verdict": self.verdict,
            "control_kl": verified.control_kl,
            "candidate": self.candidate.to_json(labelled=True),
            "control": verified.control.to_json(labelled=False),
            "causal": None if verified.causal is None else verified.causal.to_json(),
            "model": self.model,
            "directions": verified.directions,
            **shared,
        }

    @classmethod
    def from_verify(cls, data: Mapping[str, Any], out: Path) -> RepairResult:
        """From the verify.json data that `run_repair` wrote into `out`."""
        verified = None
        if data["stopped_at"] is None:
            verified = Verified(
                decision=Decision.from_json(data),
                control=ScoredEdit.from_json(data["control"]),
                control_kl=data["control_kl"],
                causal=None if data["causal"] is None else CausalResult.from_json(data["causal"]),
                directions=data["directions"],
            )
        return cls(
            model=data["model"],
            verdict=data["verdict"],
            temperature=data["temperature"],
            n=data["n"],
            touched_fraction=data["touched_fraction"],
            candidate=ScoredEdit.from_json(data["candidate"]),
            source=branches_from_json(data["branches"]),
            search=SearchRecord.from_json(data["search"]),
            screening=tuple(ScreenRow.from_json(row) for row in data["screening"]),
            config=data["config"],
            verified=verified,
            patch=None if data["patch"] is None else Path(data["patch"]),
            timing=Timing.from_json(data["timing"]),
            folder=out,
        )
