"""The headline: on the held-out part of the corpus of real outputs (data/detect_corpus_real),
the default detector reaches precision >= 0.95 and recall >= 0.90, overall and for every kind
with enough held-out loops to measure at that resolution (docs/detection.md). Below ten loops
one miss moves recall by more than the 0.10 margin (near: 8 of 9 found, 0.889; segment 1,
semantic 0 held-out loops), so those kinds are reported, not asserted."""

from pathlib import Path

import pytest

from loopfix.detect.corpus import judge_corpus, read_corpus, score_corpus

CORPUS = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"
# A kind's recall is asserted only with this many held-out loops.
MIN_LOOPS_PER_KIND = 10


def test_defaults_reach_the_bar_on_the_held_out_part():
    scores = score_corpus(judge_corpus(read_corpus(CORPUS, "heldout")))
    assert scores.precision >= 0.95
    assert scores.recall >= 0.90
    for kind, (found, loops) in scores.recall_by_kind.items():
        if loops >= MIN_LOOPS_PER_KIND:
            assert found / loops >= 0.90, kind


def test_corpus_has_both_splits_and_more_hard_negatives_than_loops():
    items = read_corpus(CORPUS)
    for split in ("tune", "heldout"):
        part = [item for item in items if item.split == split]
        loops = sum(item.label == "loop" for item in part)
        assert loops >= 10 and len(part) - loops >= loops, split


def test_malformed_corpus_line_names_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "x", "label": "loop", "kind": "nearish"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: field 'kind'"):
        read_corpus(path)
