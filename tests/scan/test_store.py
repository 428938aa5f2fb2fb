import os
import signal
from pathlib import Path

import pytest

from loopfix.records import Sample, SampleStore
from loopfix.scan.store import append_uninterrupted, deferred_interrupt


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
