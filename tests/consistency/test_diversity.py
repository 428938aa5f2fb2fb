from loopfix.consistency.diversity import distinct_n, edit_distance, mean_pairwise_distance


def test_edit_distance_counts_edits_over_the_longer_length() -> None:
    assert edit_distance([1, 2, 3], [1, 2, 3]) == 0.0
    assert edit_distance([1, 2, 3, 4], [1, 9, 3]) == 2 / 4  # one substitution, one deletion
    assert edit_distance([], [5, 6]) == 1.0
    assert edit_distance([], []) == 0.0


def test_distinct_n_pools_the_outputs() -> None:
    assert distinct_n([[1, 2, 1, 2], [1, 2]], 2) == 2 / 4  # (1,2) x3 and (2,1) x1
    assert distinct_n([[1]], 2) is None


def test_mean_pairwise_distance_over_every_pair() -> None:
    assert mean_pairwise_distance([[1, 2], [1, 2], [3, 4]]) == (0 + 1 + 1) / 3
