"""Matched branch pairs on the star-graph task: copy the last excursion vs explore.

A pair shares a prefix (prompt + a teacher walk cut where it has just returned to the root from
a wrong excursion). The repetitive branch repeats that excursion verbatim; the productive
branch explores other excursions (never the target arm, never EOS), cut to the same length.
Both branches are open-ended and equally long, so the difference between them is "copy vs
explore" and not "keep going vs stop" (the feasibility study's trap). Probed positions skip the
first excursion length in both branches: the repetition mode only shows from the second copy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from loopfix.lab.stargraph import BACK_ID, StarGraph, make_graph, teacher_walk
from loopfix.lab.train import TrainConfig

__all__ = ["BranchPair", "decision_offsets", "make_pairs", "normal_walks"]


@dataclass(frozen=True)
class BranchPair:
    prefix: list[int]
    repetitive: list[int]
    productive: list[int]
    skip: int
    """Branch tokens before the first probed position (the first excursion's length)."""

    def branch(self, which: str) -> list[int]:
        return self.repetitive if which == "repetitive" else self.productive

    def targets(self, which: str, positions: str) -> list[int]:
        """Offsets of the branch tokens whose predicting states are probed and scored."""
        branch = self.branch(which)
        if positions == "decision":
            return [j for j in decision_offsets(branch, self.prefix[-1]) if j >= self.skip]
        return list(range(self.skip, len(branch)))


def _excursion(rng: random.Random, graph: StarGraph, arm: int, p_backtrack: float) -> list[int]:
    """Enter `arm`, back out after each node with p_backtrack (always at the leaf)."""
    nodes = graph.arms[arm]
    path: list[int] = []
    for position, node in enumerate(nodes):
        path.append(node)
        if position == len(nodes) - 1 or rng.random() < p_backtrack:
            return path + [BACK_ID, graph.root]
    raise AssertionError("unreachable")


def _explore(
    rng: random.Random, graph: StarGraph, avoid: list[int], length: int, p: float
) -> list[int]:
    """Wrong-arm excursions until `length` tokens, the first one differing from `avoid`."""
    wrong = [a for a in range(len(graph.arms)) if a != graph.target_arm]
    tokens: list[int] = []
    while len(tokens) < length:
        step = _excursion(rng, graph, rng.choice(wrong), p)
        if not tokens and step == avoid:
            continue
        tokens += step
    return tokens[:length]


def decision_offsets(branch: list[int], root: int) -> list[int]:
    """Offsets of the branch tokens chosen right after `back root`: the arm choices (the
    prefix already ends with `back root`, so offset 0 is one)."""
    context = [BACK_ID, root, *branch]
    return [j for j in range(len(branch)) if context[j] == BACK_ID and context[j + 1] == root]


def make_pairs(config: TrainConfig, seed: int, count: int, repeats: int) -> list[BranchPair]:
    rng = random.Random(seed)
    pairs: list[BranchPair] = []
    while len(pairs) < count:
        graph = make_graph(rng, config.arms, config.depth)
        walk = teacher_walk(rng, graph, config.p_correct, config.p_backtrack)
        returns = [i for i in range(1, len(walk)) if walk[i - 1] == BACK_ID]
        if not returns:
            continue
        cut = rng.choice(returns)
        start = max([0] + [r for r in returns if r < cut])
        segment = walk[start + 1 : cut + 1]
        repetitive = segment * repeats
        productive = _explore(rng, graph, segment, len(repetitive), config.p_backtrack)
        pairs.append(
            BranchPair(
                prefix=graph.prompt_ids() + walk[: cut + 1],
                repetitive=repetitive,
                productive=productive,
                skip=len(segment),
            )
        )
    return pairs


def normal_walks(config: TrainConfig, seed: int, count: int) -> list[tuple[list[int], int]]:
    """(prompt + complete teacher walk, prompt length): the normal text of the KL check."""
    rng = random.Random(seed)
    walks = []
    for _ in range(count):
        graph = make_graph(rng, config.arms, config.depth)
        prompt = graph.prompt_ids()
        walks.append(
            (prompt + teacher_walk(rng, graph, config.p_correct, config.p_backtrack), len(prompt))
        )
    return walks
