"""Every file loopfix reads, fed arbitrary damage to a valid one (issue 56): a key deleted, a
value of another type, a huge or negative number, wrong nesting, a cut, binary garbage. The
reader either reads it or raises loopfix's own error, as one line; no other exception escapes,
its memory stays bounded and it writes nothing. The valid files come from real runs
(`tests/valid_files.py`)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopfix.errors import LoopfixError
from loopfix.experiments.run import Plan, _read
from loopfix.experiments.summary import RunNumbers
from loopfix.patch.format import MANIFEST_NAME, TENSORS_NAME, load_patch
from loopfix.patch.manifest import HASH_FIELD, with_hash
from loopfix.records import Sample, read_samples
from loopfix.states.warning import WarningProbe, load_warning
from loopfix.suites import SuiteItem, check_answer
from loopfix.suites.items import read_suite_file
from tests import valid_files

MEMORY_BOUND = 256 * 2**20  # bytes a reader may allocate on one small damaged file
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ODD_VALUES = st.sampled_from(
    [None, True, "x", "", -1, 0, 10**30, -(10**30), 1e308, -0.5, [], {}, [[[[1]]]], {"a": {}}]
)


@st.composite
def damaged_json(draw: st.DrawFn, value: Any) -> Any:
    """`value` (parsed JSON) with one node somewhere in it deleted, replaced or wrapped."""
    if isinstance(value, (dict, list)) and value and draw(st.booleans()):
        keys = list(value) if isinstance(value, dict) else list(range(len(value)))
        key = draw(st.sampled_from(keys))
        copy = dict(value) if isinstance(value, dict) else list(value)
        if draw(st.integers(0, 4)) == 0:
            del copy[key]
        else:
            copy[key] = draw(damaged_json(value[key]))
        return copy
    return draw(st.one_of(ODD_VALUES, st.just([value]), st.just({"x": value})))


@st.composite
def damaged_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` cut short, or with garbage written over part of it."""
    cut = draw(st.integers(0, len(data)))
    if draw(st.booleans()):
        return data[:cut]
    garbage = draw(st.binary(min_size=1, max_size=64))
    return data[:cut] + garbage + data[cut + len(garbage) :]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def check_reader(
    read: Callable[[], Any], folder: Path, use: Callable[[Any], object] = lambda _: None
) -> None:
    """`read` returns what can be used (`use` of it raises nothing) or raises a one-line
    LoopfixError, allocating a bounded amount and writing nothing under `folder`."""
    before = snapshot(folder)
    tracemalloc.start()
    try:
        result = read()
    except LoopfixError as error:
        assert "\n" not in str(error).strip(), str(error)
    else:
        use(result)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < MEMORY_BOUND
    assert snapshot(folder) == before


def use_samples(samples: list[Sample]) -> None:
    """What the stages read of a record holds the types a scan writes."""
    for sample in samples:
        assert all(type(token) is int and token >= 0 for token in sample.tokens)
        assert all(type(value) in (int, float) for value in sample.settings.values())
        assert isinstance(sample.meta, dict) and isinstance(sample.text, str)
        assert sample.length is None or sample.length >= 0
        float(sample.settings.get("temperature", 0.0))


def use_probe(probe: WarningProbe) -> None:
    """The engine's calls on a probe, at the testbed's width."""
    projected = probe.project(np.zeros((3, 64), dtype=np.float32)).tolist()
    assert 0 <= probe.step_probability(projected, [0.5] * 3, [0.1] * 3) <= 1


def use_items(items: list[SuiteItem]) -> None:
    """Every item's checker judges an answer (its meta holds what the checker reads)."""
    for item in items:
        check_answer(item.checker, "1, 2, 3", item.answer, item.meta, True)


def write_json_or_bytes(path: Path, draw: st.DrawFn, valid: bytes) -> None:
    if draw(st.booleans()):
        path.write_bytes(draw(damaged_bytes(valid)))
    else:
        path.write_text(json.dumps(draw(damaged_json(json.loads(valid)))))


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("valid")
    return {
        "scan": valid_files.scan_folder(root / "scan"),
        "warning": valid_files.warning_probe(root / "warning_probe.json"),
        "patch": valid_files.patch_folder(root / "patch"),
        "suite": valid_files.suite_file(root / "suite.jsonl"),
        "experiment": valid_files.experiment_folder(root / "experiment"),
    }


def test_the_valid_files_read(valid: dict[str, Path]) -> None:
    assert len(list(read_samples(valid["scan"] / "records.jsonl"))) == 6
    assert load_warning(valid["warning"], valid_files.TESTBED).layer == valid_files.LAYER
    assert load_patch(valid["patch"]).edits
    assert len(read_suite_file(valid["suite"])) == 6
    plan = valid["experiment"] / "plan.json"
    assert _read(plan, Plan, "").experiment.name == "margin"


@EXAMPLES
@given(st.data())
def test_damaged_scan_records(valid: dict[str, Path], tmp_path: Path, data: st.DataObject) -> None:
    lines = (valid["scan"] / "records.jsonl").read_bytes().splitlines(keepends=True)
    index = data.draw(st.integers(0, len(lines) - 1))
    line = Path(tmp_path / "line")
    write_json_or_bytes(line, data.draw, lines[index])
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join([*lines[:index], line.read_bytes().rstrip(b"\n") + b"\n"]))
    check_reader(lambda: list(read_samples(path)), tmp_path, use_samples)


@EXAMPLES
@given(st.data())
def test_damaged_warning_probes(
    valid: dict[str, Path], tmp_path: Path, data: st.DataObject
) -> None:
    path = tmp_path / "warning_probe.json"
    write_json_or_bytes(path, data.draw, valid["warning"].read_bytes())
    check_reader(lambda: load_warning(path, valid_files.TESTBED), tmp_path, use_probe)


@EXAMPLES
@given(st.data())
def test_damaged_patches(valid: dict[str, Path], tmp_path: Path, data: st.DataObject) -> None:
    folder = tmp_path / "patch"
    folder.mkdir(exist_ok=True)
    manifest = (valid["patch"] / MANIFEST_NAME).read_bytes()
    tensors = (valid["patch"] / TENSORS_NAME).read_bytes()
    kind = data.draw(st.sampled_from(["manifest", "rehashed", "tensors"]))
    if kind == "tensors":
        (folder / MANIFEST_NAME).write_bytes(manifest)
        (folder / TENSORS_NAME).write_bytes(data.draw(damaged_bytes(tensors)))
    else:
        write_json_or_bytes(folder / MANIFEST_NAME, data.draw, manifest)
        (folder / TENSORS_NAME).write_bytes(tensors)
    if kind == "rehashed":  # past the manifest's own hash, so that each field is read
        damaged = json.loads(manifest)
        damaged.pop(HASH_FIELD)
        damaged = data.draw(damaged_json(damaged))
        if isinstance(damaged, dict):
            damaged.pop(HASH_FIELD, None)
            damaged = with_hash(damaged)
        (folder / MANIFEST_NAME).write_text(json.dumps(damaged))
    check_reader(lambda: load_patch(folder), tmp_path)


@EXAMPLES
@given(st.data())
def test_damaged_suites(valid: dict[str, Path], tmp_path: Path, data: st.DataObject) -> None:
    lines = valid["suite"].read_bytes().splitlines(keepends=True)
    index = data.draw(st.integers(0, len(lines) - 1))
    line = tmp_path / "line"
    write_json_or_bytes(line, data.draw, lines[index])
    path = tmp_path / "suite.jsonl"
    path.write_bytes(b"".join([*lines[:index], line.read_bytes().rstrip(b"\n") + b"\n"]))
    check_reader(lambda: read_suite_file(path), tmp_path, use_items)


@EXAMPLES
@given(st.data())
def test_damaged_experiment_plans_and_results(
    valid: dict[str, Path], tmp_path: Path, data: st.DataObject
) -> None:
    result = next((valid["experiment"] / "runs").rglob("result.json"))
    name, record, source = data.draw(
        st.sampled_from(
            [
                ("plan.json", Plan, valid["experiment"] / "plan.json"),
                ("result.json", RunNumbers, result),
            ]
        )
    )
    path = tmp_path / name
    write_json_or_bytes(path, data.draw, source.read_bytes())
    check_reader(lambda: _read(path, record, "remedy"), tmp_path)
