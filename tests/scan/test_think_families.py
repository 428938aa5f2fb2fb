"""The `think` table on records built from the teacher's traces and from a loop written into
one: the checker, the step judge and the detector each counted where they belong."""

from __future__ import annotations

import random

from loopfix.detect import detect_text
from loopfix.lab.think_teacher import make_problem, trace
from loopfix.records import DecodeSettings, Sample
from loopfix.scan.think_families import detect_rows, family_rows
from loopfix.suites.think import think_item


def _sample(index: int, text: str, finish: str, temperature: float = 0.0) -> Sample:
    item = think_item(100, index)
    settings = DecodeSettings(temperature=temperature, max_new_tokens=384).model_dump()
    verdict = detect_text(text, None, cut=finish == "length")
    return Sample(item.id, 0, settings, [], text, finish, verdict)  # type: ignore[arg-type]


def _samples() -> list[Sample]:
    problem = make_problem(100, 0)  # arith
    clean = trace(problem, random.Random(0))
    lines = clean.split("\n")
    looping = "\n".join([*lines[:3], *([lines[1], lines[2]] * 12), lines[1][:3]])
    wrong = clean.replace(f"Answer: {problem.answer}", "Answer: 100000")
    return [
        _sample(0, clean, "stop", temperature=0.6),
        _sample(0, looping, "length"),
        _sample(4, trace(make_problem(100, 4), random.Random(4)).replace("Answer:", "So"), "stop"),
        _sample(8, wrong, "stop"),
    ]


def test_family_rows_count_answers_and_thinking_loops() -> None:
    rows = {(row.family, row.temperature): row for row in family_rows(_samples())}
    greedy = rows[("arith", 0.0)]
    assert (greedy.n, greedy.closed, greedy.correct) == (3, 2, 1)
    assert (greedy.loop_in_thinking, greedy.copies, greedy.circling) == (1, 1, 0)
    assert greedy.loop_after == 0
    # The greedy loop is on a prompt the T=0.6 sample answers.
    assert greedy.thinking_loops_solved_elsewhere == 1
    assert rows[("arith", 0.6)].correct == 1 and rows[("all", 0.0)].n == 3


def test_detect_rows_put_the_detector_beside_the_judge() -> None:
    rows = {row.label: row for row in detect_rows(_samples(), lambda sample, offset: 0)}
    assert (rows["copies"].n, rows["copies"].detected) == (1, 1)
    assert rows["clean"].n == 3 and rows["circling"].n == 0
    assert len(rows["copies"].onset_errors) == 1
