"""`deloop-distill`: "first de-loop the teacher's outputs, [annotate key decisions,] then train
the student on the processed data" (seed 001, 4.1).

Read as: a teacher that loops in the bundled `stargraph` testbed's share of its walks (2%, a
verbatim repeated excursion to the cap), distilled raw (the baseline), after `loopfix clean
--mode drop` and after `--mode cut` (each walk rendered as text and judged by `detect_text`,
as `clean` judges a dataset; `lab.deloop`), and a teacher that never loops (0%: what perfect
cleaning would give). The annotations at key decisions are the `hints` claim, not read here.
`training.json`'s `delooped_walk_share` says how many walks the de-looping caught.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import VARIANTS, TrainConfig


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    raw = base.model_copy(update={"loop_fraction": VARIANTS["stargraph"].loop_fraction})
    return {
        "raw": raw,
        "clean drop": raw.model_copy(update={"deloop": "drop"}),
        "clean cut": raw.model_copy(update={"deloop": "cut"}),
        "teacher 0%": base,
    }


EXPERIMENT = Experiment(
    "deloop-distill",
    "distilling de-looped teacher walks (loopfix clean) reduces the student's loops",
    arms,
)
