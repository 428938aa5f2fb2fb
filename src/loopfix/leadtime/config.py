"""`loopfix warn`'s settings and its error, kept free of torch for the command line."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loopfix.errors import LoopfixError

__all__ = ["WarningConfig", "WarningError"]


class WarningError(LoopfixError):
    """Records the warning cannot be fitted or measured on (one line, naming what is missing)."""


class WarningConfig(BaseModel):
    """`loopfix warn`'s settings; the CLI's options are made from these fields."""

    model_config = ConfigDict(frozen=True)

    records: str = Field(description="a `loopfix scan` folder or its records.jsonl")
    extra: list[str] = Field(
        default_factory=list,
        description="more scans of the same model, suite and settings at other seeds, merged",
    )
    model: str = Field(description="the model that generated them (folder, hub id, loopfix:NAME)")
    layer: int | None = Field(
        None, ge=0, description="hidden layer read (0: embeddings; default: two thirds deep)"
    )
    window: int = Field(16, ge=1, description="steps each feature averages over")
    features: Literal["states", "signals"] = Field(
        "states",
        description="states: the layer's mean state with the signals; signals: top-1, flywheel "
        "and entropy only (what a sampler sees, no hidden state)",
    )
    false_alarm: float = Field(
        0.05, gt=0, lt=1, description="share of never-looping tune samples allowed a warning"
    )
    strength: float = Field(0.01, gt=0, description="1 / L2 strength of the logistic probe")
    heldout_share: float = Field(
        1 / 3, gt=0, lt=1, description="share of prompts held out (by a hash of the prompt id)"
    )
