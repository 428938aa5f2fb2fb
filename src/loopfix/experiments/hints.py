"""`hints`: "at the positions where the student's loss is especially high, insert intermediate
hint labels into the training data (e.g. 'apply the law of cosines here' at the key turning
step); this markedly lowers the learning difficulty of the action" (seed 001, 4.1).

Read as (`lab.hints`): the first quarter of the steps trains without hints; on that phase's
last batch the student's mean loss is measured per walk position kind (start, arm choice, in
arm, return) and the highest chosen (recorded in `training.json`); from then on every walk
carries a hint before each token of that kind: `? target ... first :`, the target's arm read
backwards, the intermediate one-edge lookups of the hard step. The hints carry loss, so the
student learns to write them; the evaluation gives none: the model writes its own, and its walk
is scored with them taken out (they count toward the 48-token cap, and the loop detector reads
the text as written). The flywheel probe feeds hint-free walks, which a hinted student never
saw, so its flywheel is not comparable with the baseline's. The claim holds if the hinted
student loops less at T = 0 (and, "lower difficulty", succeeds more).
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {"no hints": base, "hints": base.model_copy(update={"hints": True})}


EXPERIMENT = Experiment("hints", "hints at the student's highest-loss positions reduce loops", arms)
