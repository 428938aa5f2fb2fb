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
    "HARDER_GRAPH",
    "SIZE_AXIS",
    "every_experiment",
    "experiment_named",
]

ALL = "all"  # `lab experiment all`: every experiment in one run
SIZE_AXIS = ("loop-data", "margin")  # the claims that depend on difficulty
HARDER_GRAPH = (5, 5)  # where `all` runs them too

# In the order `all` runs them: precision last, since fp16 and bf16 are emulated on a CPU and
# its reduced-precision arms train many times slower than the others (measured in
# docs/training.md).
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
    """What `lab experiment all` runs, by folder name: every experiment on the settings' graph,
    and the size-axis ones on the harder graph as well (`NAME-g5x5`)."""
    runs = {name: settings.model_copy(update={"name": name}) for name in EXPERIMENTS}
    if tuple(settings.graph) != HARDER_GRAPH:
        arms, depth = HARDER_GRAPH
        for name in SIZE_AXIS:
            runs[f"{name}-g{arms}x{depth}"] = settings.model_copy(
                update={"name": name, "graph": [arms, depth]}
            )
    return runs
