"""The prompt roles of the text sources (`scan`, `rescue`, `outcome`) and what those sources
share (`RecordsSource`): each differs only in how it makes pairs. The records themselves are
read in `scan_records.py`.

Prompts are split by id, never by sample: a prompt's samples all serve one role, so nothing the
directions were learnt from is ever scored or verified on.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.sources.base import BranchPair, NormalText, SourceInputs
from loopfix.repair.sources.description import PairCounts, RecordsBranches
from loopfix.repair.sources.scan_records import ScanRecords, own_scan, read_records
from loopfix.scan.summary import is_loop
from loopfix.stages import StageClock
from loopfix.suites import BUILTIN_SUITES, SuiteItem, load_suite

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from loopfix.backends.hf import HFBackend

__all__ = [
    "RecordsSource",
    "normal_texts",
    "fresh_prompts",
    "screening_prompts",
    "split_prompts",
]


def split_prompts(
    prompt_ids: Sequence[str], seed: int, verify: bool = True
) -> dict[str, list[str]]:
    """Roles by prompt id, in an order fixed by a hash of (seed, id): half the prompts train the
    directions; the other half are held out: "causal" (activation check and screening of
    candidates) and, with `verify`, every second one "verify" (the final numbers), so the
    reported numbers are not measured on the prompts a candidate was picked on. Without
    `verify` the verification prompts are fresh ones (`fresh_prompts`)."""
    if len(prompt_ids) < 4:
        raise RepairInputError(
            f"the records cover {len(prompt_ids)} prompts; a repair splits them into training, "
            "screening and verification prompts and needs at least 4 (scan more: --n)"
        )

    def rank(prompt_id: str) -> bytes:
        return hashlib.sha256(f"{seed}:{prompt_id}".encode()).digest()

    order = sorted(prompt_ids, key=rank)
    half = len(order) // 2
    held_out = order[half:]
    if not verify:
        return {"train": order[:half], "causal": held_out}
    return {"train": order[:half], "causal": held_out[0::2], "verify": held_out[1::2]}


def fresh_prompts(records: ScanRecords, config: RepairConfig) -> list[SuiteItem] | None:
    """`config.prompts` items of the records' built-in suite drawn at `verify_seed` that the
    records never saw (by id and by prompt), so verification is as large as asked however few
    prompts were scanned; None for a suite file (its prompts are all there is: split them)."""
    suite = records.config.suite
    if suite not in BUILTIN_SUITES:
        return None

    def text(item: SuiteItem) -> str:
        return json.dumps([item.prompt, item.messages])

    seen_text = {text(item) for item in records.items.values()}
    drawn = load_suite(suite, config.prompts + len(records.items), config.verify_seed)
    fresh = [item for item in drawn if item.id not in records.items and text(item) not in seen_text]
    return fresh[: config.prompts]


# Screening compares arms by the loops each removes and adds: the prompts that looped carry the
# first, and a third as many that did not carry the second (the SmolLM2 driver's 44 + 12).
CALM_SHARE = 1 / 3


def screening_prompts(
    records: ScanRecords, prompt_ids: Sequence[str], temperature: float, count: int
) -> list[str]:
    """Of `prompt_ids`, the ones with a looping sample at `temperature` and CALM_SHARE as many
    without, at most `count`; all of them (up to `count`) when none loops."""
    looped = {
        s.prompt_id
        for s in records.samples
        if s.settings["temperature"] == temperature and is_loop(s)
    }
    looping = [i for i in prompt_ids if i in looped]
    calm = [i for i in prompt_ids if i not in looped]
    if not looping:
        return list(prompt_ids)[:count]
    return (looping + calm[: max(1, round(len(looping) * CALM_SHARE))])[:count]


def normal_texts(records: ScanRecords, prompt_ids: Sequence[str], count: int) -> list[NormalText]:
    """(prompt + generated tokens, prompt length) of up to `count` samples of `prompt_ids` that
    did not loop: the normal text of the KL check."""
    wanted = set(prompt_ids)
    texts = [
        (records.prompts[s.prompt_id] + list(s.tokens), len(records.prompts[s.prompt_id]))
        for s in records.samples
        if s.prompt_id in wanted and s.tokens and s.finish_reason != "error" and not is_loop(s)
    ]
    return texts[:count]


@dataclass(frozen=True)
class PairRequest:
    """One call's worth of pairs: up to `count` from the samples of `prompt_ids`, each loop
    taken over `repeats` copies, continuations drawn with `seed`."""

    records: ScanRecords
    prompt_ids: Sequence[str]
    repeats: int
    count: int
    seed: int


class RecordsSource(ABC):
    """A source that builds its pairs from scan records (the repair's own scan of `suite` into
    OUT/scan, or `records`): prompts are split into roles before anything else, training pairs
    come from the "train" prompts, held-out pairs, normal text and both prompt sets from the
    others."""

    name: str
    method: str  # how a pair is made, for verify.json and the report

    @abstractmethod
    def pairs(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        request: PairRequest,
        config: RepairConfig,
    ) -> tuple[list[BranchPair], PairCounts]:
        """The pairs `request` asks for, and counts: looping samples, pairs, and the samples
        or pairs dropped by reason."""

    def build(
        self,
        generator: HFBackend,
        model_spec: str,
        out: Path,
        config: RepairConfig,
        clock: StageClock,
    ) -> SourceInputs:
        model, tokenizer = generator.model, generator.tokenizer
        assert config.suite is not None or config.records is not None  # `source_for` checks
        # The testbed's "decision" states (arm choices after `back root`) do not exist in text.
        config = config.model_copy(update={"positions": "mode"})
        path = config.records
        if path is None:
            with clock.stage("scan"):
                path = own_scan(generator, model_spec, out, config, clock.report)
        with clock.stage("branches"):
            records = read_records(path, config.suite, model_spec, tokenizer, config.extra_records)
            if not any(is_loop(sample) for sample in records.samples):
                raise RepairInputError(
                    f"{records.path} holds no looping sample (loopfix.scan.summary.is_loop), so "
                    "there is no loop to build branches from: scan more prompts (--n) or at "
                    "temperatures where the model loops"
                )
            fresh = fresh_prompts(records, config)
            roles = split_prompts(list(records.items), config.branch_seed, fresh is None)
            heldout_ids = roles["causal"] + roles.get("verify", [])
            branch = config.branch_seed
            (train, train_counts), (heldout, heldout_counts) = (
                self.pairs(
                    model, tokenizer, PairRequest(records, ids, repeats, count, seed), config
                )
                for ids, repeats, count, seed in (
                    (roles["train"], config.repeats, config.train_pairs, branch),
                    (heldout_ids, config.proxy_repeats, config.heldout_pairs, branch + 1),
                )
            )
            normal = normal_texts(records, heldout_ids, config.kl_walks)
            normal_source = "non-looping held-out samples"
            if not normal:  # every held-out sample loops: the productive branches are the text
                normal = [
                    (p.prefix + p.productive, len(p.prefix)) for p in heldout[: config.kl_walks]
                ]
                normal_source = "productive branches of held-out prompts"
        if not train or not heldout:
            raise RepairInputError(
                f"cannot search for a loop direction: too few {self.name} branch pairs "
                f"(training prompts: {train_counts}; held-out prompts: {heldout_counts}). Scan "
                "more prompts (--n) or at temperatures where the model loops."
            )
        items = records.items
        screening = screening_prompts(
            records, roles["causal"], config.temperature, config.causal_prompts
        )
        prompt_sets = {
            "causal": [items[i] for i in screening],
            "verify": fresh
            if fresh is not None
            else [items[i] for i in roles["verify"][: config.prompts]],
        }
        prompts = {role: len(ids) for role, ids in roles.items()} | {"screening": len(screening)}
        if fresh is not None:
            prompts["verify"] = len(fresh)
        description = RecordsBranches(
            source=self.name,
            method=self.method,
            records=str(records.path),
            extra_records=tuple(str(extra) for extra in config.extra_records),
            scan=records.config.identity(),
            prompts=prompts,
            verify_prompts="fresh suite prompts" if fresh is not None else "held-out records",
            train=train_counts,
            heldout=heldout_counts,
            normal=len(normal),
            normal_source=normal_source,
        )
        pad_id = int(tokenizer.pad_token_id or 0)
        return SourceInputs(
            config, train, heldout, normal, pad_id, prompt_sets, records.config, description
        )
