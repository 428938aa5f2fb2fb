"""The scan records the text sources (`scan`, `rescue`, `outcome`) build from, their prompt
roles, and what those sources share (`RecordsSource`): each differs only in how it makes pairs.

Records come from a `loopfix scan` run (its `records.jsonl` with the `scan.json` beside it) or
from a scan the repair runs itself. The suite's prompts are rendered again with the model's
tokenizer, as the scan rendered them (checked against each record's `prompt_length`), because a
branch's prefix is the prompt's token ids followed by the generated ones.

Prompts are split by id, never by sample: a prompt's samples all serve one role, so nothing the
directions were learnt from is ever scored or verified on.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopfix.backends.hf import HFBackend
from loopfix.errors import one_line
from loopfix.models import ModelLoadError, resolve_model_path
from loopfix.progress import line_progress
from loopfix.records import Sample, read_samples
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.sources.base import BranchPair, NormalText, SourceInputs
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.summary import is_loop
from loopfix.stages import StageClock
from loopfix.suites import BUILTIN_SUITES, SuiteItem, load_suite
from loopfix.suites.render import prompt_ids

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "RecordsSource",
    "ScanRecords",
    "normal_texts",
    "own_scan",
    "fresh_prompts",
    "read_records",
    "screening_prompts",
    "split_prompts",
]


@dataclass(frozen=True)
class ScanRecords:
    path: Path  # the records.jsonl
    config: ScanConfig  # the scan that wrote them (its scan.json)
    samples: list[Sample]
    items: dict[str, SuiteItem]  # the suite's items that have records, in suite order
    prompts: dict[str, list[int]]  # each item's prompt token ids


def own_scan(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    model_spec: str,
    out: Path,
    config: RepairConfig,
    report: Callable[[str], None],
) -> Path:
    """Scan the suite at every verification temperature (greedy loops count too) into
    OUT/scan; a rerun with the same settings resumes it. Returns its records.jsonl."""
    assert config.suite is not None
    scan = ScanConfig(
        model=model_spec,
        suite=config.suite,
        n=config.n,
        temperatures=list(config.temperatures),
        max_new_tokens=config.cap,
        batch_size=config.gen_batch_size,
        out=out / "scan",
    )
    backend = HFBackend(model, tokenizer, batch_size=config.gen_batch_size)
    run_scan(scan, backend, line_progress("scan", report))
    return scan.out / "records.jsonl"


def _where(spec: str) -> str:
    """What a model spec points at, so that two spellings of one folder compare equal."""
    try:
        resolved = resolve_model_path(spec)
    except ModelLoadError:
        return spec
    path = Path(resolved)
    return str(path.resolve()) if path.is_dir() else resolved


def _scan_config(path: Path) -> ScanConfig:
    identity = path.parent / "scan.json"
    if not identity.is_file():
        raise RepairInputError(
            f"{identity} is missing: records for a repair must come from `loopfix scan`, which "
            "writes the scan's configuration (suite, seed, decode settings) beside them"
        )
    try:
        return ScanConfig(
            **json.loads(identity.read_text(encoding="utf-8"))["config"], out=path.parent
        )
    except (ValueError, KeyError, TypeError) as error:  # JSON, missing "config", bad fields
        raise RepairInputError(
            f"{identity} is not a readable scan identity ({one_line(str(error))}); rerun "
            "`loopfix scan` into a fresh --out"
        ) from None


def _rendered(
    samples: list[Sample], items: dict[str, SuiteItem], tokenizer: Any, config: ScanConfig
) -> dict[str, list[int]]:
    prompts: dict[str, list[int]] = {}
    for sample in samples:
        if sample.prompt_id in prompts:
            continue
        if sample.prompt_id not in items:
            raise RepairInputError(
                f"record prompt {sample.prompt_id!r} is not in suite {config.suite!r} "
                f"(n {config.n}, seed {config.seed}) as the scan.json beside the records gives it"
            )
        ids = prompt_ids(items[sample.prompt_id], tokenizer, config.think)
        expected = sample.meta.get("prompt_length")
        if expected is not None and expected != len(ids):
            raise RepairInputError(
                f"prompt {sample.prompt_id!r} renders to {len(ids)} tokens with this model's "
                f"tokenizer, but to {expected} in the scan: the records come from another "
                "tokenizer or chat template"
            )
        prompts[sample.prompt_id] = ids
    return prompts


def read_records(
    path: Path,
    suite: str | None,
    model_spec: str,
    tokenizer: PreTrainedTokenizerBase,
    extra: Sequence[Path] = (),
) -> ScanRecords:
    """A scan's records with the prompts they continue, merged with the `extra` scans' (the same
    model, suite and decode settings at other seeds or sizes); refuses records of another model
    or suite, and records that cannot be matched to their prompts."""
    first = _read_one(path, suite, model_spec, tokenizer)
    for other in (_read_one(extra_path, suite, model_spec, tokenizer) for extra_path in extra):
        differs = sorted(
            key
            for key, value in first.config.identity().items()
            if key not in _MAY_DIFFER and other.config.identity()[key] != value
        )
        if differs:
            raise RepairInputError(
                f"{other.path} comes from a scan with other {', '.join(differs)} than "
                f"{first.path}: merged records must share model, suite and decode settings"
            )
        shared = set(first.items) & set(other.items)
        if shared:
            raise RepairInputError(
                f"{other.path} repeats {len(shared)} prompts of {first.path} (such as "
                f"{min(shared)!r}): merge scans of other seeds"
            )
        first = ScanRecords(
            first.path,
            first.config,
            first.samples + other.samples,
            {**first.items, **other.items},
            {**first.prompts, **other.prompts},
        )
    return first


# What may differ between merged scans: which prompts (seed, n) and how they were batched.
_MAY_DIFFER = frozenset({"seed", "n", "batch_size"})


def _read_one(
    path: Path, suite: str | None, model_spec: str, tokenizer: PreTrainedTokenizerBase
) -> ScanRecords:
    path = Path(path)
    if path.is_dir():
        path = path / "records.jsonl"
    if not path.is_file():
        raise RepairInputError(f"{path} does not exist: pass the records.jsonl of `loopfix scan`")
    config = _scan_config(path)
    if suite is not None and suite != config.suite:
        raise RepairInputError(
            f"the records are of suite {config.suite!r}, not {suite!r} "
            f"(see {path.parent / 'scan.json'})"
        )
    if _where(config.model) != _where(model_spec):
        raise RepairInputError(
            f"the records were generated by {config.model!r}, not {model_spec!r}: branches must "
            "be the repaired model's own loops"
        )
    samples = list(read_samples(path))
    if not samples:
        raise RepairInputError(f"{path} holds no records")
    items = {item.id: item for item in load_suite(config.suite, config.n, config.seed)}
    prompts = _rendered(samples, items, tokenizer, config)
    return ScanRecords(
        path, config, samples, {k: v for k, v in items.items() if k in prompts}, prompts
    )


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
    ) -> tuple[list[BranchPair], dict[str, Any]]:
        """The pairs `request` asks for, and counts: looping samples, pairs, and the samples
        or pairs dropped by reason."""

    def build(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        model_spec: str,
        out: Path,
        config: RepairConfig,
        clock: StageClock,
    ) -> SourceInputs:
        assert config.suite is not None or config.records is not None  # `source_for` checks
        # The testbed's "decision" states (arm choices after `back root`) do not exist in text.
        config = config.model_copy(update={"positions": "mode"})
        path = config.records
        if path is None:
            with clock.stage("scan"):
                path = own_scan(model, tokenizer, model_spec, out, config, clock.report)
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
            train, train_counts = self.pairs(
                model,
                tokenizer,
                PairRequest(
                    records, roles["train"], config.repeats, config.train_pairs, config.branch_seed
                ),
                config,
            )
            heldout, heldout_counts = self.pairs(
                model,
                tokenizer,
                PairRequest(
                    records,
                    heldout_ids,
                    config.proxy_repeats,
                    config.heldout_pairs,
                    config.branch_seed + 1,
                ),
                config,
            )
            normal = normal_texts(records, heldout_ids, config.kl_walks)
            normal_source = "non-looping held-out samples"
            if not normal:  # every held-out sample loops: the productive branches are the text
                normal = [
                    (p.prefix + p.productive, len(p.prefix)) for p in heldout[: config.kl_walks]
                ]
                normal_source = "productive branches of held-out prompts"
        description: dict[str, Any] = {
            "source": self.name,
            "method": self.method,
            "unit": "samples",
            "records": str(records.path),
            "extra_records": [str(extra) for extra in config.extra_records],
            "scan": records.config.identity(),
            "prompts": {role: len(ids) for role, ids in roles.items()},
            "verify_prompts": "fresh suite prompts" if fresh is not None else "held-out records",
            "train": train_counts,
            "heldout": heldout_counts,
            "normal": len(normal),
            "normal_source": normal_source,
        }
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
        description["prompts"] = {**description["prompts"], "screening": len(screening)}
        if fresh is not None:
            description["prompts"]["verify"] = len(fresh)
        pad_id = int(tokenizer.pad_token_id or 0)
        return SourceInputs(
            config, train, heldout, normal, pad_id, prompt_sets, records.config, description
        )
