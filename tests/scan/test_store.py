import json
import os
import signal
from pathlib import Path

import pytest

from loopfix.records import Sample, SampleStore
from loopfix.scan.store import append_uninterrupted, deferred_interrupt, write_json


def test_ctrl_c_during_a_write_is_raised_after_the_whole_batch_is_stored(tmp_path: Path) -> None:
    store = SampleStore(tmp_path / "records.jsonl")
    samples = [Sample(f"p{i}", 0, {"temperature": 0.0}, [1], "x", "stop") for i in range(3)]
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupt():
            os.kill(os.getpid(), signal.SIGINT)  # arrives mid-write
            store.append(samples[:2])
            store.append(samples[2:])
    assert [s.prompt_id for s in store] == ["p0", "p1", "p2"]
    append_uninterrupted(store, [])  # nothing to write is a no-op
    assert len(list(store)) == 3


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json(path, {"a": 1})
    write_json(path, {"b": 2})
    assert json.loads(path.read_text()) == {"b": 2}
    assert list(tmp_path.iterdir()) == [path]
