"""Near tier: loops that repeat except for volatile parts (counters, numbers, dates, percentages).

Volatile tokens are masked (normalize.py) and the masked sequence gets the exact periodic-tail
check. A masked loop is accepted when every number that changes moves like a counter (mostly
one constant step: "Step 12, Step 13", "05%, 10%", consecutive dates, `\\node (n7)`; at the
template's period or a multiple of it, for numbers cycling slower than the template), and
either the unit carries at least `near_min_words` words or, for terse templates such as
`224 unknown`, it repeats at least `near_counter_repeats` times (more than the hundred items of
a requested list). Step-by-step arithmetic, a table of measurements, a multiplication table or a
numbered list of different items fail these tests.

When the caller knows the output was cut at the token limit (`at_cut`), a templated tail running
to the cut is evidence enough whatever its numbers do: `cut.near_repeats` copies of a unit with
`cut.near_min_words` words ("Step 12: 4800 apples is 9600 apples." ... to the cap), or
`wordless_min_repeats` copies of a unit without words ("4 * 2 = 8 * 2 = 16 * 2 = ..." to the cap).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .config import DetectConfig
from .normalize import Normalized, normalize
from .periodic import find_tail
from .verdict import LoopVerdict, Span, strength_score

# A slot moves like a counter when this share of its steps equal its most common step.
_COUNTER_SHARE = 0.75

NumberReader = Callable[[int, int], "int | None"]


def counter_like(values: list[int | None]) -> bool:
    """Whether a slot's numbers, copy after copy, mostly change by one constant step."""
    if len(values) < 3 or any(value is None for value in values):
        return False
    steps = np.diff(np.array(values, dtype=np.float64))
    _, counts = np.unique(steps, return_counts=True)
    return bool(counts.max() >= _COUNTER_SHARE * len(steps))


def _changing_slots(
    ids: np.ndarray,
    norm: Normalized,
    onset: int,
    end: int,
    period: int,
    number_of: NumberReader | None,
) -> list[list[int | None]]:
    """For each volatile slot of the unit `[onset, onset + period)` whose text changes from copy
    to copy up to `end`, the numbers it holds (None where they cannot be read)."""
    origin = norm.origin
    changing: list[list[int | None]] = []
    for offset in range(period):
        if not norm.volatile[onset + offset]:
            continue
        positions = range(onset + offset, end, period)
        if len({tuple(ids[origin[j] : origin[j + 1]]) for j in positions}) > 1:
            changing.append(
                [
                    None if number_of is None else number_of(origin[j], origin[j + 1])
                    for j in positions
                ]
            )
    return changing


def find_near_loop(
    ids: np.ndarray,
    classes: np.ndarray,
    words: np.ndarray,
    config: DetectConfig,
    number_of: NumberReader | None = None,
    at_cut: bool = False,
) -> LoopVerdict | None:
    """A periodic tail modulo volatile tokens (`classes >= 0`), or None.

    `words` marks content tokens; `number_of(start, end)` reads the number written by original
    tokens `[start, end)`. Without it (bare token ids) numbers cannot be read, so the counter
    test is skipped and only units with `near_min_words` words count.
    """
    norm = normalize(ids, classes)
    found = find_tail(norm.ids, config, config.tail_slack)
    if found is None:
        return None
    period, run, end = found
    onset = end - run - period
    copies = (end - onset) // period
    unit_words = int(words[norm.origin[onset] : norm.origin[onset + period]].sum())
    if at_cut:
        wordy = unit_words >= config.cut.near_min_words
        needed = config.cut.near_repeats if wordy else config.wordless_min_repeats
    else:
        wordy = unit_words >= config.near_min_words
        needed = config.min_repeats if wordy else config.near_counter_repeats
    if copies < needed or (number_of is None and not at_cut and not wordy):
        return None
    # Numbers may cycle with a longer period than the template (clock times 5:30, 5:45, 6:00,
    # 6:30, ...: the hour counts once every three sentences), so multiples of the template's
    # period are tried too: at one of them every slot may count.
    for unit in range(period, (end - onset) // config.min_repeats + 1, period):
        changing = _changing_slots(ids, norm, onset, end, unit, number_of)
        if not changing:
            return None  # nothing changes: an exact loop, the verbatim tier's business
        if at_cut or number_of is None or all(counter_like(v) for v in changing):
            break
    else:
        return None
    repeats = (end - onset) // unit
    period, origin = unit, norm.origin
    start = int(origin[onset])
    return LoopVerdict(
        looping=True,
        kind="near",
        onset=start,
        period=int(origin[onset + period]) - start,
        repeats=repeats,
        span=Span(start, int(origin[end])),
        decided_by="near",
        score=strength_score(copies / needed),
    )
