"""Built-in suites, generated from a seed (no download): `stargraph` and `arith`.

- `stargraph`: graphs from the testbed's generator (`loopfix.lab.stargraph`, pure Python), the
  prompt is the rendered token sequence, the graph travels in `meta` for the `stargraph` checker.
- `arith`: multi-step arithmetic word problems with exact integer answers, `boxed` checker.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from loopfix.lab.stargraph import make_graphs, render
from loopfix.suites.items import SuiteItem

__all__ = ["BUILTIN_SUITES", "arith_suite", "stargraph_suite"]

# The bundled testbed's task shape: G(3, 3).
STARGRAPH_ARMS, STARGRAPH_DEPTH = 3, 3


def stargraph_suite(n: int, seed: int) -> list[SuiteItem]:
    graphs = make_graphs(seed, n, STARGRAPH_ARMS, STARGRAPH_DEPTH)
    return [
        SuiteItem(
            id=f"stargraph-{seed}-{index}",
            prompt=render(graph.prompt_ids()),
            answer=render(graph.optimal_walk()[:-1]),
            checker="stargraph",
            meta={"graph": graph.to_dict(), "arms": STARGRAPH_ARMS, "depth": STARGRAPH_DEPTH},
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
                checker="boxed",
                meta={"steps": len(sentences) - 1},
            )
        )
    return items


BUILTIN_SUITES: dict[str, Callable[[int, int], list[SuiteItem]]] = {
    "stargraph": stargraph_suite,
    "arith": arith_suite,
}
