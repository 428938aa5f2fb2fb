"""Evaluate a star-graph testbed: success, loops, legal moves and length per temperature, and the
confidence flywheel.

Steps:
1. Draw fresh graphs from a seed the trainer never uses (training draws from seed + 1000).
2. Generate one walk per graph and temperature with the batched HF backend.
3. Score each walk (`score_walk`) and call it a loop when it hit the length cap while its tail is
   exactly periodic (`loopfix.detect.find_periodic_tail`).
4. Flywheel: teacher-force a prefix that ends with a wrong excursion followed by r verbatim
   repeats of it, and read P(enter the repeated arm again) at the root after each repeat.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from loopfix.atomic import write_json_atomic
from loopfix.backends.hf import generate
from loopfix.detect import DetectConfig, find_periodic_tail
from loopfix.lab.stargraph import (
    BACK_ID,
    PAD_ID,
    StarGraph,
    WalkScore,
    make_graph,
    make_graphs,
    score_walk,
    teacher_walk,
)
from loopfix.lab.train import TrainConfig
from loopfix.records import DecodeSettings

EVAL_SEED = 12345


@dataclass(frozen=True)
class TemperatureResult:
    temperature: float
    n: int
    success: float
    loop_rate: float
    legal_rate: float  # legal moves / all moves, pooled over walks
    valid_rate: float  # walks whose every move is legal
    cut_rate: float  # walks that hit the length cap
    mean_length: float
    outcomes: dict[str, int]  # success / loop / wrong_stop / illegal / cap_without_loop


@dataclass(frozen=True)
class LabEvaluation:
    settings: list[TemperatureResult]
    flywheel: list[float]  # P(continue the repeat) after 1..6 completed repeats
    flywheel_correct_arm: list[float]  # P(switch to the target's arm) at the same points
    max_new_tokens: int
    teacher_mean_length: float
    seed: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def write_json(self, path: Path) -> None:
        write_json_atomic(path, self.to_dict())


def testbed_config(model: PreTrainedModel) -> TrainConfig:
    """The training config saved beside a testbed checkpoint (defaults when absent)."""
    path = Path(str(getattr(model, "name_or_path", ""))) / "training.json"
    if path.is_file():
        return TrainConfig(**json.loads(path.read_text())["config"])
    return TrainConfig()


def loop_detector_config(max_new_tokens: int) -> DetectConfig:
    # A loop must fill the last two thirds of the cap (at most 60 tokens) with >= 3 repeats:
    # short enough to fire on a 48-token cap, long enough that two identical excursions in an
    # otherwise varied walk never count.
    return DetectConfig(max_period=24, min_repeats=3, min_span=min(60, 2 * max_new_tokens // 3))


def classify(score: WalkScore, walk: list[int], hit_cap: bool, detector: DetectConfig) -> str:
    """Where a walk went: success, loop, a stop at a wrong node, an illegal move, or the cap
    without a period."""
    if score.success:
        return "success"
    if hit_cap:
        return "loop" if find_periodic_tail(walk, detector) is not None else "cap_without_loop"
    return "wrong_stop" if score.valid else "illegal"


def evaluate_temperature(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    graphs: Sequence[StarGraph],
    settings: DecodeSettings,
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
) -> TemperatureResult:
    detector = loop_detector_config(settings.max_new_tokens)
    prompts = [graph.prompt_ids() for graph in graphs]
    generations = generate(model, tokenizer, prompts, settings, batch_size, on_batch)
    outcomes = dict.fromkeys(("success", "loop", "wrong_stop", "illegal", "cap_without_loop"), 0)
    legal = moves = valid = cut = 0
    lengths = []
    for graph, generation in zip(graphs, generations, strict=True):
        hit_cap = generation.finish_reason == "length"
        score = score_walk(graph, generation.tokens)
        outcomes[classify(score, generation.tokens, hit_cap, detector)] += 1
        legal, moves, valid = legal + score.legal_moves, moves + score.moves, valid + score.valid
        cut += hit_cap
        lengths.append(len(generation.tokens))
    n = len(graphs)
    return TemperatureResult(
        temperature=settings.temperature,
        n=n,
        success=outcomes["success"] / n,
        loop_rate=outcomes["loop"] / n,
        legal_rate=legal / moves,
        valid_rate=valid / n,
        cut_rate=cut / n,
        mean_length=float(np.mean(lengths)),
        outcomes=outcomes,
    )


def repeat_probe_batch(
    config: TrainConfig, count: int, seed: int, repeats: int
) -> tuple[torch.Tensor, list[tuple[list[int], int, int]]]:
    """Prompt + teacher walk up to its first return to the root, then `repeats` verbatim copies
    of that wrong excursion. For each sequence: the positions of the root that ends each copy,
    the first node of the repeated arm, and the first node of the target's arm."""
    rng = random.Random(seed)
    sequences: list[list[int]] = []
    probes: list[tuple[list[int], int, int]] = []
    while len(sequences) < count:
        graph = make_graph(rng, config.arms, config.depth)
        walk = teacher_walk(rng, graph, config.p_correct, config.p_backtrack)
        if BACK_ID not in walk:
            continue
        first_return = walk.index(BACK_ID) + 1
        excursion = walk[1 : first_return + 1]
        prompt = graph.prompt_ids()
        sequences.append(prompt + walk[: first_return + 1] + excursion * repeats)
        ends = [len(prompt) + first_return + r * len(excursion) for r in range(repeats + 1)]
        probes.append((ends, excursion[0], graph.arms[graph.target_arm][0]))
    width = max(len(s) for s in sequences)
    ids = torch.full((count, width), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence)
    return ids, probes


@torch.inference_mode()
def flywheel(
    model: PreTrainedModel,
    config: TrainConfig,
    count: int = 300,
    seed: int = 4242,
    repeats: int = 6,
) -> tuple[list[float], list[float]]:
    """Mean P(enter the repeated arm again) and P(enter the target's arm) after 1..repeats
    completed verbatim repeats of a wrong excursion (teacher-forced, full distribution)."""
    ids, probes = repeat_probe_batch(config, count, seed, repeats)
    probabilities = torch.softmax(model(input_ids=ids.to(model.device)).logits.float(), -1).cpu()
    copy = np.zeros((count, repeats))
    correct = np.zeros((count, repeats))
    for row, (ends, repeated_arm, target_arm) in enumerate(probes):
        for r in range(1, repeats + 1):
            copy[row, r - 1] = probabilities[row, ends[r], repeated_arm]
            correct[row, r - 1] = probabilities[row, ends[r], target_arm]
    return copy.mean(0).tolist(), correct.mean(0).tolist()


def teacher_mean_length(config: TrainConfig, count: int = 2000, seed: int = EVAL_SEED) -> float:
    rng = random.Random(seed)
    lengths = [
        len(
            teacher_walk(
                rng,
                make_graph(rng, config.arms, config.depth),
                config.p_correct,
                config.p_backtrack,
            )
        )
        for _ in range(count)
    ]
    return float(np.mean(lengths))


def evaluate_testbed(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    n: int = 1000,
    seed: int = EVAL_SEED,
    temperatures: Sequence[float] = (0.0, 0.6, 1.0),
    max_new_tokens: int = 48,
    batch_size: int = 250,
    on_batch: Callable[[int], None] | None = None,
) -> LabEvaluation:
    config = testbed_config(model)
    graphs = make_graphs(seed, n, config.arms, config.depth)
    results = [
        evaluate_temperature(
            model,
            tokenizer,
            graphs,
            DecodeSettings(temperature=t, max_new_tokens=max_new_tokens, seed=seed),
            batch_size,
            on_batch,
        )
        for t in temperatures
    ]
    copy, correct = flywheel(model, config)
    return LabEvaluation(
        settings=results,
        flywheel=copy,
        flywheel_correct_arm=correct,
        max_new_tokens=max_new_tokens,
        teacher_mean_length=teacher_mean_length(config),
        seed=seed,
    )
