"""`run_scan` on offline vLLM from a process that has no vLLM: the scan runs under vLLM's own
venv (`.venv-vllm`), in a child process, on this very loopfix source.

    VLLM_PYTHON -m loopfix.scan.vllm_scan CONFIG.json

The parent writes the `ScanConfig` (backend `vllm`) as JSON and starts the child; the child
prints a `MESSAGE_PREFIX` line per finished batch, which the parent hands to its `on_progress`,
one with its peak resident memory at the end, which counts in the open stage's peak
(`note_peak`), and, when the scan refuses its input, the error's class and message, which the
parent raises as the same error; every other line (vLLM's own log) goes to OUT/vllm.log. A
child that dies otherwise (vLLM cannot run the model) is a `VLLMScanFailed`. The records,
summary.json and report.html are the scan's own, so a killed scan resumes like any other.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path

from loopfix.atomic import write_text_atomic
from loopfix.backends.base import BackendError
from loopfix.backends.vllm import cpu_process_env
from loopfix.progress import Progress
from loopfix.scan.config import ScanConfig
from loopfix.stages import note_peak, peak_rss_mib
from loopfix.summaries import ScanSummary
from loopfix.vllm_venv import SOURCE

__all__ = ["MESSAGE_PREFIX", "VLLMScanFailed", "scan_under_vllm"]

MESSAGE_PREFIX = "loopfix-vllm-scan "
LOG_NAME = "vllm.log"


class VLLMScanFailed(BackendError):
    """The vLLM child died on something other than the scan's input (its last log line)."""


def scan_under_vllm(
    config: ScanConfig, python: Path, threads: int, on_progress: Progress | None = None
) -> ScanSummary:
    """Run `config` (backend `vllm`) under `python` with `threads` OpenMP threads; the scan's
    summary.json."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    job = out / "vllm_scan.json"
    write_text_atomic(job, config.model_dump_json())
    env = cpu_process_env(
        PYTHONPATH=os.pathsep.join(filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")])),
        OMP_NUM_THREADS=str(threads),
    )
    command = [str(python), "-m", "loopfix.scan.vllm_scan", str(job)]
    tail: deque[str] = deque(maxlen=1)
    refused: dict = {}
    with (
        (out / LOG_NAME).open("w") as log,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        ) as child,
    ):
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith(MESSAGE_PREFIX):
                message = json.loads(line.removeprefix(MESSAGE_PREFIX))
                if "peak_mib" in message:
                    note_peak(message["peak_mib"])
                elif "error" in message:
                    refused = message
                elif on_progress is not None:
                    on_progress(*message["progress"])
                continue
            log.write(line)
            if line.strip():
                tail.append(line.strip())
        code = child.wait()
    if refused:
        module, name = refused["type"].split(":")
        raise getattr(importlib.import_module(module), name)(refused["error"])
    if code != 0:
        last = tail[0] if tail else "no output"
        path = out / LOG_NAME
        raise VLLMScanFailed(f"the vLLM scan under {python} exited {code} ({path}): {last}")
    return ScanSummary.from_json(json.loads((out / "summary.json").read_text()))


def _tell(message: dict) -> None:
    print(MESSAGE_PREFIX + json.dumps(message), flush=True)


def main() -> None:
    from loopfix.errors import LoopfixError
    from loopfix.scan import run_scan

    config = ScanConfig.model_validate_json(Path(sys.argv[1]).read_text())
    try:
        run_scan(config, on_progress=lambda done, total: _tell({"progress": [done, total]}))
    except LoopfixError as error:
        kind = type(error)
        _tell({"error": str(error), "type": f"{kind.__module__}:{kind.__qualname__}"})
        raise SystemExit(1) from None
    _tell({"peak_mib": peak_rss_mib()})


if __name__ == "__main__":
    main()
