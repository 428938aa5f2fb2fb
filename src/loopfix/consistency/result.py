"""The records a consistency run produces: divergences, one result per check, the whole run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal

from loopfix.consistency.config import ConsistencyConfig

__all__ = [
    "CheckResult",
    "ConsistencyResult",
    "Divergence",
    "Environment",
    "SeedRow",
    "Status",
    "TokenProbability",
    "divergence_status",
    "divergence_summary",
]

Status = Literal["pass", "warn", "fail", "skipped"]


@dataclass(frozen=True)
class TokenProbability:
    id: int
    text: str
    probability: float


@dataclass(frozen=True)
class Divergence:
    """The first position where two outputs of one prompt differ.

    a / b: labels of the two runs (a is the reference); position: index in the generated
    tokens; token_a / token_b: what each run emitted there (None: that output had ended);
    top: the reference's top-5 next tokens there, from a teacher-forced float32 forward pass
    over prompt + common prefix (temperature 1, no truncation); gap: top-1 minus top-2
    probability; near_tie: gap < the configured threshold.
    """

    prompt_id: str
    a: str
    b: str
    position: int
    token_a: TokenProbability | None
    token_b: TokenProbability | None
    top: list[TokenProbability]
    gap: float
    near_tie: bool


@dataclass(frozen=True)
class SeedRow:
    """seed_sensitivity at one temperature: diversity and loop rate across the seeds."""

    temperature: float
    distinct_1: float | None  # None: no prompt has an output of that many tokens
    distinct_2: float | None
    edit_distance: float
    seed_invariant_prompts: int
    loop_rate: float


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    summary: str  # one line for a person
    # Each check's own numbers (values JSON or records such as SeedRow, which `to_dict`
    # writes as objects), shown whole in the report.
    numbers: Mapping[str, object] = field(default_factory=dict)
    divergences: list[Divergence] = field(default_factory=list)
    reason: str | None = None  # why it was skipped
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Environment:
    """Versions, threads, CPU flags: what the numbers depend on."""

    loopfix: str
    torch: str
    transformers: str
    python: str
    machine: str
    cpu_flags: list[str]
    torch_threads: int
    device: str | None  # None: no model was loaded
    dtype: str | None


@dataclass(frozen=True)
class ConsistencyResult:
    model: str
    suite: str
    prompts: int
    config: ConsistencyConfig
    environment: Environment
    checks: list[CheckResult]

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict[str, object]:
        """consistency.json."""
        return {
            "model": self.model,
            "suite": self.suite,
            "prompts": self.prompts,
            "config": self.config.model_dump(mode="json"),
            "environment": asdict(self.environment),
            "checks": [check.to_dict() for check in self.checks],
        }


def divergence_status(divergences: list[Divergence]) -> Status:
    """pass: no divergence; warn: every divergence is a near-tie; fail: some is not."""
    if not divergences:
        return "pass"
    return "warn" if all(d.near_tie for d in divergences) else "fail"


def divergence_summary(divergences: list[Divergence], prompts: int) -> str:
    if not divergences:
        return f"identical on all {prompts} prompts"
    ties = sum(d.near_tie for d in divergences)
    return f"{len(divergences)}/{prompts} prompts diverge ({ties} at a near-tie)"
