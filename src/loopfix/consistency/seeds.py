"""seed_sensitivity: diversity and loop rate across seeds, per temperature.

Every prompt is generated with `config.seeds` run seeds at each temperature (batch 1). At T=0
the seed must not matter: any greedy output that changes with the seed fails the check, with
its divergence. At T>0, outputs that never change with the seed mean sampling had no effect:
a warning.
"""

from __future__ import annotations

from statistics import mean

from loopfix.consistency.diversity import distinct_n, mean_pairwise_distance
from loopfix.consistency.result import CheckResult, SeedRow, Status
from loopfix.consistency.session import Run, Session

__all__ = ["check_seed_sensitivity", "seed_runs"]


def seed_runs(session: Session, temperature: float) -> list[Run]:
    settings = session.settings(temperature)
    first = session.config.seed
    return [
        session.hf_run(
            f"T={temperature:g}, seed {s}", f"seed (T={temperature:g})", settings, seed=s
        )
        for s in range(first, first + session.config.seeds)
    ]


def _row(temperature: float, runs: list[Run]) -> SeedRow:
    per_prompt = list(zip(*(run.outputs for run in runs), strict=True))
    distinct = [[distinct_n(outputs, n) for outputs in per_prompt] for n in (1, 2)]
    loops = [flag for run in runs for flag in run.looping]
    return SeedRow(
        temperature=temperature,
        distinct_1=mean(d for d in distinct[0] if d is not None) if any(distinct[0]) else None,
        distinct_2=mean(d for d in distinct[1] if d is not None) if any(distinct[1]) else None,
        edit_distance=mean(mean_pairwise_distance(outputs) for outputs in per_prompt),
        seed_invariant_prompts=sum(len({tuple(o) for o in outputs}) == 1 for outputs in per_prompt),
        loop_rate=sum(loops) / len(loops),
    )


def check_seed_sensitivity(session: Session) -> CheckResult:
    rows: list[SeedRow] = []
    divergences = []
    for temperature in session.config.temperatures:
        runs = seed_runs(session, temperature)
        rows.append(_row(temperature, runs))
        if temperature == 0:
            divergences += [d for run in runs[1:] for d in session.divergences(runs[0], run)]
    prompts = len(session.prompts)
    frozen = [
        r.temperature for r in rows if r.temperature > 0 and r.seed_invariant_prompts == prompts
    ]
    status: Status = "fail" if divergences else "warn" if frozen else "pass"
    parts = [
        f"T={r.temperature:g}: edit distance {r.edit_distance:.2f}, loop rate {r.loop_rate:.0%}"
        for r in rows
    ]
    if divergences:
        parts.insert(
            0,
            f"greedy output changed with the seed on {len({d.prompt_id for d in divergences})} "
            "prompts",
        )
    if frozen:
        parts.insert(
            0, f"no output changed with the seed at T={', '.join(f'{t:g}' for t in frozen)}"
        )
    return CheckResult(
        "seed_sensitivity",
        status,
        "; ".join(parts),
        {"seeds": session.config.seeds, "prompts": prompts, "by_temperature": rows},
        divergences,
    )
