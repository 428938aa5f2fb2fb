"""precision: greedy in float32 vs bfloat16 (a bfloat16 copy of the model), batch 1."""

from __future__ import annotations

import torch

from loopfix.consistency.result import CheckResult, divergence_status, divergence_summary
from loopfix.consistency.session import Session

__all__ = ["check_precision"]


def check_precision(session: Session) -> CheckResult:
    if session.model.dtype != torch.float32:
        reason = (
            f"the model is loaded in {session.model.dtype}; precision compares float32 with "
            "bfloat16"
        )
        return CheckResult("precision", "skipped", reason, reason=reason)
    reference = session.greedy_reference()
    low = session.hf_run(
        "greedy, batch 1, bfloat16",
        "precision",
        session.settings(),
        model=session.bfloat16_model(),
    )
    divergences = session.divergences(reference, low)
    positions = sorted(d.position for d in divergences)
    return CheckResult(
        "precision",
        divergence_status(divergences),
        "bfloat16 vs float32 greedy: " + divergence_summary(divergences, len(session.prompts)),
        {
            "diverging_prompts": len(divergences),
            "near_ties": sum(d.near_tie for d in divergences),
            "median_divergence_position": positions[len(positions) // 2] if positions else None,
            "loop_rate_float32": sum(reference.looping) / len(reference.looping),
            "loop_rate_bfloat16": sum(low.looping) / len(low.looping),
        },
        divergences,
    )
