import pytest

from loopfix.lab.stargraph import render
from loopfix.suites import check_answer, stargraph_suite
from loopfix.suites.checkers import last_boxed


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
