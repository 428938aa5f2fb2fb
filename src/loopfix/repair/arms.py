"""The typed numbers of a repair's generation arms, as verify.json holds them.

An arm is one scan of a prompt set with the model as an arm runs it (base, the patched
candidate, a control, an activation-level ablation) at one temperature: `ArmResult`. Paired with
the base on the same prompts and sampler seed it gives a `BasePairing`. `TemperatureResult` is
every verified arm at one temperature with its pairing (`Verifier.full`); `ScreenRow` is a
screened candidate (`Verifier.screen`). Each has one writer, `to_json` (verify.json's shape), and
one reader, `from_json`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopfix.records import Sample
from loopfix.repair.candidates import EditShape
from loopfix.scan.stats import mcnemar_exact, student_t_quantile
from loopfix.summaries import FlatRecord, Paired, SettingSummary

__all__ = [
    "ArmResult",
    "BasePairing",
    "ComparedArm",
    "ControlInterval",
    "ScreenRow",
    "TemperatureResult",
]


@dataclass(frozen=True)
class ArmResult(FlatRecord):
    """One arm's scan at one temperature: the numbers of its `SettingSummary` the repair reads,
    how its samples finished and where its records are."""

    n: int
    loop_rate: float | None
    cut_rate: float | None
    accuracy: float | None  # over judged samples
    mean_length: float | None
    outcomes: dict[str, int]  # outcome class -> samples (`scan.outcomes`)
    finish_reasons: dict[str, int]
    records: str  # the arm's records.jsonl

    @classmethod
    def of(cls, summary: SettingSummary, samples: Iterable[Sample], records: Path) -> ArmResult:
        return cls(
            n=summary.n,
            loop_rate=summary.loop_rate.value,
            cut_rate=summary.cut_rate.value,
            accuracy=summary.accuracy.value,
            mean_length=summary.mean_length,
            outcomes=summary.outcomes,
            finish_reasons=dict(Counter(s.finish_reason for s in samples)),
            records=str(records),
        )

    @property
    def loops(self) -> float:
        """The loop rate of an arm that generated (an empty arm has none to compare)."""
        if self.loop_rate is None:
            raise ValueError(f"no generated sample in {self.records}")
        return self.loop_rate


@dataclass(frozen=True)
class BasePairing(FlatRecord):
    """An arm against the base on the same prompts and sampler seed: answers (a rescue is wrong
    in the base and right in the arm) and loops removed / added, each with its exact McNemar p,
    and what the arm's samples were where the base's looped."""

    pairs: int
    rescues: int
    regressions: int
    mcnemar_p: float
    loops_removed: int
    loops_added: int
    loop_mcnemar_p: float
    base_loops_went_to: dict[str, int]  # outcome class -> base loops paired with it

    @classmethod
    def of(cls, paired: Paired, base_loops_went_to: dict[str, int]) -> BasePairing:
        return cls(
            pairs=paired.pairs,
            rescues=paired.rescues,
            regressions=paired.regressions,
            mcnemar_p=paired.mcnemar_p,
            loops_removed=paired.loops_removed,
            loops_added=paired.loops_added,
            loop_mcnemar_p=mcnemar_exact(paired.loops_removed, paired.loops_added),
            base_loops_went_to=base_loops_went_to,
        )

    @property
    def net(self) -> int:
        """Answers recovered net: rescues minus regressions."""
        return self.rescues - self.regressions

    @property
    def loops_net(self) -> int:
        """Loops removed net: removed minus added."""
        return self.loops_removed - self.loops_added


@dataclass(frozen=True)
class ComparedArm:
    """An arm and its pairing with the base, written side by side in one object."""

    arm: ArmResult
    paired: BasePairing

    def to_json(self) -> dict[str, object]:
        return {**self.arm.to_json(), **self.paired.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ComparedArm:
        return cls(ArmResult.from_json(data), BasePairing.from_json(data))


@dataclass(frozen=True)
class ScreenRow:
    """A screened candidate on the screening prompts at the primary temperature, paired with
    the base there, and its plain-text perplexity ratio (None: not measured)."""

    shape: EditShape
    compared: ComparedArm
    perplexity_ratio: float | None

    def to_json(self) -> dict[str, object]:
        return {
            **self.shape.to_json(),
            **self.compared.to_json(),
            "perplexity_ratio": self.perplexity_ratio,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScreenRow:
        return cls(EditShape.from_json(data), ComparedArm.from_json(data), data["perplexity_ratio"])


@dataclass(frozen=True)
class ControlInterval:
    """The mean of the controls' loop-rate reductions with a Student-t interval over their
    seeds (`level` None for a single control, whose interval is its value)."""

    seeds: int
    mean: float
    low: float
    high: float
    level: float | None
    values: tuple[float, ...]

    @classmethod
    def of(cls, reductions: Sequence[float], level: float = 0.95) -> ControlInterval:
        count = len(reductions)
        mean = sum(reductions) / count
        if count == 1:
            return cls(1, mean, mean, mean, None, tuple(reductions))
        sd = (sum((r - mean) ** 2 for r in reductions) / (count - 1)) ** 0.5
        half = student_t_quantile(0.5 + level / 2, count - 1) * sd / count**0.5
        return cls(count, mean, mean - half, mean + half, level, tuple(reductions))

    def to_json(self) -> dict[str, object]:
        level = {} if self.level is None else {"level": self.level}
        return {
            "seeds": self.seeds,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            **level,
            "values": list(self.values),
        }


@dataclass(frozen=True)
class TemperatureResult:
    """Every verified arm at one temperature, each paired with the base: the patched
    candidate and its norm-matched random controls (the first is "random_control", the one the
    patch's model card names)."""

    base: ArmResult
    patched: ArmResult
    controls: tuple[ArmResult, ...]
    paired: BasePairing  # the patched arm against the base
    paired_controls: tuple[BasePairing, ...]  # each control against the base

    @classmethod
    def of(
        cls, base: ArmResult, patched: ComparedArm, controls: Sequence[ComparedArm]
    ) -> TemperatureResult:
        return cls(
            base,
            patched.arm,
            tuple(control.arm for control in controls),
            patched.paired,
            tuple(control.paired for control in controls),
        )

    @property
    def random_control(self) -> ArmResult:
        return self.controls[0]

    @property
    def arms(self) -> dict[str, ArmResult]:
        """The arms verify.json and the report name: base, patched and random_control."""
        return {"base": self.base, "patched": self.patched, "random_control": self.random_control}

    @property
    def control_reductions(self) -> list[float]:
        """Each control's loop-rate reduction from the base."""
        return [self.base.loops - control.loops for control in self.controls]

    def to_json(self) -> dict[str, object]:
        return {
            "base": self.base.to_json(),
            "patched": self.patched.to_json(),
            "random_control": self.random_control.to_json(),
            "controls": [control.to_json() for control in self.controls],
            "control_interval": ControlInterval.of(self.control_reductions).to_json(),
            "paired": {
                "patched": self.paired.to_json(),
                "random_control": self.paired_controls[0].to_json(),
            },
            "paired_controls": [paired.to_json() for paired in self.paired_controls],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TemperatureResult:
        return cls(
            base=ArmResult.from_json(data["base"]),
            patched=ArmResult.from_json(data["patched"]),
            controls=tuple(ArmResult.from_json(arm) for arm in data["controls"]),
            paired=BasePairing.from_json(data["paired"]["patched"]),
            paired_controls=tuple(BasePairing.from_json(p) for p in data["paired_controls"]),
        )
