"""`lab experiment`'s settings; the CLI's options are made from these fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loopfix.lab.config import LabEvalConfig
from loopfix.lab.stargraph import check_graph_size
from loopfix.records import MAX_PROMPTS, Temperature

__all__ = ["ExperimentConfig"]


class ExperimentConfig(BaseModel):
    """What one experiment run trains and measures (OUT holds one such run)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    name: str = Field(description="the experiment (see --list)")
    seeds: int = Field(3, ge=2, description="training seeds per arm (0, 1, ...); 2+ for intervals")
    # Sized so that every seed tried has left the plateau of guessed moves well before the
    # end and a run of every experiment fits 2 hours on 2 cores (docs/training.md, "How long a
    # full run takes").
    steps: int = Field(
        1200, ge=1, description="optimizer steps per model (the batch arms match its walks)"
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

    @field_validator("graph")
    @classmethod
    def _graph_fits(cls, graph: list[int]) -> list[int]:
        check_graph_size(*graph)
        return graph

    def evaluation(self) -> LabEvalConfig:
        return LabEvalConfig(n=self.n, temperatures=self.temperatures)
