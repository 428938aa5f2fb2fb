"""The typed summary of a guard comparison (`loopfix compare`): one `GuardEntry` per guard and
temperature, each its scan's `SettingSummary` and its `Paired` block against "none", and the
whole `CompareResult`.

`scan.guard_comparison` computes them; `report`, `doctor` and the CLI read them by attribute.
`to_json` writes the compare summary.json's shape: an entry's rates and pairs as flat keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from loopfix.summaries import BackendRan, FlatRecord, Paired, SettingSummary

__all__ = ["RANKING", "Answers", "CompareResult", "GuardEntry"]

RANKING = (
    "ranked per temperature by answers recovered against 'none': first every guard whose "
    "regressions significantly outnumber its rescues (McNemar exact p < 0.05) goes last; then "
    "the most net answers (rescues - regressions), then the fewest regressions, then the lowest "
    "cut rate, loop rate and mean length (tokens spent); without judged answers (no checker) "
    "rescues and regressions are all 0 and the cut rate decides"
)
RESCUES_AND_REGRESSIONS = (
    "paired against 'none' on (prompt, sample): a rescue is wrong there and right here, a "
    "regression the reverse"
)


@dataclass(frozen=True)
class Answers:
    """Answers against a reference: rescues (wrong there, right here), regressions (the
    reverse) and McNemar's exact p on them; p None where the answers were counted, not paired."""

    rescues: int
    regressions: int
    mcnemar_p: float | None

    @property
    def net(self) -> int:
        return self.rescues - self.regressions

    @classmethod
    def of(cls, paired: Paired) -> Answers:
        return cls(paired.rescues, paired.regressions, paired.mcnemar_p)


@dataclass(frozen=True)
class GuardEntry:
    """One guard at one temperature: its scan's summary, and its pairs against "none" (None
    when nothing could be paired: every prompt over-long)."""

    guard: str  # the guard spec, "none" included
    summary: SettingSummary
    paired: Paired | None
    rescues_performed: int  # rescues the guard performed, over all samples
    tokens_per_s: float | None
    run: str  # the scan directory of this guard and temperature
    rank: int | None = None  # 1 = first at its temperature by `answers_first`

    @property
    def temperature(self) -> float:
        return self.summary.temperature

    @property
    def answers(self) -> Answers | None:
        return None if self.paired is None else Answers.of(self.paired)

    def to_json(self) -> dict[str, JsonValue]:
        paired = self.paired
        return {
            "guard": self.guard,
            "temperature": self.temperature,
            "n": self.summary.n,
            "loop_rate": self.summary.loop_rate.value,
            "cut_rate": self.summary.cut_rate.value,
            "accuracy": self.summary.accuracy.value,
            "mean_length": self.summary.mean_length,
            "rescues": self.rescues_performed,
            "rescued_samples": None if paired is None else paired.rescues,
            "regressions": None if paired is None else paired.regressions,
            "mcnemar_p": None if paired is None else paired.mcnemar_p,
            "loops_removed": None if paired is None else paired.loops_removed,
            "loops_added": None if paired is None else paired.loops_added,
            "tokens_per_s": self.tokens_per_s,
            "run": self.run,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class CompareResult(FlatRecord):
    """What `run_compare` returns and writes to summary.json."""

    model: str
    suite: str
    config: Mapping[str, JsonValue]  # the comparison's identity (compare.json)
    backend: BackendRan  # what ran (vLLM's "auto" dtype resolved, say)
    temperatures: tuple[float, ...]
    entries: tuple[GuardEntry, ...]
    notes: tuple[str, ...]  # how the runs were set up (a cap fitted to the model)
    rescues_and_regressions: str = RESCUES_AND_REGRESSIONS
    ranking: str = RANKING

    def entry(self, guard: str, temperature: float) -> GuardEntry:
        return next(e for e in self.entries if e.guard == guard and e.temperature == temperature)
