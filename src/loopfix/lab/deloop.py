"""Teacher walks through `loopfix clean`'s de-looping (seed 001, 4.1: "de-loop the teacher's
outputs, then distill"): each walk is rendered as the text a distillation set would hold and
judged by `detect_text` with the detector's defaults, as `loopfix clean` judges a JSONL text
without a generation cap; a looping walk is dropped, or cut where `cut_text` cuts its text."""

from __future__ import annotations

from loopfix.detect import detect_text
from loopfix.detect.clean import cut_text
from loopfix.lab.config import Deloop
from loopfix.lab.stargraph import render

__all__ = ["deloop_walk"]


def deloop_walk(walk: list[int], mode: Deloop) -> list[int] | None:
    """The walk as `loopfix clean --mode MODE` leaves it: unchanged when the detector finds no
    loop (or `mode` is none), None when a looping walk is dropped, else its cut prefix."""
    if mode == "none":
        return walk
    text = render(walk)
    verdict = detect_text(text)
    if not verdict.looping:
        return walk
    if mode == "drop":
        return None
    # the cut ends at a word boundary of the rendered walk (one word per token)
    return walk[: len(cut_text(text, verdict).split())]
