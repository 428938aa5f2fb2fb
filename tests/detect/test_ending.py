"""Whether an output states its final answer (ending.py), and what that changes when the cut is
unknown: the weakest tiers skip an output that stopped by itself. Real outputs come from the tune
part of data/detect_corpus_real (never the held-out part)."""

import json
from pathlib import Path

import pytest

from loopfix.detect import DetectConfig, detect_text
from loopfix.detect.ending import states_final_answer

REAL = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"


def tune_item(item_id: str) -> dict:
    with REAL.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["id"] == item_id:
                assert record["split"] == "tune"  # the tests never look at the held-out part
                return record
    raise KeyError(item_id)


@pytest.mark.parametrize(
    "last",
    [
        "The answer is 100.",
        "So, the final answer is 2.",
        "**Answer:** EV",
        "Answer: A",
        "The final answer is: 164",
        "**Final Answer:** \\boxed{2}",
        "Therefore, the largest of the three numbers is \\(\\boxed{51}\\).",
    ],
)
def test_a_last_line_stating_the_answer_ends_the_output(last):
    assert states_final_answer("Let me think step by step.\n\n" + last + "\n")


@pytest.mark.parametrize(
    "last",
    [
        'Let me try to think of the answer. The answer is probably "',  # a hedge, cut off
        "The answer is probably 5.",
        "So, the answer is",  # cut before its value
        "Wait, maybe the answer is a river that's not flowing, but",
        "So, maybe I should present the answer as 30.",
        "So the answer is 25. But wait, the problem says the balls are distinct and t",
        "So, the total cost is",
    ],
)
def test_hedges_cut_statements_and_paragraphs_do_not(last):
    assert not states_final_answer("Let me think step by step.\n\n" + last)


def test_a_concluded_restatement_of_steps_is_not_a_loop_when_the_cut_is_unknown():
    # SmolLM2 restates "we calculate the number of pencils Ravi has left" for each step, then
    # concludes "The answer is 100." The lexical semantic tier reads the steps as restatements.
    record = tune_item("smollm2-135m-instruct-arith-1-18-t0.0")
    assert record["label"] == "clean" and record["cut"] is False
    text = record["text"]
    assert not detect_text(text).looping
    assert detect_text(text, config=DetectConfig(final_answer_stops=False)).kind == "semantic"
    # A caller that says the output was cut overrides what the text suggests.
    assert detect_text(text, cut=True).looping
