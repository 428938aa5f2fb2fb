from loopfix.repair.verify import Outcomes, compare_outcomes


def test_paired_counts_and_where_the_loops_went() -> None:
    base = Outcomes(
        0.6,
        ("loop", "loop", "success", "illegal", "loop"),
        (48, 48, 9, 5, 48),
        (True, True, False, False, True),
    )
    other = Outcomes(
        0.6,
        ("success", "cap_without_loop", "loop", "success", "loop"),
        (10, 48, 48, 9, 48),
        (False, True, True, False, True),
    )
    paired = compare_outcomes(base, other)
    assert paired["rescues"] == 2 and paired["regressions"] == 1
    assert paired["loops_removed"] == 2 and paired["loops_added"] == 1
    assert paired["base_loops_went_to"] == {"success": 1, "cap_without_loop": 1, "loop": 1}
    summary = other.summary()
    assert summary["loop_rate"] == 0.4 and summary["cut_rate"] == 0.6
    assert summary["accuracy"] == 0.4 and summary["mean_length"] == 32.6
