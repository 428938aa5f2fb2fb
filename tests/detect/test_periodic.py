import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loopfix.detect import (
    DetectConfig,
    LoopMonitor,
    detect_tokens,
    find_ngram_loop,
    find_periodic_tail,
)
from loopfix.detect.periodic import find_tail, run_thresholds

from .helpers import primitive, reference_tail

CONFIG = DetectConfig(min_repeats=3, min_span=24, max_period=64)


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.lists(st.integers(1_000_000, 2_000_000), max_size=60),
    block=st.lists(st.integers(0, 999), min_size=1, max_size=40),
    extra=st.integers(0, 6),
    partial=st.integers(0, 39),
)
def test_repeated_block_is_flagged_with_its_period_and_onset(prefix, block, extra, partial):
    assume(primitive(block))
    repeats = max(CONFIG.min_repeats, -(-CONFIG.min_span // len(block))) + extra
    tokens = prefix + block * repeats + block[: partial % len(block)]
    verdict = find_periodic_tail(tokens, CONFIG)
    assert verdict is not None and verdict.kind == "verbatim"
    # The prefix shares no token with the block, so the run starts exactly at the first copy.
    assert (verdict.period, verdict.onset) == (len(block), len(prefix))
    assert verdict.repeats == repeats
    assert (verdict.span.start, verdict.span.end) == (len(prefix), len(tokens))


@settings(max_examples=200, deadline=None)
@given(
    tokens=st.lists(st.integers(0, 3), max_size=150),
    min_repeats=st.integers(2, 5),
    min_span=st.integers(1, 40),
    max_period=st.integers(1, 30),
)
def test_agrees_with_the_definition(tokens, min_repeats, min_span, max_period):
    config = DetectConfig(min_repeats=min_repeats, min_span=min_span, max_period=max_period)
    verdict = find_periodic_tail(tokens, config)
    expected = reference_tail(tokens, config)
    assert (None if verdict is None else (verdict.period, verdict.onset)) == expected


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(0, 3000))
def test_iid_tokens_over_a_large_vocabulary_are_never_flagged(seed, length):
    tokens = np.random.default_rng(seed).integers(0, 50_000, length)
    assert find_periodic_tail(tokens) is None
    assert find_ngram_loop(tokens) is None
    assert not detect_tokens(tokens).looping
    monitor = LoopMonitor(n_streams=1)
    assert monitor.push_batch(tokens[None, :]) == [None]


def test_short_integer_traces_as_the_testbed_evaluates_them():
    walk = [11, 4, 9, 2] + [5, 7, 3, 8] * 11  # 48 tokens, period 4
    verdict = find_periodic_tail(walk, DetectConfig(max_period=24, min_repeats=3, min_span=32))
    assert verdict is not None and (verdict.period, verdict.onset, verdict.repeats) == (4, 4, 11)
    # Two identical excursions in an otherwise varied walk are not a loop.
    varied = [5, 7, 3, 8] * 2 + [1, 2, 6, 4, 9, 3, 2, 6, 8, 1, 4, 4, 7, 2, 9, 5] * 2 + [3] * 8
    assert len(varied) == 48
    assert (
        find_periodic_tail(varied, DetectConfig(max_period=24, min_repeats=3, min_span=32)) is None
    )


def test_smallest_period_is_reported_and_thresholds_scale_with_it():
    assert find_periodic_tail([9] + [1] * 70).period == 1
    thresholds = run_thresholds(DetectConfig(min_repeats=3, min_span=64), np.array([1, 8, 40]))
    assert thresholds.tolist() == [63, 56, 80]
    # 20 copies of a 3-token unit cover only 60 tokens: not enough.
    assert find_periodic_tail([0] + [1, 2, 3] * 20) is None
    assert find_periodic_tail([0] + [1, 2, 3] * 22) is not None


def test_slack_accepts_a_tail_cut_mid_token():
    ids = np.array([100] + [1, 2, 3, 4] * 30 + [77])
    assert find_tail(ids, DetectConfig(), slack=0) is None
    assert find_tail(ids, DetectConfig(), slack=2) == (4, 116, 121)


def test_long_stream_with_long_period():
    rng = np.random.default_rng(3)
    unit = rng.integers(0, 50_000, 500)
    tokens = np.concatenate([rng.integers(0, 50_000, 20_000), unit, unit, unit, unit[:100]])
    verdict = find_periodic_tail(tokens)
    assert verdict is not None and (verdict.period, verdict.onset) == (500, 20_000)
