import re

from loopfix.lab.stargraph import StarGraph, render
from loopfix.suites import arith_suite, check_answer, stargraph_suite


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
        assert item.checker == "boxed" and item.meta["steps"] >= 2
        assert int(item.answer or "") == replay(item.prompt or "") > 0
        assert check_answer("boxed", rf"... \boxed{{{item.answer}}}", item.answer, {}, True)


def test_stargraph_items_render_the_testbed_prompt() -> None:
    items = stargraph_suite(5, seed=1)
    assert [i.id for i in items] == [f"stargraph-1-{k}" for k in range(5)]
    for item in items:
        graph = StarGraph.from_dict(item.meta["graph"])
        assert item.prompt == render(graph.prompt_ids())
        assert item.checker == "stargraph"
