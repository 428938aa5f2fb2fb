import numpy as np
import pytest

from loopfix.detect import DetectConfig, detect_tokens
from loopfix.detect.early_warning import entropy_streak_onset, step_signals, top1_trend


def test_seed_001_rule():
    entropies = np.array([1.0, 0.2, 0.1, 0.5, 0.25, 0.2, 0.29, 0.1])
    assert entropy_streak_onset(entropies, 0.3, 3) == 4
    assert entropy_streak_onset(entropies, 0.3, 5) is None
    assert entropy_streak_onset(entropies, 0.6, 3) == 1


def test_signals_from_full_and_sampled_logprobs():
    uniform = np.log(np.full((2, 4), 0.25))
    entropy, top1 = step_signals(logprobs=uniform)
    assert np.allclose(entropy, np.log(4)) and np.allclose(top1, 0.25)
    peaked = np.log(np.array([[1.0, 0.0, 0.0]]) + 1e-300)
    entropy, top1 = step_signals(logprobs=peaked)
    assert entropy[0] == pytest.approx(0.0, abs=1e-9) and top1[0] == pytest.approx(1.0)
    entropy, top1 = step_signals(logprobs=[np.log(0.5), np.log(0.9)])
    assert entropy is None and np.allclose(top1, [0.5, 0.9])
    entropy, top1 = step_signals(entropies=[0.1], top1=[0.7])
    assert entropy.tolist() == [0.1] and top1.tolist() == [0.7]


def test_trend_has_at_most_eight_points():
    trend = top1_trend(np.linspace(0.5, 1.0, 101), 0, 101)
    assert len(trend) == 8 and list(trend) == sorted(trend)


def test_flywheel_in_a_loop():
    tokens = list(range(100, 140)) + [1, 2, 3, 4, 5, 6, 7, 8] * 20
    rising = np.concatenate([np.full(40, 0.6), np.linspace(0.6, 0.999, 160)])
    verdict = detect_tokens(tokens, top1=rising, entropies=np.full(200, 1.0))
    assert verdict.looping and verdict.flywheel is True
    assert verdict.top1_trend[0] < verdict.top1_trend[-1]
    assert verdict.entropy_streak_onset is None
    flat = detect_tokens(tokens, top1=np.full(200, 0.6))
    assert flat.flywheel is False
    assert detect_tokens(tokens).flywheel is None


def test_streak_reported_without_a_loop():
    entropies = np.array([2.0] * 10 + [0.1] * 3 + [2.0] * 10)
    verdict = detect_tokens(list(range(23)), entropies=entropies, config=DetectConfig())
    assert not verdict.looping and verdict.entropy_streak_onset == 10
    assert verdict.flywheel is None
