import pytest

from loopfix.lab.stargraph import render
from loopfix.suites import check_answer, stargraph_suite
from loopfix.suites.checkers import final_number, last_boxed


def test_boxed_takes_the_last_balanced_box_after_thinking() -> None:
    assert last_boxed(r"a \boxed{1} then \boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert last_boxed(r"cut \boxed{12") is None
    text = r"<think>maybe \boxed{7}</think> so \boxed{1,200}."
    assert check_answer("boxed", text, "1200", {}, True)
    assert not check_answer("boxed", r"<think>\boxed{1200}</think> no box", "1200", {}, True)


@pytest.mark.parametrize(
    ("checker", "text", "answer", "expected"),
    [
        ("exact", "  Paris. ", "paris", True),
        ("exact", "Paris, France", "Paris", False),
        ("numeric", "so it is 3.50 dollars", "3.5", True),
        ("numeric", "no number", "3", False),
        ("regex:^yes\\b", "yes indeed", None, True),
        ("exact", "anything", None, None),
        (None, "anything", "x", None),
    ],
)
def test_checkers(
    checker: str | None, text: str, answer: str | None, expected: bool | None
) -> None:
    assert check_answer(checker, text, answer, {}, True) is expected


def test_stargraph_checker_scores_the_walk_in_the_text() -> None:
    item = stargraph_suite(1, seed=3)[0]
    assert item.answer is not None
    assert check_answer("stargraph", item.answer, None, item.meta, stopped=True)
    assert not check_answer("stargraph", item.answer, None, item.meta, stopped=False)  # cut
    first = item.answer.split()[0]
    looping = " ".join([item.answer.split()[1], "back", first] * 3)
    assert not check_answer("stargraph", f"{first} {looping}", None, item.meta, True)
    assert render([0]) not in ("", None)


@pytest.mark.parametrize(
    ("text", "stopped", "read"),
    [
        (r"The answer is 7, so \boxed{8}.", True, "8"),  # a box wins over a phrase
        ("Answer: **12** apples. Then 3 more.", True, "12"),  # a phrase wins over the last number
        ("The answer is 5.\n\nThe final answer is 36 - 24 = 12.", True, "12"),  # last phrase
        ("So the answer is $1,200.", True, "1,200"),
        ("So, Mia has 7 marbles now.", True, "7"),  # no phrase: the last number
        ("Step 13: 9600 apples is 18000 apples. Step 14: 180", False, None),  # cut, no answer
        ("The answer is 22. Omar has 22 books now. Omar has 22", False, "22"),
        ("no number at all", True, None),
    ],
)
def test_final_number_reads_box_then_phrase_then_last_number(
    text: str, stopped: bool, read: str | None
) -> None:
    assert final_number(text, stopped) == read
    assert check_answer("final-number", text, read or "0", {}, stopped) is (read is not None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("17, 20, 23", True),
        ("5, 8, 11, 14, 17, 20, 23", True),  # the given terms repeated first
        ("The next numbers are: 17, 20, 23.", True),
        ("17, 20, 23, 26", False),  # ran on past the asked-for terms
        ("17, 20", False),
        ("17, 21, 23", False),
    ],
)
def test_sequence_checker_wants_exactly_the_next_terms(text: str, expected: bool) -> None:
    meta = {"given": [5, 8, 11, 14]}
    assert check_answer("sequence", text, "17, 20, 23", meta, True) is expected
