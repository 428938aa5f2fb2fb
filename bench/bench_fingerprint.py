"""What content-keyed resume costs a scan, side by side in one run.

    python bench/bench_fingerprint.py [MODEL_FOLDER] [--repeats 3]

1. First run: hash every file of the model folder (`scan.identity.model_files` with nothing
   stored), best of --repeats with the files in the page cache (a cold disk is slower).
2. Resume: the same with the stored fingerprint, where size and mtime match (a `stat` per file).

MODEL_FOLDER defaults to the bundled testbed; pass a real model's folder for real sizes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from loopfix.models.loading import testbed_dir
from loopfix.scan import ScanConfig
from loopfix.scan.identity import model_files


def best_of(repeats: int, run: object) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default=str(testbed_dir() / "stargraph"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = ScanConfig(model=args.model)
    stored = model_files(config)
    assert stored is not None, f"{args.model} has no local files"
    size = sum(entry["size"] for entry in stored.values()) / 1e6
    first = best_of(args.repeats, lambda: model_files(config))
    resume = best_of(args.repeats, lambda: model_files(config, stored))
    print(f"{Path(args.model).name}: {len(stored)} files, {size:.1f} MB")
    print(f"first run (hash everything): {first * 1000:.1f} ms ({size / first:.0f} MB/s)")
    print(f"resume (size+mtime match):   {resume * 1000:.2f} ms")


if __name__ == "__main__":
    main()
