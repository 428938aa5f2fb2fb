"""`batch`: "batch sizes above 64 make loops worse; use 16-32 for fine-tuning" (seed 001, 5.4).

Read as: batch 16, 32, 64, 128 and 256 walks at a matched budget of walks (the baseline's
steps x 64), so a batch of b trains steps x 64 / b steps with its warm-up scaled alike and the
same peak learning rate; the walks come from one stream in one order, so every arm sees the
same walks, only grouped differently. The baseline is 64, the testbed's recipe.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

BATCH_SIZES = (64, 16, 32, 128, 256)


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    walks = base.steps * base.batch_size
    return {
        f"batch {size}": base.model_copy(
            update={
                "batch_size": size,
                "steps": max(1, walks // size),
                "warmup_steps": base.warmup_steps * base.batch_size // size,
            }
        )
        for size in BATCH_SIZES
    }


EXPERIMENT = Experiment("batch", "batch sizes above 64 make loops worse; 16-32 is better", arms)
