"""Training experiments on the star-graph testbed (`loopfix lab experiment NAME`): each tests one
claimed cause or remedy of loops by training a baseline and its variants on the same data for
several seeds and evaluating them with the testbed's one evaluation (docs/training.md)."""

from loopfix.experiments.base import Experiment, ExperimentError
from loopfix.experiments.config import ExperimentConfig
from loopfix.experiments.registry import ALL, EXPERIMENTS, every_experiment, experiment_named
from loopfix.experiments.run import run_experiment, run_experiments, training_seconds

__all__ = [
    "ALL",
    "EXPERIMENTS",
    "Experiment",
    "ExperimentConfig",
    "ExperimentError",
    "every_experiment",
    "experiment_named",
    "run_experiment",
    "run_experiments",
    "training_seconds",
]
