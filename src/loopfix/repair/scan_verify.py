"""Verification of a repair: held-out suite prompts generated with `run_scan` (the testbed's
fresh graphs are the `stargraph` suite).

Each held-out prompt set is written as a JSON-lines suite (`OUT/verification/verify.jsonl`,
`causal.jsonl`) and every arm (base, a candidate, its control, an activation-level ablation)
is a scan of it on the repair's generator (the model `open_backend` opened) under the arm's
patch or hooks, into its own folder under `OUT/verification/` (kept, so `loopfix scan --compare`
can re-pair any two arms). A patched arm's scan.json names the patch beside the base model's
files, by an id read from the weights while they run (`patch_id`). Every
arm uses the records' decode settings and cap and the same seed, so a prompt's sample in one arm
pairs with its sample in another under the same sampler seed.

A sample's outcome is the class the scan gave it (`loopfix.scan.outcomes`): the star graph's
success / loop / wrong stop / illegal / cap without loop on the testbed; correct / loop / cap
without loop / wrong stop / unjudged on other suites.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loopfix.patch.hashing import tensor_sha256
from loopfix.progress import line_progress
from loopfix.records import Sample, read_samples
from loopfix.repair.arms import ArmResult, BasePairing
from loopfix.repair.config import RepairConfig
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.compare import compare_samples
from loopfix.scan.summary import is_loop, setting_summary
from loopfix.suites import SuiteItem

if TYPE_CHECKING:
    from loopfix.backends.hf import HFBackend
    from loopfix.patch import PatchHandle

__all__ = ["ScanOutcomes", "ScanPrompts", "patch_id"]


def patch_id(applied: PatchHandle) -> str:
    """SHA-256 over every touched tensor's name, its hash before the edit and its hash as the
    model holds it now: with the base model's files, it names the weights that run, read from
    them rather than from what the patch claims."""
    assert applied.active, "a reverted patch no longer describes the weights"
    edits = [
        [edit.name, edit.sha256_before, tensor_sha256(applied.model.get_parameter(edit.name))]
        for edit in applied.patch.edits
    ]
    return hashlib.sha256(json.dumps(edits).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ScanOutcomes:
    """The records of one arm's scan at one temperature."""

    temperature: float
    samples: tuple[Sample, ...]
    folder: Path

    def summary(self) -> ArmResult:
        return ArmResult.of(
            setting_summary(list(self.samples)), self.samples, self.folder / "records.jsonl"
        )


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", label).strip("_")


class ScanPrompts:
    """The "verify" and "causal" prompt sets of a repair on scan records (see the module)."""

    def __init__(
        self,
        backend: HFBackend,
        scan: ScanConfig,
        prompt_sets: dict[str, list[SuiteItem]],
        config: RepairConfig,
        folder: Path,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.backend, self.scan, self.config = backend, scan, config
        self.report = report
        # Rewritten by every run: a stale arm folder would be resumed as if it were this one.
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.folder, self.suites, self.runs = folder, {}, 0
        for name, items in prompt_sets.items():
            self.suites[name] = folder / f"{name}.jsonl"
            self.suites[name].write_text(
                "".join(json.dumps(item.to_dict(), ensure_ascii=False) + "\n" for item in items)
            )

    def generate(
        self, prompts: str, temperature: float, label: str, applied: PatchHandle | None = None
    ) -> ScanOutcomes:
        self.runs += 1
        out = self.folder / f"{self.runs:02d}-{_slug(label)}-{prompts}-T{temperature:g}"
        scan = self.scan.model_copy(
            update={
                "suite": str(self.suites[prompts]),
                "n": None,
                "temperatures": [temperature],
                "samples": 1,
                "seed": self.config.verify_seed,
                "backend": "hf",
                "ray_address": None,
                "capture": False,
                "batch_size": self.config.gen_batch_size,
                "out": out,
            }
        )
        progress = None if self.report is None else line_progress(out.name, self.report)
        if applied is not None and applied.model is not self.backend.model:
            raise ValueError(f"{label}: the patch is applied to another model than the one run")
        # The backend's identity names the patch only while it is applied (scan.json "patch").
        self.backend.patch = None if applied is None else patch_id(applied)
        try:
            run_scan(scan, self.backend, progress)
        finally:
            self.backend.patch = None
        return ScanOutcomes(temperature, tuple(read_samples(out / "records.jsonl")), out)

    @staticmethod
    def compare(base: ScanOutcomes, other: ScanOutcomes) -> BasePairing:
        paired = compare_samples(list(base.samples), list(other.samples)).overall
        arm = {(s.prompt_id, s.sample_index): s for s in other.samples}
        went = Counter(
            arm[s.prompt_id, s.sample_index].meta["outcome"]
            for s in base.samples
            if is_loop(s) and (s.prompt_id, s.sample_index) in arm
        )
        return BasePairing.of(paired, dict(went))
