"""The detector's answer: `LoopVerdict` (and the `Span` it covers), JSON round-trippable."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, get_args

LoopKind = Literal["verbatim", "near", "segment", "semantic"]
LOOP_KINDS: tuple[str, ...] = get_args(LoopKind)


@dataclass(frozen=True)
class Span:
    """Where the loop lies: tokens `[start, end)`, and characters `[char_start, char_end)` for
    text."""

    start: int
    end: int
    char_start: int | None = None
    char_end: int | None = None


@dataclass(frozen=True)
class LoopVerdict:
    """Whether a sequence loops, where the loop starts and what repeats.

    `onset` is the index of the first token of the first copy of the repeating unit (the start of
    the periodic run). So `tokens[:onset]` holds no copy of the unit, `tokens[:onset + period]`
    holds exactly one, and rolling back to `onset` removes the repetition entirely; rolling back
    to `onset + period` keeps one statement of the unit and removes every repeat of it.
    `period` is the unit's length in tokens (for `segment` and `semantic` loops, the length of the
    first cycle), `repeats` the number of whole copies of the unit in the span. `span.start ==
    onset` whenever the verdict loops.

    The early-warning fields are filled when per-step log-probs or entropies were given:
    `entropy_streak_onset` is the first step of the first run of low-entropy steps (seed 001's
    rule), `top1_trend` the mean top-1 probability per stretch of the loop (first to last) and
    `flywheel` whether it climbs to near 1 (the "confidence flywheel").

    `decided_by` names the evidence that decided a loop (`periodic-tail`, `ngram`, `near-counter`,
    `flood`, `segment`, `semantic`, with `+cut` when it needed the knowledge that the output was
    cut at the token limit); `score` in [0, 1] grows with the copies found relative to what the
    deciding check needs (0.5 exactly at its threshold; docs/detection.md gives the precision
    observed per score on the held-out corpus).
    """

    looping: bool
    kind: LoopKind | None = None
    onset: int | None = None
    period: int | None = None
    repeats: int | None = None
    span: Span | None = None
    evidence: str | None = None
    decided_by: str | None = None
    score: float | None = None
    entropy_streak_onset: int | None = None
    flywheel: bool | None = None
    top1_trend: tuple[float, ...] | None = None

    @classmethod
    def not_looping(cls) -> LoopVerdict:
        """The negative verdict (no loop found)."""
        return cls(looping=False)

    def to_dict(self) -> dict[str, object]:
        """A JSON-serialisable dict (tuples become lists)."""
        data = asdict(self)
        if self.top1_trend is not None:
            data["top1_trend"] = list(self.top1_trend)
        return data


def strength_score(strength: float) -> float:
    """Score of a loop found `strength` times over its check's threshold (copies found / copies
    needed): 0.5 at the threshold, approaching 1 as the evidence grows (1 - 2 ** -strength)."""
    return round(1.0 - 0.5 ** max(0.0, strength), 4)


NOT_LOOPING = LoopVerdict.not_looping()
