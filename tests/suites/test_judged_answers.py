"""The `final-number` checker against a human judge, on real SmolLM2 answers.

tests/data/smollm2_arith_judged.jsonl holds SmolLM2-135M-Instruct's greedy answers to the
built-in `arith` suite (seed 0, 40 prompts, cap 256; the provenance is in each line) and, per
answer, the final answer a human read in it (`human_final`, null when it states none) and
whether that is right (`human_correct`). The answer phrases were chosen on the `design` split;
the `held-out` split was labelled first and not looked at while choosing them.
"""

import json
from pathlib import Path

from loopfix.suites import check_answer
from loopfix.suites.checkers import final_number

DATA = Path(__file__).resolve().parents[1] / "data" / "smollm2_arith_judged.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines()]


def test_the_judge_agrees_with_the_human_on_every_answer() -> None:
    rows = _rows()
    assert len(rows) == 40 and {row["split"] for row in rows} == {"design", "held-out"}
    for row in rows:
        stopped = row["finish_reason"] == "stop"
        judged = check_answer("final-number", row["text"], row["answer"], {}, stopped)
        assert judged == row["human_correct"], row["prompt_id"]


def test_the_judge_reads_the_same_final_number_as_the_human() -> None:
    # Stricter than right/wrong (all but one of these answers are wrong): the number itself.
    misread = [
        row["prompt_id"]
        for row in _rows()
        if final_number(row["text"], row["finish_reason"] == "stop") != row["human_final"]
    ]
    assert misread == []
