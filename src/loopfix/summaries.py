"""The typed summaries of a run's records: what a scan's summary.json holds (`ScanSummary`, one
`SettingSummary` per decode setting, each rate a `Rate`) and a paired comparison of two runs
(`Comparison`, its blocks `Paired`).

`scan` computes them (`scan.summary`, `scan.compare`); `report`, `doctor`, `repair` and the
CLI read them by attribute. Each has one writer, `to_json`, which gives the file's shape (a rate
as `name` and `name_ci95`), and one reader, `from_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, fields
from types import NoneType, UnionType
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import JsonValue

__all__ = [
    "BackendRan",
    "FlatRecord",
    "Comparison",
    "Paired",
    "Rate",
    "ScanSummary",
    "SettingSummary",
    "Shift",
    "TemperaturePaired",
    "ThinkingSummary",
]

Prompting = Literal["chat-template", "completion"]

_Record = TypeVar("_Record", bound="FlatRecord")


class FlatRecord:
    """A frozen dataclass whose file shape is its fields in order, each a JSON value as it
    stands (numbers, strings, None, string-keyed dicts of them), a tuple (written as a list), a
    nested record (its own object) or a `Rate` (two keys: `name` and `name_ci95`):
    `to_json` and `from_json` follow from the fields, so a field added is written and read back
    with nothing else to change. A record whose file adds keys (a summary of its fields) or
    leaves some out writes its own `to_json` and still reads by `from_json`, which also reads a
    field of any type that has a `from_json`, and gives a field with a default that default when
    the file lacks it."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # what @dataclass gives the subclass

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, Rate):
                data |= value.json_items(field.name)
            else:
                data[field.name] = _written(value)
        return data

    @classmethod
    def from_json(cls: type[_Record], data: Mapping[str, Any]) -> _Record:
        kinds = get_type_hints(cls)
        return cls(
            **{
                field.name: Rate.from_json(data, field.name)
                if kinds[field.name] is Rate
                else _read(kinds[field.name], data[field.name])
                for field in fields(cls)
                if field.name in data or field.default is MISSING
            }
        )


def _written(value: Any) -> Any:
    """A field's value in its file shape: a record (anything with a `to_json`) by it, a tuple
    as a list of its items' shapes, anything else as it stands."""
    if hasattr(value, "to_json"):
        return value.to_json()
    return [_written(item) for item in value] if isinstance(value, tuple) else value


def _read(kind: Any, value: Any) -> Any:
    """A field's value of type `kind` from its file shape: a tuple from a list, a dict's values
    by their type, a type with a `from_json` (a record) by it, anything else as it stands."""
    if value is None:
        return None
    if get_origin(kind) is UnionType:  # X | None: an X
        kind = next(arg for arg in get_args(kind) if arg is not NoneType)
    if get_origin(kind) is tuple:
        return tuple(_read(get_args(kind)[0], item) for item in value)
    if get_origin(kind) is dict:
        return {key: _read(get_args(kind)[1], item) for key, item in value.items()}
    reader = getattr(kind, "from_json", None)
    return value if reader is None else reader(value)


@dataclass(frozen=True)
class Rate:
    """A share with its Wilson 95% interval; `value` None when nothing was counted."""

    value: float | None
    ci95: tuple[float, float] | None

    @property
    def measured(self) -> float:
        """The value, for a caller whose samples are never empty."""
        if self.value is None:
            raise ValueError("a rate over no sample")
        return self.value

    def json_items(self, name: str) -> dict[str, JsonValue]:
        return {name: self.value, f"{name}_ci95": None if self.ci95 is None else list(self.ci95)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], name: str) -> Rate:
        interval = data.get(f"{name}_ci95")
        return cls(data[name], None if interval is None else (interval[0], interval[1]))


@dataclass(frozen=True)
class ThinkingSummary(FlatRecord):
    """Where the loops of a model that thinks sit (`scan.summary.thinking_summary`): inside the
    thinking (it never closed, or the loop starts before `</think>`) or after it, in the
    answer; and how long the thinking ran, in tokens."""

    outputs: int  # generated samples that hold a thinking marker
    closed: int  # of those, the thinking closed
    loops_in_thinking: int
    loops_after_thinking: int
    mean_thinking_tokens: float | None
    median_thinking_tokens: float | None

    def line(self) -> str:
        """One line for a report: `12 thought, 11 closed; loops 1 inside, 0 after; ...`."""
        length = (
            "thinking length unknown"
            if self.mean_thinking_tokens is None or self.median_thinking_tokens is None
            else f"thinking {self.mean_thinking_tokens:.0f} tokens mean, "
            f"{self.median_thinking_tokens:.0f} median"
        )
        return (
            f"{self.outputs} thought, {self.closed} closed; loops {self.loops_in_thinking} "
            f"inside the thinking, {self.loops_after_thinking} after it; {length}"
        )


@dataclass(frozen=True)
class SettingSummary(FlatRecord):
    """The statistics of the samples of one decode setting (`scan.summary.setting_summary`)."""

    temperature: float
    settings: dict[str, float]  # the decode settings, as each record stores them
    n: int  # generated samples (not over-long, not failed)
    overlong: int
    errors: int
    loops: int  # `scan.summary.is_loop`
    loop_rate: Rate
    detector_looping: int
    paper_loop_rate: Rate
    paper_ngram: tuple[int, int]  # (n, k) of the paper metric at this cap
    cut_rate: Rate
    server_repetition: int
    judged: int
    accuracy: Rate  # over judged samples
    judged_non_looping: int
    accuracy_non_looping: Rate
    mean_length: float | None
    median_length: float | None
    p90_length: float | None
    unknown_lengths: int
    outcomes: dict[str, int]  # outcome class -> samples (`scan.outcomes`)
    thinking: ThinkingSummary | None = None  # None: no sample thought


@dataclass(frozen=True)
class BackendRan(FlatRecord):
    """What generated a run, which may differ from what was asked (vLLM's "auto" dtype)."""

    name: str
    dtype: str | None


@dataclass(frozen=True)
class ScanSummary(FlatRecord):
    """A scan's summary.json: one `SettingSummary` per decode setting, by temperature; the
    run's total of each count; and, once written by `run_scan`, how it ran."""

    settings: tuple[SettingSummary, ...]
    records: int
    loops: int
    detector_looping: int
    overlong_prompts: tuple[str, ...]
    config: dict[str, JsonValue] | None = None  # the scan's settings (`ScanConfig.identity`)
    backend: BackendRan | None = None
    prompting: Prompting | None = None  # how prompts were rendered, for a local tokenizer
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def setting(self, temperature: float) -> SettingSummary:
        return next(s for s in self.settings if s.temperature == temperature)

    def to_json(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {
            "settings": [setting.to_json() for setting in self.settings],
            "records": self.records,
            "loops": self.loops,
            "detector_looping": self.detector_looping,
            "overlong_prompts": list(self.overlong_prompts),
        }
        if self.config is not None:
            data["config"] = self.config
        if self.backend is not None:
            data["backend"] = self.backend.to_json()
        if self.prompting is not None:
            data["prompting"] = self.prompting
        return data | {"warnings": list(self.warnings), "notes": list(self.notes)}


@dataclass(frozen=True)
class Shift(FlatRecord):
    """A rate in run A and in run B over the same pairs; all None when no pair counts."""

    a: float | None
    b: float | None
    delta: float | None


@dataclass(frozen=True)
class Paired(FlatRecord):
    """Run B against run A on the same (prompt, sample[, temperature]) pairs: a rescue is wrong
    in A and right in B, a regression the reverse (exact McNemar p over the two)."""

    pairs: int
    judged_pairs: int
    rescues: int
    regressions: int
    mcnemar_p: float
    loops_removed: int
    loops_added: int
    loop_rate: Shift
    cut_rate: Shift
    accuracy: Shift  # over judged pairs
    mean_length: Shift  # over pairs whose two lengths are known

    @property
    def net(self) -> int:
        """Answers recovered net: rescues minus regressions."""
        return self.rescues - self.regressions


@dataclass(frozen=True)
class TemperaturePaired:
    temperature: float | None  # None: the runs paired across their one temperature each
    paired: Paired


@dataclass(frozen=True)
class Comparison:
    """`scan.compare.compare_samples`: every pair, and the pairs at each temperature."""

    paired_on: str  # "prompt, sample, temperature" or "prompt, sample"
    unpaired_a: int
    unpaired_b: int
    overall: Paired
    by_temperature: tuple[TemperaturePaired, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "paired_on": self.paired_on,
            "unpaired": {"a": self.unpaired_a, "b": self.unpaired_b},
            "overall": self.overall.to_json(),
            "by_temperature": [
                {"temperature": t.temperature, **t.paired.to_json()} for t in self.by_temperature
            ],
        }
