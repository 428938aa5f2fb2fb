"""The stagnation check (stagnation.py) on real outputs of the tune part of
data/detect_corpus_real (never the held-out part) and on the synthetic fixture's hard negatives:
re-verification cycles of R1-distilled models are found as `semantic` loops decided by
`stagnation`; reasoning that re-checks by a new route, and long enumerations, stay clean."""

import json
from pathlib import Path

import pytest

from loopfix.detect import DetectConfig, detect_text
from loopfix.detect.stagnation import find_stagnant_tail, stem
from loopfix.detect.text import split_text

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"


def item(path: Path, item_id: str) -> dict:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["id"] == item_id:
                return record
    raise KeyError(item_id)


def tune_item(item_id: str) -> dict:
    record = item(REAL, item_id)
    assert record["split"] == "tune"  # the tests never look at the held-out part
    return record


# Tune loops that neither the segment nor the lexical semantic tier finds: the same result
# ("60 months", "$320", thermal conductivity, a lake among mountains) restated sentence by
# sentence with small changes. By the written rule of data/detect_corpus_real/semantic_rule.md
# (issue 41) these are near copies (kind `segment`), which the stagnation check reports as a
# `semantic` verdict.
STAGNANT_LOOPS = [
    "tli-deepseek-r1-distill-llama-8b-60-backtracking-positive",
    "tli-deepseek-r1-distill-llama-8b-21-backtracking-positive",
    "tli-deepseek-r1-distill-llama-8b-backtracking-3-positive",
    "tli-deepseek-r1-distill-qwen-1.5b-1",
]
# Clean tune traces that re-check a result by a new route or reconsider the question, cut at the
# cap: the lowest novelty among clean prose tails (0.036 to 0.09, over the 0.03 threshold).
RECHECKS = [
    "tli-deepseek-r1-distill-llama-8b-76-backtracking-positive",
    "tli-deepseek-r1-distill-llama-8b-90-backtracking-positive",
]


@pytest.mark.parametrize("item_id", STAGNANT_LOOPS)
def test_re_verification_cycles_are_semantic_loops_decided_by_stagnation(item_id):
    record = tune_item(item_id)
    assert record["label"] == "loop"
    text = record["text"]
    without = detect_text(text, config=DetectConfig(stagnation=False), cut=record["cut"])
    assert not without.looping  # the other tiers miss it
    verdict = detect_text(text, cut=record["cut"])
    assert verdict.looping and verdict.kind == "semantic"
    assert verdict.decided_by == "stagnation"
    assert verdict.score is not None and 0.5 <= verdict.score <= 0.75
    # The stagnant stretch is the last third of the text and runs to its end.
    assert verdict.span is not None and verdict.span.char_end == len(text.rstrip())
    assert verdict.span.char_start is not None and verdict.span.char_start > len(text) // 3
    assert verdict.evidence and text[verdict.span.char_start :].startswith(verdict.evidence)
    assert verdict.repeats is not None and verdict.repeats >= 1


@pytest.mark.parametrize("item_id", RECHECKS)
def test_rechecks_by_a_new_route_stay_clean(item_id):
    record = tune_item(item_id)
    assert record["label"] == "clean"
    assert find_stagnant_tail(split_text(record["text"]), DetectConfig()) is None
    assert not detect_text(record["text"], cut=record["cut"]).looping


def test_a_long_enumeration_of_recombined_items_is_no_stagnation():
    # 100 writing prompts built from a few subjects and plots: no new words after the first
    # dozen items, but every item is new. The list guard keeps it clean.
    record = item(DATA / "detect_corpus" / "corpus.jsonl", "x-list-100-prompts")
    assert record["label"] == "clean"
    tokens = split_text(record["text"])
    assert find_stagnant_tail(tokens, DetectConfig()) is None
    assert find_stagnant_tail(tokens, DetectConfig(stagnation_max_list_lines=1.0)) is not None


def test_short_answers_are_never_judged():
    # A SmolLM2 answer that stops: far fewer content words than the check needs.
    record = tune_item("smollm2-135m-instruct-arith-1-17-t0.0")
    config = DetectConfig(stagnation_max_novelty=1.0)
    assert find_stagnant_tail(split_text(record["text"]), config) is None


def test_the_check_can_be_switched_off_and_an_ended_output_is_not_judged():
    record = tune_item(STAGNANT_LOOPS[0])
    assert find_stagnant_tail(split_text(record["text"]), DetectConfig(stagnation=False)) is None
    # cut=False: the output ended by itself, so a restatement tail is no loop (as for the
    # lexical semantic tier).
    assert not detect_text(record["text"], cut=False).looping


def test_stem_merges_inflections_only():
    assert stem("Divided") == stem("dividing") == stem("divides") == "divid"
    assert stem("containers") == "container"
    assert stem("is") == "is" and stem("gas") == "gas"  # too short to lose a suffix
