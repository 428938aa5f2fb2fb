"""`precision`: "pure FP16 training amplifies the temporally correlated error by about 40%
against AMP with fp32 softmax" (seed 001, 5.3).

Read as: four arms on the same stream: `fp16-amp` (the baseline: fp16 autocast over fp32
weights with loss scaling, the classic AMP), `fp16` (weights, gradients, AdamW state and
activations in fp16, no loss scaling; AdamW's eps raised to 1e-4, since 1e-8 is 0 in fp16 and
the first step divides by it), `bf16-amp` and `fp32`. Every reduced-precision arm trains with
transformers' eager attention, whose softmax is fp32 in all of them: its Llama has no fp16
softmax, so pure fp16 here differs from AMP everywhere but there. Models are evaluated in fp32.
The temporally correlated error is the consecutive-repeat rate at T = 0 (the seed's own measure
of it, section 2.2); the claim holds if `fp16`'s is about 1.4x the baseline's.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

ARMS = ("fp16-amp", "fp16", "bf16-amp", "fp32")


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    return {name: base.model_copy(update={"precision": name}) for name in ARMS}


EXPERIMENT = Experiment(
    "precision", "pure fp16 training raises the correlated error ~40% over AMP", arms
)
