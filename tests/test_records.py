import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from loopfix.detect import LoopVerdict, Span
from loopfix.records import DecodeSettings, RecordError, Sample, SampleStore, read_samples


def sample(index: int) -> Sample:
    settings = DecodeSettings(temperature=0.6, seed=3).model_dump()
    return Sample("p1", index, settings, [5, 6, 7], "a b c", "length", correct=False)


def test_samples_round_trip_through_the_store(tmp_path: Path) -> None:
    store = SampleStore(tmp_path / "records.jsonl")
    store.append([sample(0), sample(1)])
    assert list(SampleStore(store.path)) == [sample(0), sample(1)]
    line = json.loads(store.path.read_text().splitlines()[0])
    assert line["length"] == 3 and line["settings"]["temperature"] == 0.6
    assert len(store.keys()) == 2


def test_the_verdict_round_trips_as_the_detectors_dict(tmp_path: Path) -> None:
    verdict = LoopVerdict(
        True, "verbatim", 1, 2, 3, Span(1, 7, 2, 14), "b c", top1_trend=(0.5, 0.9)
    )
    looping = Sample(
        "p1", 0, {"temperature": 0.0}, [4, 5, 6, 5, 6, 5, 6], "a b c", "length", verdict
    )
    store = SampleStore(tmp_path / "records.jsonl")
    store.append([looping, sample(1)])
    assert list(SampleStore(store.path)) == [looping, sample(1)]
    lines = [json.loads(line) for line in store.path.read_text().splitlines()]
    assert lines[0]["loop"] == json.loads(json.dumps(verdict.to_dict()))
    assert lines[1]["loop"] is None
    assert list(lines[0]) == [*Sample.__dataclass_fields__, "length"]
    assert looping.looping and not sample(1).looping


def test_a_line_with_an_unknown_loop_kind_is_a_record_error(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    line = {**sample(0).to_dict(), "loop": {"looping": True, "kind": "bogus"}}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(RecordError, match=r"records.jsonl:1.*bogus"):
        list(read_samples(path))


def test_a_torn_last_line_is_dropped_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    SampleStore(path).append([sample(0)])
    with path.open("a") as handle:
        handle.write('{"prompt_id": "p1", "sample_in')
    assert list(SampleStore(path)) == [sample(0)]
    SampleStore(path).append([sample(1)])
    assert [s.sample_index for s in SampleStore(path)] == [0, 1]


def test_a_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    SampleStore(path).append([sample(0)])
    with path.open("a") as handle:
        handle.write('{"not": "a sample"}\n')
    with pytest.raises(RecordError, match=r"records.jsonl:2"):
        list(SampleStore(path))


WRITER = """
import sys
from loopfix.records import Sample, SampleStore
store = SampleStore(sys.argv[1])
i = 0
while True:
    store.append([Sample("p", i, {"temperature": 0.0}, list(range(200)), "x" * 2000, "stop")])
    i += 1
"""


def test_kill_9_loses_at_most_the_sample_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
    deadline = time.monotonic() + 60
    while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    indices = [s.sample_index for s in SampleStore(path)]
    assert len(indices) > 10
    assert indices == list(range(len(indices)))  # nothing lost in the middle, nothing doubled


def test_decode_settings_reject_bad_values() -> None:
    with pytest.raises(ValidationError, match="temperature"):
        DecodeSettings(temperature=-1)
    with pytest.raises(ValidationError, match="extra"):
        DecodeSettings(temprature=0.5)  # type: ignore[call-arg]
    assert DecodeSettings().greedy and not DecodeSettings(temperature=0.6).greedy


def test_a_length_without_ids_comes_from_the_servers_count_or_stays_unknown() -> None:
    from loopfix.scan.summary import summarize

    settings = DecodeSettings().model_dump()
    counted = Sample("p1", 0, settings, [], "a b", "stop", meta={"completion_tokens": 4})
    unknown = Sample("p2", 0, settings, [], "a b", "stop")
    empty = Sample("p3", 0, settings, [], "", "stop")
    assert (counted.length, unknown.length, empty.length) == (4, None, 0)
    (row,) = summarize([counted, unknown, empty]).settings
    assert row.unknown_lengths == 1 and row.mean_length == 2.0
