"""What a repair searches and verifies on: branches, normal text and prompt sets, from the
star-graph teacher (testbeds, no `suite`) or from scan records (any model, `suite` or
`records` set). Everything after this stage is the same for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopfix.lab.evaluate import testbed_config, testbed_suite
from loopfix.lab.stargraph import PAD_ID
from loopfix.repair.branches import BranchPair, make_pairs, normal_walks
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.scan_branches import normal_texts, scan_pairs
from loopfix.repair.scan_records import own_scan, read_records, split_prompts
from loopfix.repair.scan_verify import ScanPrompts
from loopfix.repair.stages import StageClock
from loopfix.repair.verification import Verifier
from loopfix.scan import ScanConfig

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["RepairInputs", "repair_inputs"]


@dataclass(frozen=True)
class RepairInputs:
    config: RepairConfig  # as run (the scan path probes every state: `positions` "mode")
    train: list[BranchPair]
    heldout: list[BranchPair]
    normal: list[tuple[list[int], int]]  # (ids, first generated position): the KL's text
    pad_id: int
    verifier: Verifier[Any]
    summary: dict[str, Any]  # verify.json "branches": where everything came from, and counts


def repair_inputs(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    model_spec: str,
    out: Path,
    config: RepairConfig,
    clock: StageClock,
) -> RepairInputs:
    if config.suite is None and config.records is None:
        return _testbed(model, tokenizer, model_spec, out, config, clock)
    return _scan(model, tokenizer, model_spec, out, config, clock)


def _testbed(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    model_spec: str,
    out: Path,
    config: RepairConfig,
    clock: StageClock,
) -> RepairInputs:
    if "back" not in tokenizer.get_vocab():
        raise RepairInputError(
            f"{model_spec} is not a star-graph testbed, so there is no teacher to build branches "
            "from: pass --suite SUITE (and optionally --records RUN_DIR/records.jsonl) to build "
            "them from scan records of this model"
        )
    task = testbed_config(model)
    with clock.stage("branches"):
        train = make_pairs(task, config.branch_seed, config.train_pairs, config.repeats)
        heldout = make_pairs(
            task, config.branch_seed + 1, config.heldout_pairs, config.proxy_repeats
        )
        walks = normal_walks(task, config.branch_seed + 2, config.kl_walks)
    summary = {
        "source": "testbed teacher",
        "method": "mean difference of matched branches (copy vs explore), loopfix.repair",
        "unit": "walks",
        "train": len(train),
        "heldout": len(heldout),
        "normal": len(walks),
    }
    # Fresh graphs the branches never saw, scanned like any suite (`scan_verify`), so each walk
    # is judged by the scan's loop definition and the star graph's outcome classes.
    prompt_sets = {
        "verify": testbed_suite(model, config.prompts, config.verify_seed),
        "causal": testbed_suite(model, config.causal_prompts, config.verify_seed + 1),
    }
    scan = ScanConfig(model=model_spec, suite="stargraph", max_new_tokens=config.max_new_tokens)
    source = ScanPrompts(model, tokenizer, scan, prompt_sets, config, out / "verification")
    verifier = Verifier(model, source, config)
    return RepairInputs(config, train, heldout, walks, PAD_ID, verifier, summary)


def _scan(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    model_spec: str,
    out: Path,
    config: RepairConfig,
    clock: StageClock,
) -> RepairInputs:
    # The testbed's "decision" states (arm choices after `back root`) do not exist in text.
    config = config.model_copy(update={"positions": "mode"})
    path = config.records
    if path is None:
        with clock.stage("scan"):
            path = own_scan(model, tokenizer, model_spec, out, config)
    with clock.stage("branches"):
        records = read_records(path, config.suite, model_spec, tokenizer)
        roles = split_prompts(list(records.items), config.branch_seed)
        heldout_ids = roles["causal"] + roles["verify"]
        train, train_counts = scan_pairs(
            model,
            tokenizer,
            records,
            roles["train"],
            config.repeats,
            config.train_pairs,
            config.branch_seed,
            config.gen_batch_size,
        )
        heldout, heldout_counts = scan_pairs(
            model,
            tokenizer,
            records,
            heldout_ids,
            config.proxy_repeats,
            config.heldout_pairs,
            config.branch_seed + 1,
            config.gen_batch_size,
        )
        normal = normal_texts(records, heldout_ids, config.kl_walks)
        normal_source = "non-looping held-out samples"
        if not normal:  # every held-out sample loops: the resamples are the normal text there is
            normal = [(p.prefix + p.productive, len(p.prefix)) for p in heldout[: config.kl_walks]]
            normal_source = "productive branches of held-out prompts"
    summary = {
        "source": "scan records",
        "method": "mean difference of matched branches from scan records (the loop as "
        "generated vs a non-looping resample of its prefix), loopfix.repair",
        "unit": "samples",
        "records": str(records.path),
        "scan": records.config.identity(),
        "prompts": {role: len(ids) for role, ids in roles.items()},
        "train": train_counts,
        "heldout": heldout_counts,
        "normal": len(normal),
        "normal_source": normal_source,
    }
    if not train or not heldout:
        raise RepairInputError(
            "cannot search for a loop direction: too few matched branch pairs "
            f"(training prompts: {train_counts}; held-out prompts: {heldout_counts}). Scan more "
            "prompts (--n) or at temperatures where the model loops."
        )
    items = records.items
    prompt_sets = {
        "causal": [items[i] for i in roles["causal"][: config.causal_prompts]],
        "verify": [items[i] for i in roles["verify"][: config.prompts]],
    }
    source = ScanPrompts(
        model, tokenizer, records.config, prompt_sets, config, out / "verification"
    )
    verifier = Verifier(model, source, config)
    return RepairInputs(
        config, train, heldout, normal, int(tokenizer.pad_token_id or 0), verifier, summary
    )
