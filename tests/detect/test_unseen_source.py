"""The sources held out of the corpus whole (split `unseen`, issue 53: can-ai-code and
pm-llm-benchmark): their labels are those of the passes and their adjudication, the documented
agreement of the passes holds, and the default detector's state on each is the one
docs/detection.md reports (a change that moves it must update "Sources it never saw")."""

from collections import Counter
from pathlib import Path

import pytest

from loopfix.detect.corpus import judge_corpus, read_corpus, score_corpus

DATA = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real"
LABELS = ("semantic", "textual", "clean")
# part: (id prefix, passes file, columns of the final label and kind)
PARTS = {
    "can-ai-code": ("cac-", "can_ai_code_passes.tsv", 9),
    "pm-llm-benchmark": ("pmb-", "pm_llm_benchmark_passes.tsv", 5),
}


def passes(part: str) -> dict[str, list[str]]:
    rows = {}
    for line in (DATA / PARTS[part][1]).read_text(encoding="utf-8").splitlines():
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


def test_unseen_split_is_the_adjudicated_passes_and_nothing_else():
    items = {item.id: item for item in read_corpus(DATA / "corpus.jsonl", "unseen")}
    rows = {**passes("can-ai-code"), **passes("pm-llm-benchmark")}
    assert items.keys() == rows.keys()
    for part, (prefix, _, column) in PARTS.items():
        for item_id, row in passes(part).items():
            assert item_id.startswith(prefix)
            assert (items[item_id].label, items[item_id].kind) == tuple(row[column : column + 2])
    # The tune and held-out parts hold nothing of these sources.
    for split in ("tune", "heldout"):
        others = read_corpus(DATA / "corpus.jsonl", split)
        assert not any(item.id.startswith(("cac-", "pmb-")) for item in others)


def semantic_or_rest(labels: list[str]) -> list[str]:
    return ["semantic" if label == "semantic" else "rest" for label in labels]


@pytest.mark.parametrize(
    ("part", "columns", "kappa", "kappa_semantic"),
    [
        ("can-ai-code", (1, 3), 0.957, 0.852),
        ("can-ai-code", (5, 7), 0.906, 0.662),
        ("pm-llm-benchmark", (1, 3), 0.129, None),
    ],
    ids=["can-ai-code first reader", "can-ai-code blind passes", "pm-llm-benchmark blind passes"],
)
def test_the_passes_agree_as_documented(part, columns, kappa, kappa_semantic):
    rows = list(passes(part).values())
    first, second = ([row[column] for row in rows] for column in columns)
    assert set(first) | set(second) <= set(LABELS)
    assert round(cohen_kappa(first, second), 3) == kappa
    if kappa_semantic is not None:  # no pass of pm-llm-benchmark reads a semantic loop
        pair = semantic_or_rest(first), semantic_or_rest(second)
        assert round(cohen_kappa(*pair), 3) == kappa_semantic


@pytest.mark.parametrize(
    ("part", "flags", "recall_by_kind"),
    [
        (
            "can-ai-code",
            (10, 10, 13),
            {"verbatim": (6, 6), "near": (2, 3), "segment": (2, 2), "semantic": (0, 2)},
        ),
        ("pm-llm-benchmark", (7, 4, 11), {"verbatim": (1, 2), "segment": (3, 9)}),
    ],
)
def test_defaults_on_each_unseen_source_match_the_documented_state(part, flags, recall_by_kind):
    prefix = PARTS[part][0]
    items = [i for i in read_corpus(DATA / "corpus.jsonl", "unseen") if i.id.startswith(prefix)]
    scores = score_corpus(judge_corpus(items))
    assert (scores.flagged, scores.true_flags, scores.loops) == flags
    assert {kind: found for kind, found in scores.recall_by_kind.items() if found[1]} == (
        recall_by_kind
    )
