import json
import re
from pathlib import Path

import pytest

from loopfix.detect import LoopVerdict
from loopfix.records import Sample
from loopfix.scan.task_families import FamilyRow, family_rows, format_family_rows, main
from loopfix.suites import BUILTIN_SUITES, check_answer, load_suite
from loopfix.suites.tasks import (
    DAYS,
    FAMILIES,
    family_of,
    item_of,
    list_items,
    starts_with_answer,
    tasks_suite,
)

JUDGED = Path(__file__).parents[1] / "data" / "smollm2_tasks_judged.jsonl"


def judge(text: str, items: list[str], family: str, stopped: bool = True) -> bool | None:
    meta = {"family": family, "items": items}
    return check_answer("tasks", text, ", ".join(items), meta, stopped)


def expected_from_prompt(question: str) -> list[str]:
    """Recompute an item's answer from its question, independently of the generator."""
    if found := re.fullmatch(r"Count from (\d+) to (\d+)\.", question):
        return [str(k) for k in range(int(found[1]), int(found[2]) + 1)]
    if found := re.fullmatch(r'Write "(\w+)" (\d+) times, numbered from 1 to (\d+)\.', question):
        assert found[2] == found[3]
        return [found[1]] * int(found[2])
    if found := re.fullmatch(r"Copy this list exactly: (.+)", question):
        return found[1].split(", ")
    found = re.fullmatch(r"List the days of the week from (\w+) to (\w+)\.", question)
    assert found, question
    start = DAYS.index(found[1])
    week = [DAYS[(start + k) % 7] for k in range(7)]
    return week[: week.index(found[2]) + 1]


def test_tasks_is_a_seeded_builtin_suite_with_families_in_turn() -> None:
    assert BUILTIN_SUITES["tasks"] is tasks_suite
    items = load_suite("tasks", 40, seed=3)
    assert items == tasks_suite(40, 3) and items != tasks_suite(40, 4)
    assert tasks_suite(12, 3) == items[:12]  # item i depends on (seed, i) only
    for index, item in enumerate(items):
        family = FAMILIES[index % len(FAMILIES)]
        assert item.id == f"tasks-{family}-3-{index}" and family_of(item.id) == family
        assert item.meta["family"] == family and item.checker == "tasks"
        assert item_of(item.id) == item
        assert item.messages and item.messages[-1]["role"] == "user"
        assert item.meta["items"] == expected_from_prompt(item.messages[-1]["content"])
        assert item.answer == ", ".join(item.meta["items"])
        assert judge(item.answer, item.meta["items"], family)


def test_copy_items_repeat_a_pattern() -> None:
    for item in tasks_suite(80, 0):
        if item.meta["family"] == "copy":
            items = item.meta["items"]
            period = len(set(items))
            assert len(items) % period == 0 and len(items) >= 2 * period
            assert items == items[:period] * (len(items) // period)


@pytest.mark.parametrize(
    "text",
    [
        "3, 4, 5, 6",
        "3, 4, 5, 6.",
        "3, 4, 5 and 6",
        "3 4 5 6",
        "Here are the numbers from 3 to 6: 3, 4, 5, 6",
        "Sure! Counting from 3 to 6:\n\n1. 3\n2. 4\n3. 5\n4. 6\n\nI counted from 3 to 6.",
        "- 3\n- 4\n- 5\n- 6",
        "**3**, **4**, **5**, **6**",
    ],
)
def test_formats_a_model_uses_are_read(text: str) -> None:
    assert judge(text, ["3", "4", "5", "6"], "count")


@pytest.mark.parametrize(
    "text",
    [
        "3, 4, 5, 6, 7",  # ran on past the stop
        "3, 4, 5",  # stopped early
        "3, 4, 5, 6\n\nThe numbers are: 1, 2, 3, 4, 5, 6",  # a second, contradicting list
        "3, 5, 4, 6",
        "",
    ],
)
def test_wrong_lists_are_wrong(text: str) -> None:
    assert judge(text, ["3", "4", "5", "6"], "count") is False


def test_a_cut_answer_is_wrong_even_when_its_list_is_right() -> None:
    assert judge("3, 4, 5, 6", ["3", "4", "5", "6"], "count", stopped=False) is False
    assert starts_with_answer("3, 4, 5, 6, 7, 8, 9, 10", {"family": "count", "items": ["3", "4"]})


def test_word_families_ignore_prose_but_not_stray_items() -> None:
    days = ["Friday", "Saturday", "Sunday"]
    assert judge("The days from Friday to Sunday are: Friday, Saturday, Sunday.", days, "days")
    assert not judge("Friday, Saturday, Sunday, Monday", days, "days")
    words = ["cat", "cat", "cat"]
    assert judge("1. Cat\n2. Cat\n3. Cat\n\nThe cat is a cat.", words, "repeat")
    assert judge("cat cat cat", words, "repeat")
    assert not judge("1. cat\n2. cat\n3. dog", words, "repeat")  # any one-word entry counts
    pattern = ["12", "30", "12", "30"]
    assert judge("The list is: 12, 30, 12, 30", pattern, "copy")
    assert not judge("The list is: 12, 13, 30, 12, 30", pattern, "copy")


def test_list_items_splits_lines_markers_intros_and_conjunctions() -> None:
    text = "Here it is:\n* Red\n2) blue and green\nLabel: one; two."
    assert list_items(text) == ["red", "blue", "green", "one", "two"]
    assert list_items("The list is: 1. red, 2. up, 3. red") == ["red", "up", "red"]
    assert list_items("1. 1. Blue\n2. 2. Blue") == ["blue", "blue"]


def test_the_checker_agrees_with_a_human_on_real_smollm2_outputs() -> None:
    lines = [json.loads(line) for line in JUDGED.read_text().splitlines()]
    assert len(lines) >= 46
    assert {line["meta"]["family"] for line in lines} == set(FAMILIES)
    assert {line["human_correct"] for line in lines} == {True, False}
    for line in lines:
        stopped = line["finish_reason"] == "stop"
        got = check_answer("tasks", line["text"], None, line["meta"], stopped)
        assert got is line["human_correct"], (line["id"], line["note"])
        starts = starts_with_answer(line["text"], line["meta"])
        assert starts is line["human_starts_with_answer"], (line["id"], line["note"])


def _sample(prompt_id: str, temperature: float, text: str, cut: bool, looping: bool) -> Sample:
    item = item_of(prompt_id)
    stopped = not cut
    return Sample(
        prompt_id=prompt_id,
        sample_index=0,
        settings={"temperature": temperature},
        tokens=[1],
        text=text,
        finish_reason="length" if cut else "stop",
        loop=LoopVerdict(looping=looping),
        correct=check_answer("tasks", text, item.answer, item.meta, stopped),
    )


def test_family_rows_count_loops_that_cost_an_answer() -> None:
    count, days = tasks_suite(4, 0)[0], tasks_suite(4, 0)[3]
    run_on = count.answer + ", " + ", ".join(str(k) for k in range(100, 140))
    samples = [
        _sample(count.id, 0.0, run_on, cut=True, looping=True),
        _sample(count.id, 0.6, count.answer or "", cut=False, looping=False),
        _sample(days.id, 0.0, "Monday, Monday, Monday", cut=True, looping=True),
        _sample(days.id, 0.6, days.answer or "", cut=False, looping=False),
    ]
    rows = {(row.family, row.temperature): row for row in family_rows(samples)}
    assert rows["count", 0.0] == FamilyRow(
        family="count",
        temperature=0.0,
        n=1,
        success=0,
        loop=1,
        cut=1,
        loops_solved_elsewhere=1,
        loops_with_answer=1,
    )
    assert rows["days", 0.0].loops_with_answer == 0
    assert rows["all", 0.6].success == 2 and rows["all", 0.0].loop == 2
    assert "| 0 | all | 2 | 0 (0%) | 2 (100%) | 2 (100%) | 2 of 2 | 1 of 2 |" in (
        format_family_rows(family_rows(samples))
    )


def test_main_reads_runs_and_counts_a_shared_sample_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count = tasks_suite(1, 0)[0]
    greedy = _sample(count.id, 0.0, count.answer or "", cut=False, looping=False)
    sampled = _sample(count.id, 0.6, "1, 2", cut=False, looping=False)
    for name, samples in (("a", [greedy, sampled]), ("b", [sampled])):
        (tmp_path / name).mkdir()
        lines = [json.dumps(sample.to_dict()) for sample in samples]
        (tmp_path / name / "records.jsonl").write_text("\n".join(lines) + "\n")
    main([str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert "| 0 | count | 1 | 1 (100%) |" in out and "| 0.6 | count | 1 | 0 (0%) |" in out
