"""Precision and recall of the default loop detector on the labelled corpus, per kind.

    python bench/eval_detect_corpus.py [--corpus tests/data/detect_corpus/corpus.jsonl]
        [--semantic off|lexical|embedding|auto] [--verbose]

Recall per labelled kind: share of that kind's loops flagged (as any kind). Precision per
detected kind: share of samples flagged with that kind that are loops. Clean samples are hard
negatives (choruses, tables, long lists, similar code lines, arithmetic, questionnaires, long
reasoning).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from loopfix.detect import DetectConfig, detect_text

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=ROOT / "tests/data/detect_corpus/corpus.jsonl"
    )
    parser.add_argument("--semantic", default=None, help="override DetectConfig.semantic")
    parser.add_argument("--verbose", action="store_true", help="print every sample")
    args = parser.parse_args()
    config = DetectConfig() if args.semantic is None else DetectConfig(semantic=args.semantic)

    samples = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines()]
    loops, hits, flagged, true_flags = Counter(), Counter(), Counter(), Counter()
    errors: list[str] = []
    started = time.perf_counter()
    for sample in samples:
        verdict = detect_text(sample["text"], config=config)
        is_loop = sample["label"] == "loop"
        if is_loop:
            loops[sample["kind"]] += 1
            hits[sample["kind"]] += verdict.looping
        if verdict.looping:
            flagged[verdict.kind] += 1
            true_flags[verdict.kind] += is_loop
        if verdict.looping != is_loop:
            errors.append(
                f"{'MISSED' if is_loop else 'FALSE '} {sample['id']} ({sample['category']})"
            )
        if args.verbose:
            label = sample["kind"] or "clean"
            print(
                f"{sample['id']:24} label={label:9} got={verdict.kind} onset={verdict.onset} "
                f"period={verdict.period} repeats={verdict.repeats}"
            )
    seconds = time.perf_counter() - started

    total_loops, total_flags = sum(loops.values()), sum(flagged.values())
    print(
        f"corpus: {len(samples)} samples, {total_loops} loops, {len(samples) - total_loops} "
        f"clean; semantic={config.semantic}; {seconds:.1f} s"
    )
    print(f"{'kind':10} {'loops':>6} {'recall':>7} {'flagged':>8} {'precision':>10}")
    for kind in ("verbatim", "near", "segment", "semantic"):
        recall = hits[kind] / loops[kind] if loops[kind] else float("nan")
        precision = true_flags[kind] / flagged[kind] if flagged[kind] else float("nan")
        print(f"{kind:10} {loops[kind]:>6} {recall:>7.3f} {flagged[kind]:>8} {precision:>10.3f}")
    recall = sum(hits.values()) / total_loops
    precision = sum(true_flags.values()) / max(1, total_flags)
    print(f"{'all':10} {total_loops:>6} {recall:>7.3f} {total_flags:>8} {precision:>10.3f}")
    for line in errors:
        print(line)


if __name__ == "__main__":
    main()
