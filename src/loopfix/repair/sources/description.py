"""What a source built its branches from, with its counts (verify.json "branches"): the testbed
teacher's walks (`TestbedBranches`) or scan records (`RecordsBranches`, each prompt role's
pairs counted by `PairCounts`). One writer each, `to_json`, and one reader, `branches_from_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopfix.summaries import FlatRecord

__all__ = ["Branches", "PairCounts", "RecordsBranches", "TestbedBranches", "branches_from_json"]


@dataclass(frozen=True)
class PairCounts(FlatRecord):
    """The pairs made from one role's prompts: the looping samples there, the pairs kept and
    the samples or pairs dropped by reason; a source that makes its productive branch more than
    one way counts the pairs by variant, with each variant's temperature."""

    looping_samples: int
    pairs: int
    dropped: dict[str, int]
    by_variant: dict[str, int] | None = None
    temperatures: dict[str, float] | None = None

    def to_json(self) -> dict[str, object]:
        variants = (
            {}
            if self.by_variant is None
            else {"by_variant": self.by_variant, "temperatures": self.temperatures}
        )
        return {
            "looping_samples": self.looping_samples,
            "pairs": self.pairs,
            **variants,
            "dropped": self.dropped,
        }


@dataclass(frozen=True)
class TestbedBranches(FlatRecord):
    """Branches from the star-graph teacher: counts of walks."""

    __test__ = False  # not a pytest class, whatever its name

    source: str
    method: str
    train: int
    heldout: int
    normal: int
    unit: str = "walks"

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "method": self.method,
            "unit": self.unit,
            "train": self.train,
            "heldout": self.heldout,
            "normal": self.normal,
        }


@dataclass(frozen=True)
class RecordsBranches(FlatRecord):
    """Branches from scan records: which records, the prompts of each role, the pairs made
    from the training and held-out prompts, and the normal text of the KL check."""

    source: str
    method: str
    records: str
    extra_records: tuple[str, ...]
    scan: Mapping[str, object]  # the records' scan identity (`ScanConfig.identity`), as stored
    prompts: dict[str, int]  # role -> prompts
    verify_prompts: str  # "fresh suite prompts" or "held-out records"
    train: PairCounts
    heldout: PairCounts
    normal: int
    normal_source: str
    unit: str = "samples"

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "method": self.method,
            "unit": self.unit,
            "records": self.records,
            "extra_records": list(self.extra_records),
            "scan": self.scan,
            "prompts": self.prompts,
            "verify_prompts": self.verify_prompts,
            "train": self.train.to_json(),
            "heldout": self.heldout.to_json(),
            "normal": self.normal,
            "normal_source": self.normal_source,
        }


Branches = TestbedBranches | RecordsBranches


def branches_from_json(data: Mapping[str, Any]) -> Branches:
    return (RecordsBranches if "records" in data else TestbedBranches).from_json(data)
