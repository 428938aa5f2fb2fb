import pytest

from loopfix.scan.stats import mcnemar_exact, student_t_quantile, wilson_interval


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


@pytest.mark.parametrize(
    ("probability", "df", "table"),
    [
        # printed Student-t tables (two-sided 95% and one-sided 90%), 7 significant digits
        (0.975, 1, 12.70620),
        (0.975, 2, 4.302653),
        (0.975, 4, 2.776445),
        (0.975, 10, 2.228139),
        (0.975, 30, 2.042272),
        (0.9, 1, 3.077684),
        (0.9, 5, 1.475884),
    ],
)
def test_student_t_quantile_matches_the_printed_table(
    probability: float, df: int, table: float
) -> None:
    assert student_t_quantile(probability, df) == pytest.approx(table, abs=5e-6)
    assert student_t_quantile(1 - probability, df) == pytest.approx(-table, abs=5e-6)


def test_student_t_quantile_refuses_what_has_no_quantile() -> None:
    with pytest.raises(ValueError):
        student_t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        student_t_quantile(0.5, 0)
