"""The testbed source (`--source testbed`): branches from the star-graph teacher.

A pair shares a prefix (prompt + a teacher walk cut where it has just returned to the root from
a wrong excursion). The repetitive branch repeats that excursion verbatim; the productive
branch explores other excursions (never the target arm, never EOS), cut to the same length.
Probed positions skip the first excursion length in both branches: the repetition mode only
shows from the second copy. Training pairs, held-out pairs and the normal walks of the KL check
come from different seeds (`branch_seed`, +1, +2), so from different graphs; verification runs
on fresh graphs (the `stargraph` suite at `verify_seed`, +1 for the causal prompts).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

from loopfix.lab.config import TrainConfig
from loopfix.lab.stargraph import BACK_ID, PAD_ID, StarGraph, make_graph, teacher_walk
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.sources.base import BranchPair, NormalText, SourceInputs
from loopfix.repair.sources.description import TestbedBranches
from loopfix.scan import ScanConfig
from loopfix.scan.testbed import testbed_config, testbed_suite
from loopfix.stages import StageClock

if TYPE_CHECKING:
    from loopfix.backends.hf import HFBackend

__all__ = ["TestbedSource", "make_pairs", "normal_walks"]


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


def normal_walks(config: TrainConfig, seed: int, count: int) -> list[NormalText]:
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


class TestbedSource:
    name = "testbed"

    def build(
        self,
        generator: HFBackend,
        model_spec: str,
        out: Path,
        config: RepairConfig,
        clock: StageClock,
    ) -> SourceInputs:
        model = generator.model
        if "back" not in generator.tokenizer.get_vocab():
            raise RepairInputError(
                f"{model_spec} is not a star-graph testbed, so there is no teacher to build "
                "branches from: pass --suite SUITE (and optionally --records "
                "RUN_DIR/records.jsonl) to build them from scan records of this model"
            )
        task = testbed_config(model)
        with clock.stage("branches"):
            train = make_pairs(task, config.branch_seed, config.train_pairs, config.repeats)
            heldout = make_pairs(
                task, config.branch_seed + 1, config.heldout_pairs, config.proxy_repeats
            )
            walks = normal_walks(task, config.branch_seed + 2, config.kl_walks)
        description = TestbedBranches(
            self.name,
            "mean difference of matched branches (copy vs explore), loopfix.repair",
            len(train),
            len(heldout),
            len(walks),
        )
        # Fresh graphs the branches never saw, scanned like any suite, so each walk is judged
        # by the scan's loop definition and the star graph's outcome classes.
        prompt_sets = {
            "verify": testbed_suite(model, config.prompts, config.verify_seed),
            "causal": testbed_suite(model, config.causal_prompts, config.verify_seed + 1),
        }
        scan = ScanConfig(model=model_spec, suite="stargraph", max_new_tokens=config.cap)
        return SourceInputs(config, train, heldout, walks, PAD_ID, prompt_sets, scan, description)
