"""Why the same prompt gives different outputs: determinism, batch, seed, sampling pool,
context, precision, backend and loop-stability checks on the same prompts."""

from loopfix.consistency.config import (
    CHEAP_CHECKS,
    CHECK_NAMES,
    ConsistencyConfig,
    ConsistencyError,
)
from loopfix.consistency.report import render_consistency, write_consistency
from loopfix.consistency.result import CheckResult, ConsistencyResult, Divergence, TokenProbability
from loopfix.consistency.run import run_consistency

__all__ = [
    "CHEAP_CHECKS",
    "CHECK_NAMES",
    "CheckResult",
    "ConsistencyConfig",
    "ConsistencyError",
    "ConsistencyResult",
    "Divergence",
    "TokenProbability",
    "render_consistency",
    "run_consistency",
    "write_consistency",
]
