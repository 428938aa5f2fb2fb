"""`multi-step`: "multi-view prediction heads: predict the next k steps in parallel, to avoid
local optima" (seed 001, 4.2).

Read as: training-only auxiliary heads, `HEADS` of them, predicting the tokens 2 and 3 ahead
from the final hidden state through the model's own output layer, each loss weighted
`lab.multistep.HEAD_WEIGHT`; they are dropped at inference, so the evaluated model is the plain
next-token model and only what the heads taught its weights differs. Their compute is in the
training FLOPs (the heads and their pass through the output layer counted). The claim holds if
the multi-step arm loops less at T = 0.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

HEADS = 2


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {
        "next token": base,
        f"+{HEADS} heads ahead": base.model_copy(update={"multi_step_heads": HEADS}),
    }


EXPERIMENT = Experiment(
    "multi-step", "training heads that predict 2-3 tokens ahead reduce loops", arms
)
