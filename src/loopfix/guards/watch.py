"""The loop watch shared by `rescue` and `cut`: a `LoopMonitor` over one row's output."""

from __future__ import annotations

from pydantic import Field

from loopfix.detect import DetectConfig, LoopMonitor
from loopfix.guards.base import GuardParams

__all__ = ["WatchParams", "new_monitor"]


class WatchParams(GuardParams):
    max_period: int = Field(256, ge=1, description="longest repeating unit watched, in tokens")
    min_repeats: int = Field(3, ge=2, description="copies of the unit that make a loop")
    min_span: int = Field(32, ge=1, description="tokens a loop must cover")


def new_monitor(params: WatchParams) -> LoopMonitor:
    watched = {"max_period": params.max_period, "min_repeats": params.min_repeats}
    config = DetectConfig.model_validate({**watched, "min_span": params.min_span})
    return LoopMonitor(config, n_streams=1)
