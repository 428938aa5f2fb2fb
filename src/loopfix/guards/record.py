"""What guards did to one sequence: the `meta.guards` of its sample's record (a JSON object)."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["CutRecord", "GuardRecord", "RescueRecord", "ThinkExitRecord"]


class CutRecord(TypedDict):
    """Where `cut` ended a sequence: the output length and the loop's period (0: unknown)."""

    position: int
    period: int


class _Rescue(TypedDict):
    detected_at: int  # output length when the loop was found
    position: int  # output position the rescue acted at
    period: int


class RescueRecord(_Rescue, total=False):
    """One rescue: a ban of `token` at `position`, or `forced`, the tokens of `</think>` (a
    newline first when mid-line) a think-escape forced from `position` on."""

    token: int
    forced: list[int]


class ThinkExitRecord(TypedDict):
    """Where `think-budget` ended the thinking: the output position it began forcing at, the
    thought tokens by then, and the tokens it forced."""

    position: int
    thought: int
    forced: list[int]


class _Guards(TypedDict):
    guards: str  # the chain's spec ("rescue+dry")


class GuardRecord(_Guards, total=False):
    rescues: list[RescueRecord]
    cut: CutRecord
    think_exit: ThinkExitRecord
    forward_tokens: int  # added by the HF backend: tokens the model ran on, replays included
