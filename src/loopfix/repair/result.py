"""What `run_repair` returns: the decision, where it was written, and the numbers behind it
(verify.json holds everything; these are the fields a caller reads)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ARMS", "RepairResult"]

ARMS = ("base", "patched", "random_control")


@dataclass(frozen=True)
class RepairResult:
    model: str
    accepted: bool
    verdict: str
    checks: dict[str, bool]  # every acceptance check by name
    candidate: dict[str, Any]  # the chosen edit: site, layers, k, alpha, proxy scores, label
    source: dict[str, Any]  # the source's description and counts (verify.json "branches")
    temperature: float  # the primary verification temperature
    n: int  # verification prompts at it
    loop_rate: dict[str, float | None]  # arm (`ARMS`) -> loop rate at `temperature`
    accuracy: dict[str, float | None]  # arm -> success rate at `temperature`
    by_temperature: dict[str, dict[str, Any]]  # every arm and its pairing at each temperature
    answers: dict[str, dict[str, Any]]  # temperature -> rescues, regressions, p, nets
    routes_passed: list[str]  # "answers" / "loops": the acceptance routes met
    stopped_at: str | None  # "screen": stopped before verification (no arm, no patch)
    kl: float | None  # nats/token on normal text (None: stopped before scoring)
    touched_fraction: float
    seconds: dict[str, float]  # stage -> wall time
    peak_rss_mib: dict[str, float]  # stage -> peak memory
    patch: Path | None  # patch.json (OUT, or OUT/rejected_candidate when rejected)
    verify_json: Path
    report: Path

    @classmethod
    def from_verify(cls, data: dict[str, Any], out: Path) -> RepairResult:
        """From the verify.json data that `run_repair` writes into `out`."""
        return cls(
            model=data["model"],
            accepted=data["accepted"],
            verdict=data["verdict"],
            checks=data["checks"],
            candidate=data["candidate"],
            source=data["branches"],
            temperature=data["temperature"],
            n=data["n"],
            loop_rate={arm: _rate(data[arm], "loop_rate") for arm in ARMS},
            accuracy={arm: _rate(data[arm], "accuracy") for arm in ARMS},
            by_temperature=data["by_temperature"],
            answers=data["answers"],
            routes_passed=data["routes_passed"],
            stopped_at=data["stopped_at"],
            kl=data["kl"],
            touched_fraction=data["touched_fraction"],
            seconds=data["timing"]["seconds"],
            peak_rss_mib=data["timing"]["peak_rss_mib"],
            patch=None if data["patch"] is None else Path(data["patch"]),
            verify_json=out / "verify.json",
            report=out / "report.md",
        )


def _rate(arm: dict[str, Any] | None, name: str) -> float | None:
    """An arm's rate; None for an arm a repair stopped at screening never ran."""
    return None if arm is None else arm[name]
