"""Precision and recall of the default loop detector on a labelled corpus, per kind and per score.

    python bench/eval_detect_corpus.py [--corpus data/detect_corpus_real/corpus.jsonl]
        [--split tune|heldout|all] [--no-cut] [--semantic off|lexical|embedding|auto]
        [--set FIELD=VALUE ...] [--show-misses | --verbose]

Recall per labelled kind: share of that kind's loops flagged (as any kind). Precision: share of
flagged items that are loops. The score table sweeps a threshold on the verdict's score (0 keeps
every loop verdict: the default operating point). `--no-cut` hides from the detector whether an
output was cut at the token limit (what a caller without finish_reason gets).

Per-item lines (misses and false alarms with `--show-misses`, every item with `--verbose`) are
printed only when asked for: they are for the tune part, and the held-out part is evaluated from
its summary alone (docs/detection.md, "Quality on real outputs").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from loopfix.detect import DetectConfig
from loopfix.detect.corpus import judge_corpus, read_corpus, score_corpus

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = (0.0, 0.55, 0.6, 0.7, 0.8, 0.9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=ROOT / "data/detect_corpus_real/corpus.jsonl"
    )
    parser.add_argument("--split", default="heldout", help="tune, heldout or all")
    parser.add_argument("--no-cut", action="store_true", help="do not tell the detector cuts")
    parser.add_argument("--semantic", default=None, help="override DetectConfig.semantic")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a DetectConfig field (repeatable), e.g. --set lexical_similarity=0.4",
    )
    parser.add_argument(
        "--show-misses", action="store_true", help="print every miss and false alarm (tune only)"
    )
    parser.add_argument("--verbose", action="store_true", help="print every item (tune only)")
    args = parser.parse_args()
    overrides = dict(setting.split("=", 1) for setting in args.set)
    if args.semantic is not None:
        overrides["semantic"] = args.semantic
    config = DetectConfig(**overrides)

    items = read_corpus(args.corpus, None if args.split == "all" else args.split)
    started = time.perf_counter()
    judged = judge_corpus(items, config, use_cut=not args.no_cut)
    seconds = time.perf_counter() - started
    loops = sum(item.label == "loop" for item in items)
    print(
        f"{args.corpus.name} [{args.split}]: {len(items)} items, {loops} loops, "
        f"{len(items) - loops} clean; cut {'hidden' if args.no_cut else 'told'}; "
        f"semantic={config.semantic}; {seconds:.1f} s"
    )
    scores = score_corpus(judged)
    print(f"{'kind':10} {'loops':>6} {'found':>6} {'recall':>7}")
    for kind, (found, count) in scores.recall_by_kind.items():
        recall = f"{found / count:7.3f}" if count else "      -"
        print(f"{kind:10} {count:>6} {found:>6} {recall}")
    print(f"{'threshold':>9} {'flagged':>8} {'precision':>10} {'recall':>7}")
    for threshold in THRESHOLDS:
        at = score_corpus(judged, threshold)
        print(f"{threshold:>9.2f} {at.flagged:>8} {at.precision:>10.3f} {at.recall:>7.3f}")
    for entry in judged:
        verdict, item = entry.verdict, entry.item
        wrong = verdict.looping != (item.label == "loop")
        if (wrong and args.show_misses) or args.verbose:
            status = ("MISSED" if item.label == "loop" else "FALSE ") if wrong else "ok    "
            print(
                f"{status} {item.id:45} label={item.kind:9} cut={item.cut!s:5} "
                f"got={verdict.decided_by} score={verdict.score}"
            )


if __name__ == "__main__":
    main()
