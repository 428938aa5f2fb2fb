from loopfix.lab.config import TrainConfig
from loopfix.lab.stargraph import BACK_ID, EOS_ID
from loopfix.repair.sources.base import decision_offsets
from loopfix.repair.sources.testbed import make_pairs, normal_walks


def test_pairs_are_matched_copy_versus_explore() -> None:
    pairs = make_pairs(TrainConfig(), seed=3, count=200, repeats=3)
    assert len(pairs) == 200
    for pair in pairs:
        # Shared prefix ends at a return to the root; both branches equally long, open-ended.
        assert pair.prefix[-2] == BACK_ID
        assert len(pair.repetitive) == len(pair.productive) == 3 * pair.skip
        assert EOS_ID not in pair.repetitive and EOS_ID not in pair.productive
        segment = pair.repetitive[: pair.skip]
        assert pair.repetitive == segment * 3
        assert pair.productive[: pair.skip] != segment  # explores first, not a copy
        assert segment[-2:] == [BACK_ID, pair.prefix[-1]]


def test_seeds_separate_training_from_held_out() -> None:
    train = make_pairs(TrainConfig(), seed=1, count=50, repeats=3)
    again = make_pairs(TrainConfig(), seed=1, count=50, repeats=3)
    held_out = make_pairs(TrainConfig(), seed=2, count=50, repeats=3)
    assert train == again
    assert {tuple(p.prefix) for p in train}.isdisjoint({tuple(p.prefix) for p in held_out})


def test_decision_offsets_are_the_arm_choices_after_back_root() -> None:
    root, a, b = 7, 1, 2
    branch = [a, BACK_ID, root, b, BACK_ID, root, a]
    assert decision_offsets(branch, root) == [0, 3, 6]
    pair = make_pairs(TrainConfig(), seed=5, count=1, repeats=3)[0]
    targets = pair.targets("repetitive", "decision")
    assert targets == [pair.skip, 2 * pair.skip]
    assert pair.targets("productive", "mode") == list(range(pair.skip, 3 * pair.skip))


def test_normal_walks_end_with_eos() -> None:
    walks = normal_walks(TrainConfig(), seed=4, count=20)
    assert all(ids[-1] == EOS_ID and 0 < prompt < len(ids) for ids, prompt in walks)
