"""loop_stability: which factor makes a prompt loop in some runs and not in others.

Runs are grouped by the one factor they vary, always against the same prompts: seeds (per
temperature above 0), greedy batch size and composition, and, when those checks ran in this
session, thread count, precision and backend (each with the float32 batch-1 greedy reference).
A prompt whose loop verdict differs inside a group "flips" on that factor; the divergence
between its first looping and first non-looping run shows the token where the loop was decided.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopfix.consistency.batch import batch_runs
from loopfix.consistency.result import CheckResult, Divergence
from loopfix.consistency.seeds import seed_runs
from loopfix.consistency.session import Run, Session

__all__ = ["UnstablePrompt", "check_loop_stability", "factor_groups"]


@dataclass(frozen=True)
class UnstablePrompt:
    """A prompt whose loop verdict flips on `factor`: the runs (labels) on each side."""

    prompt_id: str
    factor: str
    looping: list[str]
    not_looping: list[str]


def factor_groups(session: Session) -> dict[str, list[Run]]:
    reference = session.greedy_reference()
    groups = {f"seed (T={t:g})": seed_runs(session, t) for t in session.config.sampled_temperatures}
    groups["batch"] = [reference, *batch_runs(session)]
    for factor in ("threads", "precision", "backend"):
        present = [run for run in session.runs.values() if run.factor == factor]
        if present:
            groups[factor] = [reference, *present]
    return groups


def check_loop_stability(session: Session) -> CheckResult:
    groups = factor_groups(session)
    flips: dict[str, int] = {}
    unstable: list[UnstablePrompt] = []
    divergences: list[Divergence] = []
    for factor, runs in groups.items():
        flips[factor] = 0
        for position, prompt in enumerate(session.prompts):
            looping = [run for run in runs if run.looping[position]]
            steady = [run for run in runs if not run.looping[position]]
            if not looping or not steady:
                continue
            flips[factor] += 1
            unstable.append(
                UnstablePrompt(
                    prompt.id,
                    factor,
                    looping=[run.label for run in looping],
                    not_looping=[run.label for run in steady],
                )
            )
            found = session.divergence(position, steady[0], looping[0])
            if found is not None:
                divergences.append(found)
    every = [run for runs in groups.values() for run in runs]
    loops_somewhere = sum(any(r.looping[p] for r in every) for p in range(len(session.prompts)))
    flipping = sorted((f for f in flips if flips[f]), key=lambda f: -flips[f])
    summary = (
        ", ".join(f"{flips[f]} prompts flip on {f}" for f in flipping)
        if flipping
        else f"no prompt's loop verdict depends on {', '.join(groups)}"
    )
    return CheckResult(
        "loop_stability",
        "warn" if flipping else "pass",
        summary + f" ({loops_somewhere}/{len(session.prompts)} prompts loop in some run)",
        {
            "factors": {factor: [run.label for run in runs] for factor, runs in groups.items()},
            "flips_by_factor": flips,
            "prompts_looping_in_some_run": loops_somewhere,
            "unstable_prompts": unstable,
        },
        divergences,
    )
