"""The whole source held out of the corpus (can-ai-code, split `unseen`, issue 53): its labels
are those of the two passes and their adjudication, the documented agreement of the passes
holds, and the default detector's state on it is the one docs/detection.md reports (a change
that moves it must update "A source it never saw")."""

from collections import Counter
from pathlib import Path

from loopfix.detect.corpus import judge_corpus, read_corpus, score_corpus

DATA = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real"
LABELS = ("semantic", "textual", "clean")


def passes() -> dict[str, list[str]]:
    rows = {}
    for line in (DATA / "can_ai_code_passes.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            fields = line.split("\t")
            rows[fields[0]] = fields
    return rows


def cohen_kappa(first: list[str], second: list[str]) -> float:
    count = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / count
    one, two = Counter(first), Counter(second)
    expected = sum(one[label] * two[label] for label in set(first) | set(second)) / count**2
    return (observed - expected) / (1 - expected)


def test_unseen_part_is_the_adjudicated_passes_and_nothing_else():
    items = read_corpus(DATA / "corpus.jsonl", "unseen")
    rows = passes()
    assert {item.id for item in items} == rows.keys()
    for item in items:
        _, _, _, _, _, label, kind, _ = rows[item.id]
        assert (item.label, item.kind) == (label, kind), item.id
    # The tune part holds nothing of this source.
    tune = read_corpus(DATA / "corpus.jsonl", "tune")
    assert not any(item.id.startswith("cac-") for item in tune)


def test_the_passes_agree_as_documented():
    rows = list(passes().values())
    first = [row[1] for row in rows]
    second = [row[3] for row in rows]
    assert set(first) | set(second) <= set(LABELS)
    assert round(cohen_kappa(first, second), 3) == 0.957
    semantic = [[label == "semantic" for label in side] for side in (first, second)]
    as_text = [["semantic" if flag else "rest" for flag in side] for side in semantic]
    assert round(cohen_kappa(*as_text), 3) == 0.852


def test_defaults_on_the_unseen_source_match_the_documented_state():
    scores = score_corpus(judge_corpus(read_corpus(DATA / "corpus.jsonl", "unseen")))
    assert (scores.flagged, scores.true_flags, scores.loops) == (10, 9, 13)
    assert scores.recall_by_kind == {
        "verbatim": (6, 6),
        "near": (2, 3),
        "segment": (1, 1),
        "semantic": (0, 3),
    }
