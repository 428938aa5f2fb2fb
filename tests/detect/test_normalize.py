import numpy as np

from loopfix.detect.normalize import classes_from_mapping, normalize


def test_runs_of_one_class_collapse_and_keep_their_origin():
    ids = np.array([10, 1, 2, 11, 3, 10])
    classes = classes_from_mapping(ids, {1: 0, 2: 0, 3: 0})
    norm = normalize(ids, classes)
    assert norm.ids.tolist() == [10, -1, 11, -1, 10]
    assert norm.origin.tolist() == [0, 1, 3, 4, 5, 6]
    assert norm.volatile.tolist() == [False, True, False, True, False]


def test_different_classes_do_not_merge():
    norm = normalize(np.array([1, 2, 3]), np.array([0, 1, -1]))
    assert norm.ids.tolist() == [-1, -2, 3]
