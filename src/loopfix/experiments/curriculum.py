"""`curriculum`: "first train with a strong constraint (forbid repetition entirely), then relax
it step by step, admitting controlled repetition, and finally fine-tune on the full task"
(seed 001, 4.1).

Read as: repetition is the teacher re-entering an arm it has already explored. The curriculum
arm splits the step budget into thirds (`STAGE_SHARE` each): stage 1 puts loss only on walks
that never re-enter an arm, stage 2 on every walk except the excursions that re-enter one (the
repeats stay in the context, untaught), stage 3 is the full task (`lab.curriculum`). The
baseline trains on the full task throughout; both see the same walks in the same order, one
learning-rate schedule over all steps. The claim holds if the curriculum loops less at T = 0.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

STAGE_SHARE = 1 / 3


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {
        "full task": base,
        "curriculum": base.model_copy(
            update={"curriculum_strict": STAGE_SHARE, "curriculum_relaxed": STAGE_SHARE}
        ),
    }


EXPERIMENT = Experiment(
    "curriculum",
    "a curriculum (no repetition, then relaxed, then the full task) reduces loops",
    arms,
)
