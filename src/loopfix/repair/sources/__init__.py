"""Repair sources: where a repair's branch pairs, normal text and prompt sets come from.

Each source is one module implementing `RepairSource` (`base.py`): the star-graph teacher
(`testbed`), and three from scan records (`records.py` holds what they share): the loop vs a
non-looping resample (`scan`), the loop vs the engine's rescue at its first repeat (`rescue`),
and looping vs converging runs (`outcome`, the seed's literal construction, a baseline).
`source_for` picks one from `RepairConfig.source`; its default is the testbed teacher without a
suite or records, the rescue branches with them.
"""

from __future__ import annotations

from loopfix.repair.config import RepairConfig, SourceName
from loopfix.repair.errors import RepairInputError
from loopfix.repair.sources.base import BranchPair, RepairSource, SourceInputs
from loopfix.repair.sources.outcome import OutcomeSource
from loopfix.repair.sources.rescue import RescueSource
from loopfix.repair.sources.scan import ScanSource
from loopfix.repair.sources.testbed import TestbedSource

__all__ = ["BranchPair", "RepairSource", "SourceInputs", "source_for"]

_SOURCES: dict[SourceName, type[RepairSource]] = {
    "testbed": TestbedSource,
    "scan": ScanSource,
    "rescue": RescueSource,
    "outcome": OutcomeSource,
}


def source_for(config: RepairConfig) -> RepairSource:
    """The source `config.source` names (checked before the model is loaded)."""
    from_records = config.suite is not None or config.records is not None
    name = config.source or ("rescue" if from_records else "testbed")
    if name == "testbed" and from_records:
        raise RepairInputError(
            "--source testbed builds its branches from the star-graph teacher and takes no "
            "--suite or --records; drop them, or pick --source scan, rescue or outcome"
        )
    if name != "testbed" and not from_records:
        raise RepairInputError(
            f"--source {name} builds its branches from scan records: pass --suite SUITE (the "
            "repair scans it) or --records RUN_DIR/records.jsonl"
        )
    return _SOURCES[name]()
