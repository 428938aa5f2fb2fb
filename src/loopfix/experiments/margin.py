"""`margin`: "greedy picks the same child twice in a row 96.7% of the time (ideal <= 20%); a
training-time margin penalty on already-visited nodes brings that to 61%" (seed 001, 2.2).

Read as: the loss gains `MARGIN_WEIGHT` x the probability mass each walk prediction gives to
nodes the walk has already visited, the teacher's own next token excepted (`lab.train.
visited_mass`). "Same child twice in a row" is the consecutive-repeat rate at T = 0: of the
pairs of consecutive root decisions in a walk, the share that enter the same arm (1/k = 33% for
a uniform chooser on G(3,3); the seed's "ideal <= 20%" is 1/5).
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

MARGIN_WEIGHT = 1.0


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {
        "no margin": base,
        f"margin {MARGIN_WEIGHT:g}": base.model_copy(update={"margin_weight": MARGIN_WEIGHT}),
    }


EXPERIMENT = Experiment(
    "margin",
    "greedy repeats the same arm 96.7% of the time; a visited-node margin brings it to 61%",
    arms,
)
