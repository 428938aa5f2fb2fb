"""Regression fixture: the synthetic corpus (tests/data/detect_corpus, written alongside the
detector) keeps every tier working; the headline numbers come from real outputs
(test_real_corpus.py, docs/detection.md)."""

import json
from collections import Counter
from pathlib import Path

from loopfix.detect import detect_text

CORPUS = Path(__file__).resolve().parents[1] / "data" / "detect_corpus" / "corpus.jsonl"


def load():
    with CORPUS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_corpus_covers_every_kind_and_the_hard_negatives():
    samples = load()
    loops = Counter(s["kind"] for s in samples if s["label"] == "loop")
    negatives = Counter(s["category"] for s in samples if s["label"] == "clean")
    assert sum(loops.values()) >= 40 and set(loops) == {"verbatim", "near", "segment", "semantic"}
    assert sum(negatives.values()) >= 40
    for category in (
        "chorus",
        "table",
        "numbered-list",
        "code",
        "arithmetic",
        "questionnaire",
        "long-reasoning",
    ):
        assert negatives[category] >= 3, category
    loop_categories = {s["category"] for s in samples if s["label"] == "loop"}
    assert {
        "cjk",
        "code",
        "wait-cycle",
        "special-token",
        "counter",
        "line-cycle",
    } <= loop_categories


def test_default_precision_and_recall():
    samples = load()
    flagged = true_flags = 0
    found: Counter = Counter()
    loops: Counter = Counter()
    for sample in samples:
        verdict = detect_text(sample["text"])
        is_loop = sample["label"] == "loop"
        flagged += verdict.looping
        true_flags += verdict.looping and is_loop
        if is_loop:
            loops[sample["kind"]] += 1
            found[sample["kind"]] += verdict.looping
    assert true_flags / flagged >= 0.95
    for kind, count in loops.items():
        assert found[kind] / count >= 0.90, kind
