"""determinism: the same settings and seed twice give the same output, greedy and sampled."""

from __future__ import annotations

from loopfix.consistency.result import CheckResult, divergence_status, divergence_summary
from loopfix.consistency.session import Session

__all__ = ["check_determinism"]


def check_determinism(session: Session) -> CheckResult:
    """Each setting generated twice in two separate engine runs (batch 1, seed config.seed):
    greedy, and the highest configured temperature."""
    temperatures = [0.0, *session.config.sampled_temperatures[-1:]]
    divergences = []
    numbers: dict[str, int] = {}
    for temperature in temperatures:
        settings = session.settings(temperature)
        first, second = (
            session.hf_run(
                f"T={temperature:g}, seed {session.config.seed}, {which}", "repeat", settings
            )
            for which in ("first", "second")
        )
        found = session.divergences(first, second)
        numbers[f"diverging_prompts_t{temperature:g}"] = len(found)
        divergences += found
    return CheckResult(
        "determinism",
        divergence_status(divergences),
        f"T={' and T='.join(f'{t:g}' for t in temperatures)} twice: "
        + divergence_summary(divergences, len(session.prompts) * len(temperatures)).replace(
            "prompts", "prompt x temperature pairs"
        ),
        {"temperatures": temperatures, "prompts": len(session.prompts), **numbers},
        divergences,
    )
