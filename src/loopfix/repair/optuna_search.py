"""`--search optuna`: a seeded multi-objective search over the grid's candidate space.

The space is the grid's: an edit structure (site in `config.sites`, a layer set from the
searched layers, k from `config.ks`) and a strength alpha, here continuous between the smallest
and the largest grid alpha. Each trial is scored by the same no-generation `Scorer` as the grid:
- objectives: maximise the selectivity proxy (d_prod - d_rep), minimise the KL on normal walks;
- constraints: KL <= `max_kl` and d_rep <= 0 (the grid's qualifying rule in `rank_candidates`);
- the touched-weights budget is applied before sampling, as the grid applies it before scoring:
  only structures within it are offered, so no trial is spent on an edit that could never ship.

The sampler is TPE in its multi-objective form, seeded with `config.search_seed`: with a few
tens of trials NSGA-II would not get past its random first generation. Trials run one after
another, so the same seed and the same scores give the same trials.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from loopfix.patch import EditRequest, build_patch
from loopfix.repair.candidates import Candidate, candidate_grid
from loopfix.repair.config import RepairConfig
from loopfix.repair.scoring import ProxyScore, Scorer

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["Scored", "optuna_search"]

Scored = tuple[Candidate, ProxyScore]


def _structure_key(candidate: Candidate) -> str:
    return f"{candidate.kind} L{','.join(map(str, candidate.layers))} k{candidate.k}"


def _with_alpha(structure: Candidate, alpha: float) -> Candidate:
    requests = tuple(EditRequest(r.site, r.direction, r.columns, alpha) for r in structure.requests)
    return Candidate(structure.kind, structure.layers, structure.k, alpha, requests)


def optuna_search(
    model: PreTrainedModel,
    directions: torch.Tensor,
    layers: Sequence[int],
    max_touched: float,
    scorer: Scorer,
    config: RepairConfig,
) -> tuple[list[Scored], list[Scored]]:
    """`config.trials` scored candidates, split into the feasible Pareto front (selectivity vs
    KL, within both constraints) and the rest, each in trial order."""
    import optuna  # RepairConfig(search="optuna") has checked that it is installed

    # Touched weights do not depend on alpha, so the grid at alpha 1 lists the admissible
    # structures (its columns are the top-k ones, as in every grid candidate).
    structures = {
        _structure_key(c): c
        for c in candidate_grid(
            model,
            directions,
            config.sites,
            layers,
            config.max_layers,
            config.ks,
            (1.0,),
            max_touched,
        )
    }
    if not structures:
        raise ValueError("no candidate edit fits the touched-weights budget")
    low, high = min(config.alphas), max(config.alphas)
    scored: dict[int, Scored] = {}

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        structure = structures[trial.suggest_categorical("edit", list(structures))]
        candidate = _with_alpha(structure, trial.suggest_float("alpha", low, high))
        score = scorer.score(build_patch(model, candidate.requests))
        trial.set_constraint("kl_over_budget", score.kl - config.max_kl)
        trial.set_constraint("d_rep_not_negative", score.d_rep)
        scored[trial.number] = (candidate, score)
        return score.selectivity, score.kl

    verbosity = optuna.logging.get_verbosity()
    # One INFO line per trial on stderr would bury the stage lines the repair prints.
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(
            directions=["maximize", "minimize"],
            sampler=optuna.samplers.TPESampler(seed=config.search_seed),
        )
        study.optimize(objective, n_trials=config.trials)
    finally:
        optuna.logging.set_verbosity(verbosity)
    front = {trial.number for trial in study.best_trials}
    return (
        [scored[number] for number in sorted(front)],
        [item for number, item in sorted(scored.items()) if number not in front],
    )
