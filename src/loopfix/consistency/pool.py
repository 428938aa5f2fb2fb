"""sampling_pool: how many tokens each sampling step really chooses from.

For every temperature x top-k x top-p x min-p, every prompt is generated (seed config.seed);
each step's distribution is recomputed teacher-forced and put through the sampler's own
warpers (`engine.sampling.sampler_warpers`, `model.generate`'s order). Per setting: the pool
(tokens left with probability > 0) and the effective number of candidates exp(entropy) of what
is left. A pool of one token is a deterministic step; where that is the case on more than
`pool_collapse_share` of steps the setting is flagged (greedy is always one and not listed).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from statistics import median
from typing import cast

import torch

from loopfix.consistency.divergence import step_logits
from loopfix.consistency.result import CheckResult
from loopfix.consistency.session import Session
from loopfix.engine.sampling import sampler_warpers
from loopfix.records import DecodeSettings

__all__ = ["PoolRow", "check_sampling_pool", "pool_sizes"]


@dataclass(frozen=True)
class PoolRow:
    """One sampler setting's pool over every generated step of every prompt."""

    temperature: float
    top_k: int
    top_p: float
    min_p: float
    steps: int
    median_pool: float
    mean_effective_candidates: float  # exp(entropy) of the warped distribution
    collapsed_share: float  # steps whose pool is one token
    loop_rate: float
    collapsed: bool  # collapsed_share above `pool_collapse_share`


def pool_sizes(logits: torch.Tensor, settings: DecodeSettings) -> tuple[list[int], list[float]]:
    """(pool size, exp(entropy) of the warped distribution) for each row of logits."""
    ids = torch.zeros((len(logits), 1), dtype=torch.long)  # the warpers ignore ids
    warped = sampler_warpers(settings)(cast(torch.LongTensor, ids), logits.clone())
    log_probs = torch.log_softmax(warped, dim=-1)
    probs = log_probs.exp()
    entropy = -(probs * log_probs).nan_to_num(0.0).sum(dim=-1)
    return (probs > 0).sum(dim=-1).tolist(), entropy.exp().tolist()


def _setting_row(session: Session, settings: DecodeSettings) -> PoolRow:
    label = (
        f"T={settings.temperature:g}, top-k {settings.top_k}, top-p {settings.top_p:g}, "
        f"min-p {settings.min_p:g}"
    )
    run = session.hf_run(label, "sampling", settings, max(session.config.batch_sizes))
    sizes: list[int] = []
    effective: list[float] = []
    for prompt, output in zip(session.prompts, run.outputs, strict=True):
        if output:
            pool, numbers = pool_sizes(step_logits(session.model, prompt.ids, output), settings)
            sizes += pool
            effective += numbers
    collapsed = sum(size == 1 for size in sizes) / len(sizes)
    return PoolRow(
        temperature=settings.temperature,
        top_k=settings.top_k,
        top_p=settings.top_p,
        min_p=settings.min_p,
        steps=len(sizes),
        median_pool=median(sizes),
        mean_effective_candidates=sum(effective) / len(effective),
        collapsed_share=collapsed,
        loop_rate=sum(run.looping) / len(run.looping),
        collapsed=collapsed > session.config.pool_collapse_share,
    )


def check_sampling_pool(session: Session) -> CheckResult:
    config = session.config
    grid = list(product(config.sampled_temperatures, config.top_k, config.top_p, config.min_p))
    if not grid:
        return CheckResult(
            "sampling_pool", "skipped", "no temperature above 0", reason="no temperature above 0"
        )
    rows = [
        _setting_row(session, session.settings(t, top_k=k, top_p=p, min_p=m)) for t, k, p, m in grid
    ]
    collapsed = [r for r in rows if r.collapsed]
    summary = (
        f"{len(collapsed)}/{len(rows)} settings sample from one token on more than "
        f"{config.pool_collapse_share:.0%} of steps"
    )
    if collapsed:
        worst = max(collapsed, key=lambda r: r.collapsed_share)
        summary += (
            f" (worst T={worst.temperature:g} top-k {worst.top_k} top-p {worst.top_p:g} "
            f"min-p {worst.min_p:g}: {worst.collapsed_share:.0%})"
        )
    return CheckResult(
        "sampling_pool",
        "warn" if collapsed else "pass",
        summary,
        {"collapse_threshold": config.pool_collapse_share, "settings": rows},
    )
