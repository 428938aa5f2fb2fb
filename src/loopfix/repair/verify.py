"""Verification by generation on held-out star-graph prompts, and paired comparisons.

Each prompt's walk is classified as the testbed evaluator does (success, loop, wrong stop,
illegal, cap without loop), so a comparison can say where the loops went. Pairs are the same
prompt under the same sampler seed; rescues/regressions are on success, with the exact McNemar
test from `loopfix.scan`. `StargraphPrompts` is the testbed's prompt sets for a `Verifier`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopfix.backends.hf import generate
from loopfix.lab.evaluate import classify, loop_detector_config
from loopfix.lab.stargraph import StarGraph, make_graphs, score_walk
from loopfix.records import DecodeSettings
from loopfix.repair.config import RepairConfig
from loopfix.scan.stats import mcnemar_exact

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from loopfix.lab.train import TrainConfig

__all__ = ["Outcomes", "StargraphPrompts", "compare_outcomes", "generate_outcomes"]


@dataclass(frozen=True)
class Outcomes:
    """One class per prompt, plus lengths and whether each walk hit the cap."""

    temperature: float
    classes: tuple[str, ...]
    lengths: tuple[int, ...]
    cut: tuple[bool, ...]

    @property
    def n(self) -> int:
        return len(self.classes)

    def summary(self) -> dict[str, Any]:
        counts = Counter(self.classes)
        return {
            "n": self.n,
            "loop_rate": counts["loop"] / self.n,
            "cut_rate": sum(self.cut) / self.n,
            "accuracy": counts["success"] / self.n,
            "mean_length": sum(self.lengths) / self.n,
            "outcomes": {
                name: counts[name]
                for name in ("success", "loop", "wrong_stop", "illegal", "cap_without_loop")
            },
        }


def generate_outcomes(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    graphs: Sequence[StarGraph],
    temperature: float,
    max_new_tokens: int,
    seed: int,
    batch_size: int,
) -> Outcomes:
    settings = DecodeSettings(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    detector = loop_detector_config(max_new_tokens)
    generations = generate(model, tokenizer, [g.prompt_ids() for g in graphs], settings, batch_size)
    classes, lengths, cut = [], [], []
    for graph, generation in zip(graphs, generations, strict=True):
        hit_cap = generation.finish_reason == "length"
        score = score_walk(graph, generation.tokens)
        classes.append(classify(score, generation.tokens, hit_cap, detector))
        lengths.append(len(generation.tokens))
        cut.append(hit_cap)
    return Outcomes(temperature, tuple(classes), tuple(lengths), tuple(cut))


def compare_outcomes(base: Outcomes, other: Outcomes) -> dict[str, Any]:
    """Paired: rescues/regressions on success, loops removed/added, and where base loops went."""
    pairs = list(zip(base.classes, other.classes, strict=True))
    rescues = sum(a != "success" and b == "success" for a, b in pairs)
    regressions = sum(a == "success" and b != "success" for a, b in pairs)
    removed = sum(a == "loop" and b != "loop" for a, b in pairs)
    added = sum(a != "loop" and b == "loop" for a, b in pairs)
    return {
        "rescues": rescues,
        "regressions": regressions,
        "mcnemar_p": mcnemar_exact(rescues, regressions),
        "loops_removed": removed,
        "loops_added": added,
        "loop_mcnemar_p": mcnemar_exact(removed, added),
        "base_loops_went_to": dict(Counter(b for a, b in pairs if a == "loop")),
    }


class StargraphPrompts:
    """The testbed's prompt sets: fresh graphs from `verify_seed` ("verify") and
    `verify_seed + 1` ("causal": the activation-level check and the screening)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        task: TrainConfig,
        config: RepairConfig,
    ) -> None:
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.graphs = {
            "verify": make_graphs(config.verify_seed, config.prompts, task.arms, task.depth),
            "causal": make_graphs(
                config.verify_seed + 1, config.causal_prompts, task.arms, task.depth
            ),
        }

    def generate(self, prompts: str, temperature: float, label: str) -> Outcomes:
        return generate_outcomes(
            self.model,
            self.tokenizer,
            self.graphs[prompts],
            temperature,
            self.config.max_new_tokens,
            self.config.verify_seed,
            self.config.gen_batch_size,
        )

    def compare(self, base: Outcomes, other: Outcomes) -> dict[str, Any]:
        return compare_outcomes(base, other)
