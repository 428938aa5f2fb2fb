"""Evaluate a star-graph testbed (`loopfix lab eval`): success, loops, legal moves and length per
temperature, and the confidence flywheel. It lives in `scan`, not `lab`: it is a scan of the
`stargraph` suite, and `lab` (the task, tokenizer, trainer and settings) sits below `scan`.

Steps:
1. Draw fresh graphs from a seed the trainer never uses (training draws from seed + 1000): the
   built-in `stargraph` suite, in the testbed's shape (a G(5, 5) testbed on G(5, 5) graphs,
   written as a suite file into the scan's folder).
2. Scan them with `loopfix.scan.run_scan` (one walk per graph and temperature, on the HF decode
   engine), so a walk is judged exactly as every other scan judges a sample: loop by
   `loopfix.scan.summary.is_loop`, class by the star graph's outcome classifier.
3. Add what only a walk has: legal moves (`score_walk` on the walk read back from the text),
   and the consecutive-repeat rate: of the pairs of consecutive decisions at the root within one
   walk (the first move, and each move after `back root`), the share that enter the same arm
   again (`stargraph.arm_choices`). A walk that never backtracks has no pair; a memoryless
   uniform chooser repeats 1/k of the time, one that remembers where it went never does.
4. Flywheel: teacher-force a prefix that ends with a wrong excursion followed by r verbatim
   repeats of it, and read P(enter the repeated arm again) at the root after each repeat.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from loopfix.atomic import write_json_atomic, write_text_atomic
from loopfix.backends.hf import HFBackend
from loopfix.lab.attention import use_attention_decay
from loopfix.lab.config import EVAL_SEED, LabEvalConfig, TrainConfig
from loopfix.lab.memory import use_visited_memory
from loopfix.lab.stargraph import (
    BACK_ID,
    PAD_ID,
    StarGraph,
    arm_choices,
    make_graph,
    score_walk,
    teacher_walk,
)
from loopfix.records import Sample, SampleStore
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.outcomes import STARGRAPH_OUTCOMES
from loopfix.scan.summary import setting_summary
from loopfix.suites import SuiteItem, stargraph_suite
from loopfix.suites.checkers import scored_walk


@dataclass(frozen=True)
class TemperatureResult:
    temperature: float
    n: int
    success: float
    loop_rate: float  # `loopfix.scan.summary.is_loop`, as every scan reports it
    paper_loop_rate: float  # the paper's n-gram metric, scaled for the cap
    legal_rate: float  # legal moves / all moves, pooled over walks
    valid_rate: float  # walks whose every move is legal
    cut_rate: float  # walks that hit the length cap
    mean_length: float
    outcomes: dict[str, int]  # success / loop / wrong_stop / illegal / cap_without_loop
    repeat_choice_rate: float | None  # same arm at consecutive root decisions; None: no pair
    repeat_choice_pairs: int  # consecutive root-decision pairs, the rate's denominator


@dataclass(frozen=True)
class LabEvaluation:
    settings: list[TemperatureResult]
    flywheel: list[float]  # P(continue the repeat) after 1..6 completed repeats
    flywheel_correct_arm: list[float]  # P(switch to the target's arm) at the same points
    max_new_tokens: int
    teacher_mean_length: float
    seed: int
    scan: str | None  # the scan's folder, when it was kept

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


def testbed_suite(model: PreTrainedModel, n: int, seed: int) -> list[SuiteItem]:
    """`n` fresh graphs of the testbed's task as suite items: the built-in `stargraph` suite,
    in the shape the testbed was trained on (G(3, 3) unless its config says otherwise)."""
    config = testbed_config(model)
    return stargraph_suite(n, seed, config.arms, config.depth, config.hints)


def suite_spec(items: list[SuiteItem], seed: int, folder: Path) -> str:
    """What the scan loads: the built-in suite by name when these are its items, else these items
    written as a suite file into the scan's folder (the same file on a rerun, so it resumes)."""
    meta = items[0].meta
    if items == stargraph_suite(len(items), seed):
        return "stargraph"
    hinted = "-hints" if meta.get("hints") else ""
    path = folder / f"stargraph-G{meta['arms']}x{meta['depth']}{hinted}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(json.dumps(item.to_dict()) + "\n" for item in items))
    return str(path)


def temperature_result(samples: list[Sample], items: dict[str, SuiteItem]) -> TemperatureResult:
    """One temperature's numbers from its scan records."""
    summary = setting_summary(samples)
    legal = moves = valid = pairs = repeats = 0
    for sample in samples:
        meta = items[sample.prompt_id].meta
        graph = StarGraph.from_dict(meta["graph"])
        walk = scored_walk(meta, sample.text, sample.finish_reason == "stop")
        score = score_walk(graph, walk)
        legal, moves, valid = legal + score.legal_moves, moves + score.moves, valid + score.valid
        choices = arm_choices(graph, walk)
        pairs += max(0, len(choices) - 1)
        repeats += sum(a == b != -1 for a, b in zip(choices, choices[1:], strict=False))
    counts = summary.outcomes
    assert summary.mean_length is not None  # every testbed sample is generated here, with ids
    return TemperatureResult(
        temperature=summary.temperature,
        n=summary.n,
        success=summary.accuracy.measured,
        loop_rate=summary.loop_rate.measured,
        paper_loop_rate=summary.paper_loop_rate.measured,
        legal_rate=legal / moves,
        valid_rate=valid / summary.n,
        cut_rate=summary.cut_rate.measured,
        mean_length=summary.mean_length,
        outcomes={name: counts.get(name, 0) for name in STARGRAPH_OUTCOMES},
        repeat_choice_rate=repeats / pairs if pairs else None,
        repeat_choice_pairs=pairs,
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
    settings: LabEvalConfig | None = None,
    on_batch: Callable[[int], None] | None = None,
    out: Path | None = None,
) -> LabEvaluation:
    """`out`: keep the scan there (records, summary, report.html; resumable); None: a temporary
    folder. A testbed trained with decayed attention (`lab.attention`) or the visited-set memory
    (`lab.memory`) generates with it."""
    use_attention_decay(model)
    use_visited_memory(model)
    settings = settings or LabEvalConfig()
    n, seed, max_new_tokens = settings.n, settings.seed, settings.max_new_tokens
    items = testbed_suite(model, n, seed)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(out) if out is not None else Path(temporary)
        config = ScanConfig(
            model=str(getattr(model, "name_or_path", "testbed")),
            suite=suite_spec(items, seed, folder),
            n=n,
            temperatures=list(settings.temperatures),
            seed=seed,
            max_new_tokens=max_new_tokens,
            batch_size=settings.batch_size,
            out=folder,
        )
        progress = None if on_batch is None else (lambda done, _total: on_batch(done))
        run_scan(config, HFBackend(model, tokenizer, settings.batch_size), progress)
        records = list(SampleStore(folder / "records.jsonl"))
    by_id = {item.id: item for item in items}
    results = [
        temperature_result([s for s in records if s.settings["temperature"] == t], by_id)
        for t in config.temperatures
    ]
    testbed = testbed_config(model)
    copy, correct = flywheel(model, testbed)
    return LabEvaluation(
        settings=results,
        flywheel=copy,
        flywheel_correct_arm=correct,
        max_new_tokens=max_new_tokens,
        teacher_mean_length=teacher_mean_length(testbed),
        seed=seed,
        scan=None if out is None else str(out),
    )
