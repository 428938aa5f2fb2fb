"""Built-in suites, generated from a seed (no download): `stargraph`, `arith`, `sequence`,
`tasks` and `think`.

- `stargraph`: graphs from the testbed's generator (`loopfix.lab.stargraph`, pure Python), the
  prompt is the rendered token sequence, the graph travels in `meta` for the `stargraph` checker.
- `arith`: multi-step arithmetic word problems with exact integer answers, `final-number`
  checker (a `\\boxed{}` answer, else an answer phrase, else the last number).
- `sequence`: continue a number sequence by exactly K terms, `sequence` checker. Enumerating
  is what chat models run away with: they keep listing terms past K, or repeat the list.
- `tasks`: exact short lists a 135M chat model can write and runs on past (count from A to B,
  a word K times, ...; `loopfix.suites.tasks`, `tasks` checker).
- `think`: problems with checkable answers worked through inside `<think> ... </think>`, for
  the thinking model `loopfix:smollm2-think` (`loopfix.suites.think`, `think` checker: the
  answer after `</think>` only).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from loopfix.lab.stargraph import make_graphs, render
from loopfix.suites.items import SuiteItem
from loopfix.suites.tasks import tasks_suite
from loopfix.suites.think import think_suite

__all__ = ["BUILTIN_SUITES", "arith_suite", "sequence_suite", "stargraph_suite"]

# The bundled testbed's task shape: G(3, 3).
STARGRAPH_ARMS, STARGRAPH_DEPTH = 3, 3


def stargraph_suite(
    n: int,
    seed: int,
    arms: int = STARGRAPH_ARMS,
    depth: int = STARGRAPH_DEPTH,
    hints: bool = False,
) -> list[SuiteItem]:
    """`n` graphs of G(arms, depth); the built-in suite is G(3, 3), another shape is what a
    testbed trained on it is evaluated on (`scan.testbed`). `hints`: the walks are scored
    without the `? ... :` hints a testbed trained with them writes (`lab.hints`)."""
    graphs = make_graphs(seed, n, arms, depth)
    return [
        SuiteItem(
            id=f"stargraph-{seed}-{index}",
            prompt=render(graph.prompt_ids()),
            answer=render(graph.optimal_walk()[:-1]),
            checker="stargraph",
            meta={"graph": graph.to_dict(), "arms": arms, "depth": depth}
            | ({"hints": True} if hints else {}),
        )
        for index, graph in enumerate(graphs)
    ]


_NAMES = ("Mia", "Omar", "Lena", "Ravi", "Sofia", "Jonas", "Aiko", "Tomas", "Nadia", "Yusuf")
_ITEMS = ("apples", "marbles", "stickers", "books", "coins", "shells", "pencils", "cards")


def _arith_step(rng: random.Random, value: int) -> tuple[str, int]:
    """One operation on the running amount: its sentence and the new amount (always an integer
    between 1 and 5,000, so every answer is exact)."""
    divisors = [d for d in range(2, 7) if value % d == 0]
    choices = ["add"] + (["subtract"] if value > 2 else []) + (["divide"] if divisors else [])
    choices += ["multiply"] if value <= 1250 else []
    operation = rng.choice(choices)
    if operation == "add":
        amount = rng.randint(2, 40)
        return f"Then they get {amount} more.", value + amount
    if operation == "subtract":
        amount = rng.randint(1, value - 1)
        return f"Then they give {amount} away.", value - amount
    if operation == "multiply":
        factor = rng.randint(2, 4)
        return f"Then they trade them for {factor} times as many.", value * factor
    divisor = rng.choice(divisors)
    return f"Then they share them equally among {divisor} boxes and keep one box.", value // divisor


def arith_suite(n: int, seed: int) -> list[SuiteItem]:
    rng = random.Random(seed)
    items = []
    for index in range(n):
        name, thing = rng.choice(_NAMES), rng.choice(_ITEMS)
        value = rng.randint(5, 60)
        sentences = [f"{name} has {value} {thing}."]
        for _ in range(rng.randint(2, 4)):
            sentence, value = _arith_step(rng, value)
            sentences.append(sentence)
        question = (
            f"How many {thing} does {name} have now? "
            "Think step by step and put the final answer in \\boxed{}."
        )
        items.append(
            SuiteItem(
                id=f"arith-{seed}-{index}",
                prompt=" ".join([*sentences, question]),
                answer=str(value),
                checker="final-number",
                meta={"steps": len(sentences) - 1},
            )
        )
    return items


def _sequence_terms(rng: random.Random, count: int) -> tuple[str, list[int]]:
    """A rule and the first `count` terms it makes (positive, below 1,000: no thousands
    separators for the checker to misread)."""
    rule = rng.choice(("up", "down", "growing"))
    if rule == "up":
        start, step = rng.randint(1, 30), rng.randint(2, 12)
        return rule, [start + step * index for index in range(count)]
    if rule == "down":
        start, step = rng.randint(100, 150), rng.randint(3, 8)
        return rule, [start - step * index for index in range(count)]
    # Differences that grow by one: 3, 5, 8, 12, 17, ...
    terms = [rng.randint(1, 20)]
    first_step = rng.randint(1, 5)
    for index in range(count - 1):
        terms.append(terms[-1] + first_step + index)
    return rule, terms


def sequence_suite(n: int, seed: int) -> list[SuiteItem]:
    rng = random.Random(seed)
    items = []
    for index in range(n):
        given_count, wanted = rng.randint(4, 5), rng.randint(5, 8)
        rule, terms = _sequence_terms(rng, given_count + wanted)
        given, expected = terms[:given_count], terms[given_count:]
        prompt = (
            f"Continue the sequence {', '.join(map(str, given))} with the next {wanted} "
            f"numbers. Write only those {wanted} numbers, separated by commas, and then stop."
        )
        items.append(
            SuiteItem(
                id=f"sequence-{seed}-{index}",
                prompt=prompt,
                answer=", ".join(map(str, expected)),
                checker="sequence",
                meta={"rule": rule, "given": given},
            )
        )
    return items


BUILTIN_SUITES: dict[str, Callable[[int, int], list[SuiteItem]]] = {
    "stargraph": stargraph_suite,
    "arith": arith_suite,
    "sequence": sequence_suite,
    "tasks": tasks_suite,
    "think": think_suite,
}
