"""The proxy watcher's CPU per streamed token, by stream length: `PartWatcher.feed` in deltas of
4 characters over the clean texts of the real-output corpus (data/detect_corpus_real, label
"clean"), joined in corpus order and repeated until the stream holds --tokens tokens, then
`finish` (the final judge over the whole part). Reports microseconds per token for feed, the
number of judge calls on the text so far, and the final judge's time.

    PYTHONPATH=src .venv/bin/python bench/bench_watcher.py [--tokens 20000,80000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from loopfix.detect import DetectConfig
from loopfix.serve import PartWatcher

CORPUS = Path(__file__).resolve().parents[1] / "data" / "detect_corpus_real" / "corpus.jsonl"
DELTA = 4


def clean_text() -> str:
    rows = map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())
    return "\n\n".join(row["text"] for row in rows if row["label"] == "clean") + "\n\n"


def measure(tokens: int) -> dict[str, float]:
    """Feed the clean texts, again and again, until the watcher has seen `tokens` tokens."""
    text = clean_text()
    watcher = PartWatcher(DetectConfig(), keep_text=False)
    started = time.process_time()
    position = 0
    while watcher.tokens < tokens:
        watcher.feed(text[position : position + DELTA])
        position = (position + DELTA) % len(text)
    fed = time.process_time() - started
    started = time.process_time()
    watcher.finish(cut=False)
    final = time.process_time() - started
    return {
        "tokens": watcher.tokens,
        "us_per_token": 1e6 * fed / watcher.tokens,
        "judge_calls": watcher.judge_calls,
        "final_judge_s": final,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="20000,80000", help="stream lengths, comma-separated")
    args = parser.parse_args()
    print("tokens  us/token (feed, CPU)  judge calls  final judge (s)")
    for tokens in (int(part) for part in args.tokens.split(",")):
        row = measure(tokens)
        print(
            f"{row['tokens']:>6}  {row['us_per_token']:>20.0f}  {row['judge_calls']:>11}"
            f"  {row['final_judge_s']:>15.2f}"
        )


if __name__ == "__main__":
    main()
