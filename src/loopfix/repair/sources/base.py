"""What every repair source gives the pipeline, and the protocol a source implements.

A source builds, once and before anything is tuned: training and held-out branch pairs (from
prompts or graphs kept apart), normal text for the KL check, the prompt sets the verification
generates on (suite items, with the scan settings that render and decode them) and a
description of itself for verify.json and the report. Everything after this stage is the same
for every source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from loopfix.lab.stargraph import BACK_ID
from loopfix.repair.config import RepairConfig
from loopfix.repair.sources.description import Branches
from loopfix.scan import ScanConfig
from loopfix.stages import StageClock
from loopfix.suites import SuiteItem

if TYPE_CHECKING:
    from loopfix.backends.hf import HFBackend

__all__ = ["BranchPair", "NormalText", "RepairSource", "SourceInputs", "decision_offsets"]


@dataclass(frozen=True)
class BranchPair:
    """Two continuations of one prefix, equally long and open-ended (neither ends): the
    repetitive one and the productive one. A direction learnt from such pairs is "copy vs go
    on", not "keep going vs stop" (the feasibility study's trap)."""

    prefix: list[int]
    repetitive: list[int]
    productive: list[int]
    skip: int
    """Branch tokens before the first probed position."""
    variant: str = ""
    """How the productive branch was made, where a source makes it more than one way."""

    def branch(self, which: str) -> list[int]:
        return self.repetitive if which == "repetitive" else self.productive

    def targets(self, which: str, positions: str) -> list[int]:
        """Offsets of the branch tokens whose predicting states are probed and scored."""
        branch = self.branch(which)
        if positions == "decision":
            return [j for j in decision_offsets(branch, self.prefix[-1]) if j >= self.skip]
        return list(range(self.skip, len(branch)))


def decision_offsets(branch: list[int], root: int) -> list[int]:
    """Offsets of the star-graph branch tokens chosen right after `back root`: the arm choices
    (a testbed prefix already ends with `back root`, so offset 0 is one)."""
    context = [BACK_ID, root, *branch]
    return [j for j in range(len(branch)) if context[j] == BACK_ID and context[j + 1] == root]


NormalText = tuple[list[int], int]
"""(token ids, first generated position): a sequence of the KL check."""


@dataclass(frozen=True)
class SourceInputs:
    config: RepairConfig  # as run (a text source probes every state: `positions` "mode")
    train: list[BranchPair]
    heldout: list[BranchPair]
    normal: list[NormalText]
    pad_id: int
    prompt_sets: dict[str, list[SuiteItem]]  # "causal" (screening) and "verify" (the numbers)
    scan: ScanConfig  # how the verification scans render and decode those prompts
    description: Branches  # verify.json "branches": what was built from what, and counts


class RepairSource(Protocol):
    name: str

    def build(
        self,
        generator: HFBackend,
        model_spec: str,
        out: Path,
        config: RepairConfig,
        clock: StageClock,
    ) -> SourceInputs:
        """Everything the repair searches and verifies on, generated (where a source generates)
        by `generator`, the model in its generation dtype; raises `RepairInputError` (one line)
        when the model or its records cannot give it."""
        ...
