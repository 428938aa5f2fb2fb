"""The records a consistency run produces: divergences, one result per check, the whole run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "CheckResult",
    "ConsistencyResult",
    "Divergence",
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
class CheckResult:
    name: str
    status: Status
    summary: str  # one line for a person
    numbers: dict[str, Any] = field(default_factory=dict)
    divergences: list[Divergence] = field(default_factory=list)
    reason: str | None = None  # why it was skipped
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ConsistencyResult:
    model: str
    suite: str
    prompts: int
    config: dict[str, Any]
    environment: dict[str, Any]  # versions, threads, CPU flags: what the numbers depend on
    checks: list[CheckResult]

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "suite": self.suite,
            "prompts": self.prompts,
            "config": self.config,
            "environment": self.environment,
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
