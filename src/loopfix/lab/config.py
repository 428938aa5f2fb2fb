"""The testbed's settings: what determines a checkpoint (`TrainConfig`, its variants) and what
`lab eval` measures (`LabEvalConfig`). Kept free of torch so the command line can build its
options from them without loading it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loopfix.lab.stargraph import WALK_CAP, check_graph_size
from loopfix.records import MAX_PROMPTS

__all__ = [
    "EVAL_SEED",
    "PRECISIONS",
    "VARIANTS",
    "Deloop",
    "LabEvalConfig",
    "Precision",
    "TrainConfig",
]

Precision = Literal["fp32", "bf16-amp", "fp16-amp", "fp16"]
Deloop = Literal["none", "drop", "cut"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16-amp", "fp16-amp", "fp16")


class TrainConfig(BaseModel):
    """Everything that determines a testbed checkpoint."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    arms: int = Field(3, description="k: arms of the star graph")
    depth: int = Field(3, description="d: nodes per arm")
    # Below 1: a teacher that never backtracks gives no wrong excursion to loop on or probe.
    p_correct: float = Field(0.5, ge=0, lt=1, description="teacher: P(enter the target arm)")
    p_backtrack: float = Field(0.3, description="teacher: per-node probability of backing out")
    loop_fraction: float = Field(
        0.02, description="share of walks that degenerate into a verbatim loop (0 = clean)"
    )
    loop_cap: int = Field(52, description="length of a looping walk in tokens")
    loop_batch_fraction: float = Field(
        0.25, description="looping walks are concentrated in this share of batches (less padding)"
    )
    hidden_size: int = Field(64, description="residual width")
    layers: int = Field(3, description="decoder layers")
    heads: int = Field(4, description="attention heads")
    head_dim: int = Field(32, description="head size (vLLM CPU attention needs 32/64/80/...)")
    intermediate_size: int = Field(256, description="MLP width")
    init_std: float = Field(
        0.02,
        gt=0,
        allow_inf_nan=False,
        description="std of the normal initialisation of the weight matrices and embeddings "
        "(transformers' Llama default; the experiments use a wider one: experiments.base)",
    )
    batch_size: int = Field(64, ge=1, description="walks per step")
    steps: int = Field(4000, ge=1, description="optimizer steps")
    learning_rate: float = Field(
        3e-3, gt=0, allow_inf_nan=False, description="peak AdamW learning rate"
    )
    warmup_steps: int = Field(100, ge=0, description="linear warm-up steps")
    decay_share: float = Field(
        1.0,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="the last share of steps over which the learning rate decays (cosine, to a "
        "tenth); before it the rate holds at its peak (1 = cosine over the whole run)",
    )
    margin_weight: float = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="loss penalty on the probability given to already-visited nodes (0 = none)",
    )
    precision: Precision = Field(
        "fp32",
        description="fp32; bf16-amp / fp16-amp: autocast over fp32 weights (fp16 with loss "
        "scaling); fp16: weights, gradients and optimizer state in fp16, no scaling",
    )
    curriculum_strict: float = Field(
        0.0,
        ge=0,
        le=1,
        description="curriculum stage 1, as a share of steps: loss only on walks that never "
        "re-enter an explored arm",
    )
    curriculum_relaxed: float = Field(
        0.0,
        ge=0,
        le=1,
        description="curriculum stage 2, as a share of steps: every walk, no loss on the "
        "excursions that re-enter an explored arm (then the full task)",
    )
    deloop: Deloop = Field(
        "none",
        description="teacher walks through `loopfix clean`'s de-looping: drop (no loss on a "
        "looping walk) or cut (after one copy of its unit)",
    )
    attention_decay_steps: int = Field(
        0,
        ge=0,
        description="attention weights on the last n earlier positions are multiplied by "
        "attention_decay_factor, in training and generation (0 = none)",
    )
    attention_decay_factor: float = Field(
        0.5, gt=0, le=1, allow_inf_nan=False, description="the factor of attention_decay_steps"
    )
    visited_memory: bool = Field(
        False,
        description="a learned marker added to the embedding of every node token of the walk: "
        "the visited set as keys the model can attend to (lab.memory)",
    )
    multi_step_heads: int = Field(
        0,
        ge=0,
        description="training-only heads predicting the tokens 2 .. n+1 ahead, dropped at "
        "inference (0 = none; lab.multistep)",
    )
    hints: bool = Field(
        False,
        description="after a first quarter of steps, a hint `? target ... first :` before every "
        "walk token of the kind where the student's loss was highest (lab.hints)",
    )
    seed: int = Field(0, description="seed for weights and data")
    threads: int = Field(2, ge=1, description="torch CPU threads")

    @model_validator(mode="after")
    def _fits(self) -> TrainConfig:
        check_graph_size(self.arms, self.depth)
        if self.curriculum_strict + self.curriculum_relaxed > 1:
            raise ValueError("curriculum_strict + curriculum_relaxed: at most 1 (all steps)")
        return self


VARIANTS: dict[str, TrainConfig] = {
    "stargraph": TrainConfig(),
    "stargraph-clean": TrainConfig(loop_fraction=0.0),
}


EVAL_SEED = 12345


class LabEvalConfig(BaseModel):
    """What `lab eval` measures; the CLI's options are made from these fields."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    n: int = Field(1000, ge=1, le=MAX_PROMPTS, description="fresh graphs per temperature")
    seed: int = Field(EVAL_SEED, description="graph and sampler seed (training never uses it)")
    temperatures: list[float] = Field(
        default_factory=lambda: [0.0, 0.6, 1.0], min_length=1, description="temperatures"
    )
    max_new_tokens: int = Field(
        WALK_CAP, ge=1, description="length cap; a walk that reaches it is cut"
    )
    batch_size: int = Field(250, ge=1, description="prompts per generate call")
