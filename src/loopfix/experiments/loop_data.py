"""`loop-data`: "injecting 0.1% deterministic looping sequences into training triples the loop
count at low temperature and drives accuracy near zero" (seed 001, section 3).

Read as: the same clean teacher stream, with 0, 0.1%, 1% or 2% of training walks replaced by
a looping walk (`stargraph.looping_teacher_walk`: a teacher walk cut at a backtrack and its last
excursion repeated verbatim to the cap, no EOS). The claim holds if the 0.1% arm's loop rate at
T = 0 is about 3x the 0% arm's and its success near zero.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

FRACTIONS = {"0%": 0.0, "0.1%": 0.001, "1%": 0.01, "2%": 0.02}


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {
        name: base.model_copy(update={"loop_fraction": fraction})
        for name, fraction in FRACTIONS.items()
    }


EXPERIMENT = Experiment(
    "loop-data",
    "0.1% looping training walks triple the loops at low temperature, accuracy near zero",
    arms,
)
