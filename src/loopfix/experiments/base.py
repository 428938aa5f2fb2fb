"""What an experiment is: a claim and the training arms that test it, from one base recipe."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loopfix.errors import LoopfixError
from loopfix.lab.config import VARIANTS, TrainConfig

__all__ = ["Experiment", "ExperimentError", "base_recipe"]


class ExperimentError(LoopfixError):
    """An experiment that cannot run as asked (unknown name, another experiment in OUT)."""


@dataclass(frozen=True)
class Experiment:
    """`arms(base)`: arm name -> training config, the baseline first; every arm trains on the
    same seeded data stream (lab.train), so arms differ only in what the claim names."""

    name: str
    claim: str
    arms: Callable[[TrainConfig], dict[str, TrainConfig]]


# Two departures from the bundled testbeds' recipe, so that every student leaves the plateau of
# guessed moves early in a run (docs/training.md, "How long a full run takes"): weights start
# wider than transformers' default (with it, whether and when a student leaves depends on its
# seed), and the learning rate holds at its peak until the decay share (a cosine over the whole
# run lowers it before the slower seeds have left).
STUDENT_INIT_STD = 0.08
STUDENT_DECAY_SHARE = 0.25


def base_recipe(steps: int, threads: int, graph: tuple[int, int] = (3, 3)) -> TrainConfig:
    """The recipe every experiment varies: the bundled `stargraph-clean` testbed's (a teacher
    that never loops, so a loop is the student's own) with a wider initialisation and a later
    decay, at the experiment's step count and on its graph shape G(k, d)."""
    arms, depth = graph
    update = {
        "steps": steps,
        "threads": threads,
        "arms": arms,
        "depth": depth,
        "init_std": STUDENT_INIT_STD,
        "decay_share": STUDENT_DECAY_SHARE,
    }
    return VARIANTS["stargraph-clean"].model_copy(update=update)
