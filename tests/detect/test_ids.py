import numpy as np

from loopfix.detect.ids import as_ids


def test_integer_tokens_are_kept():
    ids = as_ids([5, 3, 5, 70000])
    assert ids.dtype == np.int64
    assert ids.tolist() == [5, 3, 5, 70000]


def test_other_tokens_are_interned_in_order_of_first_appearance():
    assert as_ids(["b", "a", "b", "c", "a"]).tolist() == [0, 1, 0, 2, 1]


def test_empty_sequences():
    assert as_ids([]).tolist() == []
    assert as_ids(np.zeros(0, dtype=np.int32)).dtype == np.int64
