"""`attention-decay`: "a time-dependent attention mask: a decay factor on the attention weights
of the most recent n steps" (seed 001, 4.2).

Read as: every query's attention weights on its `DECAY_STEPS` previous positions are multiplied
by `DECAY_FACTOR` before renormalising (log(factor) added to their scores; `lab.attention`), in
every layer and head, in training and in generation. 5 positions is one whole excursion on
G(3,3) (up to 3 nodes, `back`, the root), so the model must look past the excursion it just
made to choose the next arm. The claim holds if the decayed model loops less at T = 0.
"""

from __future__ import annotations

from loopfix.experiments.base import Experiment
from loopfix.lab.config import TrainConfig

DECAY_STEPS = 5
DECAY_FACTOR = 0.5


def arms(base: TrainConfig) -> dict[str, TrainConfig]:
    decayed = {"attention_decay_steps": DECAY_STEPS, "attention_decay_factor": DECAY_FACTOR}
    return {
        "full attention": base,
        f"decay x{DECAY_FACTOR:g} on last {DECAY_STEPS}": base.model_copy(update=decayed),
    }


EXPERIMENT = Experiment(
    "attention-decay", "a decay on attention to the last n steps reduces loops", arms
)
