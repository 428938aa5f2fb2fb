"""Reference implementations and generators shared by the detect tests."""

from __future__ import annotations

from loopfix.detect import DetectConfig


def reference_tail(tokens: list[int], config: DetectConfig) -> tuple[int, int] | None:
    """(period, onset) of the periodic tail by the definition, one comparison at a time."""
    length = len(tokens)
    for period in range(1, min(config.max_period, length - 1) + 1):
        run = 0
        while (
            run < length - period and tokens[length - 1 - run] == tokens[length - 1 - run - period]
        ):
            run += 1
        if run + period >= config.min_repeats * period and run + period >= config.min_span:
            return period, length - run - period
    return None


def primitive(block: list[int]) -> bool:
    """Whether `block` is not a repetition of a shorter block."""
    size = len(block)
    return all(block != block[:d] * (size // d) for d in range(1, size) if size % d == 0)
