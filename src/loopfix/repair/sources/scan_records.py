"""Scan records a repair builds its branches from: a `loopfix scan` run's `records.jsonl` (with
the `scan.json` beside it), or a scan the repair runs itself, merged with further scans of
other seeds. The suite's prompts are rendered again with the model's tokenizer, as the scan
rendered them (checked against each record's `prompt_length`), because a branch's prefix is the
prompt's token ids followed by the generated ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopfix.errors import one_line
from loopfix.models import ModelLoadError, resolve_model_path
from loopfix.progress import line_progress
from loopfix.records import Sample, read_samples
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.scan import ScanConfig, run_scan
from loopfix.suites import SuiteItem, load_suite
from loopfix.suites.render import prompt_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from loopfix.backends.hf import HFBackend

__all__ = ["ScanRecords", "own_scan", "read_records"]


@dataclass(frozen=True)
class ScanRecords:
    path: Path  # the records.jsonl
    config: ScanConfig  # the scan that wrote them (its scan.json)
    samples: list[Sample]
    items: dict[str, SuiteItem]  # the suite's items that have records, in suite order
    prompts: dict[str, list[int]]  # each item's prompt token ids


def own_scan(
    generator: HFBackend,
    model_spec: str,
    out: Path,
    config: RepairConfig,
    report: Callable[[str], None],
) -> Path:
    """Scan the suite on `generator` at every verification temperature (greedy loops count
    too) into OUT/scan; a rerun with the same settings resumes it. Returns its records.jsonl."""
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
    run_scan(scan, generator, line_progress("scan", report))
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
            f"{identity} is missing: the records must come from `loopfix scan`, which "
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
