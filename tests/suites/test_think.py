"""The `think` suite, its checker and the step judge, on the teacher's own traces (which must
judge clean and correct) and on outputs written to loop in known ways."""

from __future__ import annotations

import random
import re

import pytest

from loopfix.lab.think_teacher import (
    CIRCLE_EXIT,
    CIRCLE_MAX,
    OPERAND_MAX,
    THINK_FAMILIES,
    make_problem,
    trace,
)
from loopfix.suites.think import check_think, think_family, think_item, think_suite
from loopfix.suites.think_judge import facts, judge_steps, split_steps


def _problem_and_trace(index: int, circle_share: float = 0.0) -> tuple[object, str]:
    problem = make_problem(7, index)
    return problem, trace(problem, random.Random(index), circle_share)


def test_items_depend_on_seed_and_index_only() -> None:
    assert think_suite(8, 3) == think_suite(12, 3)[:8]
    assert think_suite(4, 3) != think_suite(4, 4)
    families = [think_family(item.id) for item in think_suite(8, 0)]
    assert families == [*THINK_FAMILIES, *THINK_FAMILIES]
    item = think_item(0, 1)
    assert item.checker == "think" and item.meta == {"family": "word"}
    assert item.messages is not None and "<think>" in item.messages[0]["content"]


@pytest.mark.parametrize("index", range(40))
def test_the_teachers_traces_are_correct_and_judge_clean(index: int) -> None:
    problem, text = _problem_and_trace(index)
    meta = {"family": problem.family}
    assert check_think(text, problem.answer, meta, stopped=True)
    assert not check_think(text, problem.answer, meta, stopped=False)  # cut: no answer
    judgement = judge_steps(text)
    assert judgement.label == "clean" and judgement.closed
    assert judgement.steps == text.count("\n") - 2  # every line between the tags is a step


def test_the_arithmetic_is_the_answer_counted_one_at_a_time() -> None:
    for index in range(0, 80, 4):  # arith
        problem = make_problem(9, index)
        value = int(re.search(r"Start with (\d+)", problem.question).group(1))
        for step in problem.steps:
            head, counted = step.rstrip(".").split(": ")
            left, symbol, operand = head.split()
            assert int(left) == value and 2 <= int(operand) <= OPERAND_MAX
            sign = 1 if symbol == "+" else -1
            expected = [value + sign * k for k in range(1, int(operand) + 1)]
            assert [int(n) for n in counted.split(", ")] == expected
            value = expected[-1]
        assert str(value) == problem.answer


def test_a_circle_lasts_at_least_two_lines_and_its_length_is_geometric() -> None:
    problem = make_problem(9, 1)
    said = {*problem.steps, *problem.paraphrases}
    circle_lines = []
    for seed in range(400):
        lines = trace(problem, random.Random(seed), 1.0).split("\n")
        # Every step is written once; each other line that states a step is the circle's.
        circle_lines.append(sum(line in said for line in lines) - len(problem.steps))
    assert min(circle_lines) >= 2 and max(circle_lines) <= CIRCLE_MAX
    mean_after_two = sum(n - 2 for n in circle_lines) / len(circle_lines)
    # Geometric with exit CIRCLE_EXIT from the second line: mean (1 - p) / p extra lines.
    assert abs(mean_after_two - (1 - CIRCLE_EXIT) / CIRCLE_EXIT) < 1.0


def test_an_answer_inside_an_unclosed_thought_is_no_answer() -> None:
    problem, text = _problem_and_trace(0)
    unclosed = text.replace("</think>", "")
    assert not check_think(unclosed, problem.answer, {"family": "arith"}, stopped=True)
    wrong = text.replace(f"Answer: {problem.answer}", "Answer: 100000")
    assert not check_think(wrong, problem.answer, {"family": "arith"}, stopped=True)


def test_a_path_answer_is_the_towns_in_order() -> None:
    meta = {"family": "path"}
    assert check_think("<think>\nx\n</think>\nAnswer: B, C, D", "B, C, D", meta, True)
    assert check_think("<think>\nx\n</think>\nThe path is B - C - D.", "B, C, D", meta, True)
    assert not check_think("<think>\nx\n</think>\nAnswer: B, D, C", "B, C, D", meta, True)


def test_facts_are_numbers_and_towns() -> None:
    assert facts("He buys 5: 12 + 5 = 17.") == {"5", "12", "17"}
    assert facts("Go to K, then C.") == {"K", "C"}


def test_a_verbatim_loop_to_the_end_is_copies_with_its_onset() -> None:
    _, text = _problem_and_trace(0)
    lines = text.split("\n")  # <think>, step 1, step 2, ...
    head = "\n".join(lines[:3])
    looped = head + "\n" + "\n".join([lines[1], lines[2]] * 3) + "\n" + lines[1][:4]
    judgement = judge_steps(looped)
    assert judgement.label == "copies" and not judgement.closed
    assert judgement.run == 6 and judgement.onset == len(head) + 1


def test_restating_in_other_words_is_circling() -> None:
    problem = make_problem(7, 1)  # word
    steps = problem.steps
    text = "<think>\n" + "\n".join(
        [
            steps[0],
            steps[1],
            problem.paraphrases[1],
            steps[0],
            problem.paraphrases[0],
            problem.paraphrases[1],
            "",
        ]
    )
    judgement = judge_steps(text)
    assert judgement.label == "circling" and judgement.run == 4


def test_one_recheck_then_progress_is_clean_and_a_closed_thought_is_clean() -> None:
    _, text = _problem_and_trace(0)
    lines = text.split("\n")
    recheck = "\n".join([*lines[:3], f"Check: {lines[2]} Correct.", lines[2], *lines[3:]])
    assert judge_steps(recheck).label == "clean"
    # Three restatements, then the thinking closes: the model moved on.
    moved_on = "\n".join([*lines[:3], lines[1], lines[2], lines[1], "</think>", "Answer: 3"])
    assert judge_steps(moved_on).label == "clean"


def test_a_teacher_that_circles_writes_a_no_progress_run() -> None:
    runs = []
    for index in range(40):
        _, text = _problem_and_trace(index, circle_share=1.0)
        judgement = judge_steps(text)
        assert judgement.closed and judgement.label == "clean"  # it finishes after circling
        runs.append(max(_runs(judgement.new)))
    assert min(runs) >= 2  # a circle restates at least two earlier steps
    assert sum(run >= 3 for run in runs) > len(runs) / 2  # most are long enough to judge


def _runs(new: tuple[bool, ...]) -> list[int]:
    lengths, current = [0], 0
    for added in new:
        current = 0 if added else current + 1
        lengths.append(current)
    return lengths


def test_the_cut_last_line_is_not_a_step() -> None:
    steps, closed = split_steps("<think>\n12 + 4 = 16.\n16 * 3 = 4")
    assert [step.text for step in steps] == ["12 + 4 = 16."] and not closed
