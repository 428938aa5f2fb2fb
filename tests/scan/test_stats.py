import pytest

from loopfix.scan.stats import mcnemar_exact, wilson_interval


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 20)[0] == 0.0  # type: ignore[index]
    assert wilson_interval(0, 0) is None


def test_mcnemar_exact_known_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(8, 0) == pytest.approx(2 / 2**8)
    assert mcnemar_exact(5, 1) == pytest.approx(2 * 7 / 64)
    assert mcnemar_exact(3, 3) == 1.0
