"""determinism: the same settings and seed twice give the same output, greedy and sampled; and
greedy does not change with the number of CPU threads (which changes how matmuls reduce)."""

from __future__ import annotations

import torch

from loopfix.consistency.result import CheckResult, divergence_status, divergence_summary
from loopfix.consistency.session import Run, Session

__all__ = ["check_determinism", "thread_run"]


def thread_run(session: Session) -> Run:
    """Greedy at batch 1 with another torch thread count (2 when running on 1, else 1)."""
    threads = torch.get_num_threads()
    other = 2 if threads == 1 else 1
    torch.set_num_threads(other)
    try:
        settings = session.settings()
        return session.hf_run(f"greedy, batch 1, {other} threads", "threads", settings)
    finally:
        torch.set_num_threads(threads)


def check_determinism(session: Session) -> CheckResult:
    """Each setting generated twice in two separate engine runs (batch 1, seed config.seed):
    greedy, and the highest configured temperature; then (compare_threads) greedy with another
    thread count."""
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
    labels = [f"T={t:g} twice" for t in temperatures]
    if session.config.compare_threads:
        threads = thread_run(session)
        found = session.divergences(session.greedy_reference(), threads)
        numbers["diverging_prompts_threads"] = len(found)
        divergences += found
        labels.append(f"{threads.label} vs batch 1")
    pairs = len(session.prompts) * len(labels)
    return CheckResult(
        "determinism",
        divergence_status(divergences),
        f"{', '.join(labels)}: "
        + divergence_summary(divergences, pairs).replace("prompts", "prompt x run pairs"),
        {
            "temperatures": temperatures,
            "prompts": len(session.prompts),
            "torch_threads": torch.get_num_threads(),
            **numbers,
        },
        divergences,
    )
