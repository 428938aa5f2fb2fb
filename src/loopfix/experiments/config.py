"""`lab experiment`'s settings; the CLI's options are made from these fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from loopfix.lab.config import LabEvalConfig
from loopfix.records import MAX_PROMPTS, Temperature

__all__ = ["ExperimentConfig"]


class ExperimentConfig(BaseModel):
    """What one experiment run trains and measures (OUT holds one such run)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    name: str = Field(description="the experiment (see --list)")
    seeds: int = Field(3, ge=2, description="training seeds per arm (0, 1, ...); 2+ for intervals")
    # The bundled testbeds' size, the one at which every seed tried had passed the students'
    # transition from guessing moves to solving the task (docs/training.md: at 800 steps seed 0
    # still guesses, at 1500 seed 2 does; at 4000 seeds 0, 1 and 2 solve 50-63% at T = 0).
    steps: int = Field(
        4000, ge=1, description="optimizer steps per model (the batch arms match its walks)"
    )
    n: int = Field(200, ge=1, le=MAX_PROMPTS, description="fresh graphs per temperature")
    temperatures: list[Temperature] = Field(
        default_factory=lambda: LabEvalConfig().temperatures,
        min_length=1,
        description="evaluation temperatures",
    )
    graph: list[int] = Field(
        default_factory=lambda: [3, 3],
        min_length=2,
        max_length=2,
        description="k,d: the star graph G(k, d) every arm trains and is evaluated on",
    )
    threads: int = Field(
        1, ge=1, description="torch CPU threads (1: a tiny model gains nothing from more)"
    )

    def evaluation(self) -> LabEvalConfig:
        return LabEvalConfig(n=self.n, temperatures=self.temperatures)
