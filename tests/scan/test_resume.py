"""A real scan subprocess is killed with -9 mid-run, the rerun is interrupted with Ctrl-C (SIGINT)
mid-run, and a last rerun completes it with exactly the records an uninterrupted run writes."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from loopfix.scan import ScanConfig, run_scan

OPTIONS = {
    "model": "loopfix:stargraph",
    "suite": "stargraph",
    "n": 8,
    "temperatures": [0.0, 1.0],
    "samples": 2,
    "max_new_tokens": 24,
    "batch_size": 4,
}
TOTAL = 8 * 2 * 2
ARGS = [
    "loopfix:stargraph",
    "--suite",
    "stargraph",
    "--n",
    "8",
    "--temperatures",
    "0,1",
    "--samples",
    "2",
    "--max-new-tokens",
    "24",
    "--batch-size",
    "4",
]


def lines(out: Path) -> list[str]:
    path = out / "records.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def wait_for_lines(out: Path, count: int, alive=lambda: True) -> None:
    deadline = time.monotonic() + 180
    while len(lines(out)) < count:
        assert alive() and time.monotonic() < deadline
        time.sleep(0.02)


def keyed(rows: list[dict]) -> dict[tuple, list[int]]:
    return {
        (r["prompt_id"], r["sample_index"], r["settings"]["temperature"]): r["tokens"] for r in rows
    }


def kill_9_midway(out: Path, log: Path) -> int:
    command = [
        sys.executable,
        "-c",
        "from loopfix.cli import main; main()",
        "scan",
        *ARGS,
        "--out",
        str(out),
    ]
    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    wait_for_lines(out, 4, alive=lambda: process.poll() is None)
    process.kill()  # SIGKILL: no cleanup runs
    process.wait()
    return len(lines(out))


def ctrl_c_midway(config: ScanConfig, backend, stored: int) -> None:
    """SIGINT to this process once a few more records are stored (as Ctrl-C in a terminal)."""
    out = Path(config.out)
    sender = threading.Thread(
        target=lambda: (
            wait_for_lines(out, min(stored + 4, TOTAL)),
            os.kill(os.getpid(), signal.SIGINT),
        )
    )
    # A terminal's Ctrl-C meets Python's default handler; an earlier test in the session (a
    # library's own handler) must not decide what this one sees.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_scan(config, backend=backend)
            time.sleep(60)  # the run finished first: the signal lands here instead
    finally:
        sender.join()
        signal.signal(signal.SIGINT, previous)


def test_kill_9_then_ctrl_c_then_resume_equals_an_uninterrupted_run(
    tmp_path: Path, testbed_backend
) -> None:
    config = ScanConfig(**OPTIONS, out=tmp_path / "run")  # type: ignore[arg-type]
    after_kill = kill_9_midway(config.out, tmp_path / "log.txt")
    assert 4 <= after_kill < TOTAL, (tmp_path / "log.txt").read_text()

    ctrl_c_midway(config, testbed_backend, after_kill)
    stored = [json.loads(line) for line in lines(config.out)]  # every line a whole record
    # The kill may land late on a loaded machine; the interrupt then needs fewer new records.
    assert len(stored) == len(keyed(stored)) >= min(after_kill + 4, TOTAL)

    run_scan(config, backend=testbed_backend)
    rows = [json.loads(line) for line in lines(config.out)]
    assert len(rows) == len(keyed(rows)) == TOTAL  # nothing lost, nothing twice

    reference = config.model_copy(update={"out": tmp_path / "reference"})
    run_scan(reference, backend=testbed_backend)
    expected = [json.loads(line) for line in lines(reference.out)]
    assert keyed(rows) == keyed(expected)
