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
from loopfix.experiments.config import ExperimentConfig

__all__ = [
    "ALL",
    "EXPERIMENTS",
    "every_experiment",
    "experiment_named",
]

ALL = "all"  # `lab experiment all`: every experiment in one run

# In the order `all` runs them.
EXPERIMENTS: dict[str, Experiment] = {
    module.EXPERIMENT.name: module.EXPERIMENT
    for module in (
        loop_data,
        margin,
        batch,
        deloop_distill,
        curriculum,
        memory,
        multi_step,
        hints,
        attention_decay,
        precision,
    )
}


def experiment_named(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ExperimentError(
            f"NAME: unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}"
        )
    return EXPERIMENTS[name]


def every_experiment(settings: ExperimentConfig) -> dict[str, ExperimentConfig]:
    """What `lab experiment all` runs, by folder name: every experiment on the settings' graph
    (the harder graph is a run of its own: `--graph 5,5`)."""
    return {name: settings.model_copy(update={"name": name}) for name in EXPERIMENTS}
