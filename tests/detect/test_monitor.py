import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopfix.detect import DetectConfig, LoopMonitor, find_periodic_tail

CONFIG = DetectConfig(min_repeats=3, min_span=12, max_period=16)


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.integers(1, 6)),
        max_size=8,
    )
)
def test_online_and_offline_agree_at_every_step(pieces):
    tokens = [t for block, times in pieces for t in block * times]
    monitor = LoopMonitor(CONFIG)
    first_offline = None
    for index, token in enumerate(tokens):
        reported = monitor.push(token)
        offline = find_periodic_tail(tokens[: index + 1], CONFIG)
        assert monitor.current() == offline
        if first_offline is None and offline is not None:
            first_offline = offline
            assert reported == offline  # the first loop is reported on the step it appears
        if first_offline is None:
            assert reported is None


def test_reports_once_per_loop_and_again_after_it_breaks():
    monitor = LoopMonitor(CONFIG)
    reports = [monitor.push(t) for t in [9] + [1, 2, 3] * 10]
    found = [(i, v) for i, v in enumerate(reports) if v is not None]
    assert len(found) == 1
    step, verdict = found[0]
    assert (verdict.onset, verdict.period, verdict.span.end) == (1, 3, step + 1)
    assert [monitor.push(t) for t in [7, 8]] == [None, None]
    again = [monitor.push(t) for t in [4, 5] * 8]
    assert sum(v is not None for v in again) == 1


def test_batch_streams_are_independent_and_match_single_monitors():
    rng = np.random.default_rng(0)
    streams = [rng.integers(0, 50_000, 200) for _ in range(5)]
    streams[1][100:] = np.tile([1, 2, 3, 4], 25)
    streams[3][40:] = 7
    batch = LoopMonitor(CONFIG, n_streams=5)
    singles = [LoopMonitor(CONFIG) for _ in streams]
    for step in range(200):
        column = [int(s[step]) for s in streams]
        expected = [m.push(t) for m, t in zip(singles, column, strict=True)]
        assert batch.push_batch(np.array(column)) == expected
    assert [batch.current(i) for i in range(5)] == [m.current() for m in singles]
    assert (
        batch.current(0) is None and batch.current(1).period == 4 and batch.current(3).period == 1
    )


def test_block_push_returns_the_first_report_of_each_stream():
    block = np.array([[5] * 20, list(range(20))])
    monitor = LoopMonitor(CONFIG)
    first, second = monitor.push_batch(block)
    assert monitor.n_streams == 2 and monitor.lengths.tolist() == [20, 20]
    assert first is not None and (first.onset, first.period, first.span.end) == (0, 1, 12)
    assert second is None


def test_reset_forgets_a_stream():
    monitor = LoopMonitor(CONFIG, n_streams=2)
    for _ in range(15):
        monitor.push_batch([1, 1])
    monitor.reset(0)
    assert monitor.current(0) is None and monitor.current(1) is not None
    assert monitor.lengths.tolist() == [0, 15]
    monitor.reset()
    assert monitor.current(1) is None


def test_memory_is_bounded_by_the_period_not_the_stream():
    monitor = LoopMonitor(DetectConfig(max_period=32), n_streams=3)
    sizes = None
    rng = np.random.default_rng(1)
    for _ in range(2_000):
        monitor.push_batch(rng.integers(0, 1000, 3))
        current = sum(a.nbytes for a in vars(monitor).values() if isinstance(a, np.ndarray))
        sizes = sizes or current
        assert current == sizes


def test_loop_longer_than_the_window_start_is_still_exact():
    rng = np.random.default_rng(2)
    unit = list(rng.integers(0, 1000, 100))
    tokens = list(rng.integers(5000, 6000, 3000)) + unit * 40
    monitor = LoopMonitor()
    for token in tokens:
        monitor.push(int(token))
    assert monitor.current() == find_periodic_tail(tokens)
    assert monitor.current().onset == 3000 and monitor.current().repeats == 40


def test_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        LoopMonitor().push(-1)
    monitor = LoopMonitor(n_streams=2)
    with pytest.raises(ValueError, match="one stream"):
        monitor.push(1)
    with pytest.raises(ValueError, match="2 streams"):
        monitor.push_batch([1, 2, 3])
    with pytest.raises(ValueError, match="non-negative"):
        monitor.push_batch([1, -2])
