"""What determines the thinking model's delta (`loopfix lab train --variant smollm2-think`).
Kept free of torch so the command line can read it without loading it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["THINK_HELD_OUT_SEED", "ThinkTrainConfig"]

THINK_HELD_OUT_SEED = 100
"""The `think` suite seed the docs' numbers are measured on; training problems are drawn from
seeds derived from the training seed, never this one (`lab.think_train.training_problem`)."""


class ThinkTrainConfig(BaseModel):
    """Everything that determines the delta, given the base model's weights."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    base: str = Field("loopfix:smollm2", description="the base model (a loopfix:NAME or folder)")
    seed: int = Field(0, ge=0, description="training seed (problems, traces, initialisation)")
    steps: int = Field(256, ge=1, description="optimizer steps")
    batch_size: int = Field(
        8, ge=1, le=64, description="traces per step (a step draws from its own 64 problems)"
    )
    rank: int = Field(8, ge=1, le=64, description="LoRA rank")
    alpha: float = Field(16.0, gt=0, description="LoRA alpha (scale = alpha / rank)")
    first_layer: int = Field(
        12,
        ge=0,
        description="LoRA on this decoder layer and every one above it (SmolLM2: the top 18 of 30)",
    )
    targets: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        description="the linear layers of a decoder layer that get LoRA factors",
    )
    learning_rate: float = Field(2e-3, gt=0, description="peak AdamW learning rate")
    warmup_steps: int = Field(10, ge=0, description="linear warm-up steps")
    circle_share: float = Field(
        0.75,
        ge=0,
        le=1,
        description="teacher: share of traces that circle once (0 = clean; a clean student "
        "does not loop, docs/thinking.md)",
    )
    threads: int = Field(2, ge=1, description="torch CPU threads")
    checkpoint_every: int = Field(8, ge=1, description="steps between resume checkpoints")
