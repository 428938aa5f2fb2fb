import re

from loopfix.lab.stargraph import StarGraph, render
from loopfix.suites import arith_suite, check_answer, sequence_suite, stargraph_suite


def replay(prompt: str) -> int:
    """Recompute an arith answer from its sentences, independently of the generator."""
    value = int(re.search(r"has (\d+)", prompt).group(1))  # type: ignore[union-attr]
    for sentence in re.findall(r"Then they ([^.]+)\.", prompt):
        number = int(re.search(r"\d+", sentence).group(0))  # type: ignore[union-attr]
        if sentence.startswith("get"):
            value += number
        elif sentence.startswith("give"):
            value -= number
        elif sentence.startswith("trade"):
            value *= number
        else:
            assert value % number == 0
            value //= number
    return value


def test_arith_is_seeded_multi_step_and_exact() -> None:
    items = arith_suite(40, seed=7)
    assert items == arith_suite(40, seed=7) and items != arith_suite(40, seed=8)
    for item in items:
        assert item.checker == "final-number" and item.meta["steps"] >= 2
        assert int(item.answer or "") == replay(item.prompt or "") > 0
        assert check_answer(item.checker, rf"... \boxed{{{item.answer}}}", item.answer, {}, True)


def test_stargraph_items_render_the_testbed_prompt() -> None:
    items = stargraph_suite(5, seed=1)
    assert [i.id for i in items] == [f"stargraph-1-{k}" for k in range(5)]
    for item in items:
        graph = StarGraph.from_dict(item.meta["graph"])
        assert item.prompt == render(graph.prompt_ids())
        assert item.checker == "stargraph"


def test_sequence_items_follow_their_rule_and_are_checkable() -> None:
    items = sequence_suite(60, seed=2)
    assert items == sequence_suite(60, seed=2) and items != sequence_suite(60, seed=3)
    assert {item.meta["rule"] for item in items} == {"up", "down", "growing"}
    for item in items:
        terms = item.meta["given"] + [int(term) for term in (item.answer or "").split(", ")]
        steps = [b - a for a, b in zip(terms, terms[1:], strict=False)]
        if item.meta["rule"] == "growing":
            assert all(b - a == 1 for a, b in zip(steps, steps[1:], strict=False))
        else:
            assert len(set(steps)) == 1
        assert all(0 < term < 1000 for term in terms)
        wanted = len(terms) - len(item.meta["given"])
        assert f"the next {wanted} numbers" in (item.prompt or "") and 5 <= wanted <= 8
        assert check_answer(item.checker, f"{item.answer}.", item.answer, item.meta, True)
