"""The headline on the held-out part of the corpus of real outputs (data/detect_corpus_real),
with the semantic candidates and clean reasoning traces labelled by the written rule
(semantic_rule.md, issue 41): the default detector keeps precision >= 0.93 (0.938 measured), and
reaches recall >= 0.90 on every kind with enough held-out loops to measure at that resolution,
except the kinds docs/detection.md reports as short of the bar (near: templated tails whose
numbers do not count, with no cut known, 8/14; segment: near copies of whole paragraphs in
reasoning traces, 15/20; semantic: restatements in other words, 2/40, which text statistics do
not see). Below ten loops one miss moves recall by more than the 0.10 margin, so such kinds are
reported, not asserted."""

from pathlib import Path

import pytest

from loopfix.detect.corpus import judge_corpus, read_corpus, score_corpus

CORPUS = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"
# A kind's recall is asserted only with this many held-out loops.
MIN_LOOPS_PER_KIND = 10
# Kinds measured below the bar on the held-out part (docs/detection.md, "Quality on real
# outputs"); a change that lifts one of them, or drops another below, must update the docs.
SHORT_OF_THE_BAR = {"near", "segment", "semantic"}


def test_defaults_on_the_held_out_part_match_the_documented_state():
    scores = score_corpus(judge_corpus(read_corpus(CORPUS, "heldout")))
    assert scores.precision >= 0.93
    below = {
        kind
        for kind, (found, loops) in scores.recall_by_kind.items()
        if loops >= MIN_LOOPS_PER_KIND and found / loops < 0.90
    }
    assert below == SHORT_OF_THE_BAR
    measured = [
        (found, loops)
        for kind, (found, loops) in scores.recall_by_kind.items()
        if kind not in SHORT_OF_THE_BAR
    ]
    assert sum(found for found, _ in measured) >= 0.90 * sum(loops for _, loops in measured)


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


@pytest.mark.parametrize(
    ("package", "what"),
    [
        ("typer", "terminal panels drawn with box-drawing characters"),
        ("pydantic", "a changelog of some 760 distinct list items"),
    ],
)
def test_long_diagrams_and_lists_in_installed_readmes_stay_clean(package, what):
    # Real text of core dependencies, read from the installed package metadata: long box-drawing
    # diagrams and long lists of distinct rows are structure, not loops.
    from importlib.metadata import metadata

    from loopfix.detect import detect_text

    readme = metadata(package).get_payload() or ""
    assert len(readme) > 10_000, what
    assert not detect_text(readme).looping, what
