"""Repair sources: where a repair's branch pairs, normal text and prompt sets come from.

Each source is one module implementing `RepairSource` (`base.py`): the star-graph teacher
(`testbed`), and three from scan records (`records.py` holds what they share): the loop vs a
non-looping resample (`scan`), the loop vs the engine's rescue at its first repeat (`rescue`),
and looping vs converging runs (`outcome`, the seed's literal construction, a baseline).
`source_for` picks one from `RepairConfig.source`; its default is the testbed teacher without a
suite or records; with them the outcome pairs where the records hold two or more samples of a
prompt (on SmolLM2 the only pairs whose proxy ranks edits as generation does), else the rescue
branches (one sample per prompt has no converging partner).
"""

from __future__ import annotations

from collections import Counter

from loopfix.records import read_samples
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
    name = config.source or (_text_source(config) if from_records else "testbed")
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


def _text_source(config: RepairConfig) -> SourceName:
    """'outcome' where a prompt has two or more samples to pair, else 'rescue'."""
    if config.records is None:  # the own scan: one sample per prompt and temperature
        return "outcome" if len(config.temperatures) >= 2 else "rescue"
    path = config.records / "records.jsonl" if config.records.is_dir() else config.records
    if not path.is_file():
        return "rescue"  # read_records names the missing file once the source builds
    per_prompt = Counter(sample.prompt_id for sample in read_samples(path))
    return "outcome" if per_prompt and max(per_prompt.values()) >= 2 else "rescue"
