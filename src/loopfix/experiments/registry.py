"""The experiments `loopfix lab experiment NAME` runs, by name."""

from __future__ import annotations

from loopfix.experiments import (
    attention_decay,
    batch,
    curriculum,
    deloop_distill,
    hints,
    loop_data,
    margin,
    memory,
    multi_step,
    precision,
)
from loopfix.experiments.base import Experiment, ExperimentError

__all__ = ["EXPERIMENTS", "experiment_named"]

EXPERIMENTS: dict[str, Experiment] = {
    module.EXPERIMENT.name: module.EXPERIMENT
    for module in (
        loop_data,
        margin,
        batch,
        precision,
        curriculum,
        deloop_distill,
        attention_decay,
        hints,
        memory,
        multi_step,
    )
}


def experiment_named(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ExperimentError(
            f"NAME: unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}"
        )
    return EXPERIMENTS[name]
