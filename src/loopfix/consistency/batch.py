"""batch_invariance: greedy outputs do not depend on the batch size, on padding or on which
prompts share a batch.

Each configured batch size runs the prompts in their order; one more run takes the largest
batch with the prompts reversed, so every prompt gets other batch mates and other padding.
Everything is compared with greedy at batch 1 (the reference: no padding, no batch mates).
"""

from __future__ import annotations

from loopfix.consistency.result import CheckResult, divergence_status, divergence_summary
from loopfix.consistency.session import Run, Session

__all__ = ["batch_runs", "check_batch_invariance"]


def batch_runs(session: Session) -> list[Run]:
    """The greedy runs compared with the reference: each other batch size, then the largest
    with the prompts reversed."""
    settings = session.settings()
    sizes = [size for size in session.config.batch_sizes if size != 1] or [1]
    runs = [session.hf_run(f"greedy, batch {b}", "batch", settings, b) for b in sizes]
    reverse = list(range(len(session.prompts)))[::-1]
    label = f"greedy, batch {sizes[-1]}, prompts reversed"
    return [*runs, session.hf_run(label, "batch", settings, sizes[-1], order=reverse)]


def check_batch_invariance(session: Session) -> CheckResult:
    reference = session.greedy_reference()
    runs = batch_runs(session)
    sizes = sorted({1, *session.config.batch_sizes})
    divergences = []
    numbers: dict[str, int] = {}
    for run in runs:
        found = session.divergences(reference, run)
        numbers[run.label] = len(found)
        divergences += found
    return CheckResult(
        "batch_invariance",
        divergence_status(divergences),
        f"{len(runs)} runs vs {reference.label}: "
        + divergence_summary(divergences, len(session.prompts) * len(runs)).replace(
            "prompts", "prompt x run pairs"
        ),
        {
            "reference": reference.label,
            "rows_in_flight": [min(b, len(session.prompts)) for b in sizes],
            "diverging_prompts": numbers,
            "near_ties": sum(d.near_tie for d in divergences),
        },
        divergences,
    )
