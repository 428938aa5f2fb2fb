"""Precision and recall of the default loop detector on a labelled corpus, per kind and per score.

    python bench/eval_detect_corpus.py [--corpus data/detect_corpus_real/corpus.jsonl]
        [--split tune|heldout|all] [--no-cut] [--semantic off|lexical|embedding|auto]
        [--set FIELD=VALUE ...] [--by-source] [--show-misses | --verbose]

Recall per labelled kind: share of that kind's loops flagged (as any kind). Precision: share of
flagged items that are loops. The score table sweeps a threshold on the verdict's score (0 keeps
every loop verdict: the default operating point). `--no-cut` hides from the detector whether an
output was cut at the token limit (what a caller without finish_reason gets). `--by-source` adds
one line per source (bench_detect_peers.source_of): flagged, precision, recall, semantic found.

Per-item lines (misses and false alarms with `--show-misses`, every item with `--verbose`) are
printed only when asked for: they are for the tune part, and the held-out part is evaluated from
its summary alone (docs/detection.md, "Quality on real outputs").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_detect_peers import source_of

from loopfix.detect import DetectConfig
from loopfix.detect.corpus import Judged, judge_corpus, read_corpus, score_corpus

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
    parser.add_argument("--by-source", action="store_true", help="also one line per source")
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
    if args.by_source:
        print_by_source(args.corpus, judged)
    for entry in judged:
        verdict, item = entry.verdict, entry.item
        wrong = verdict.looping != (item.label == "loop")
        if (wrong and args.show_misses) or args.verbose:
            status = ("MISSED" if item.label == "loop" else "FALSE ") if wrong else "ok    "
            print(
                f"{status} {item.id:45} label={item.kind:9} cut={item.cut!s:5} "
                f"got={verdict.decided_by} score={verdict.score}"
            )


def print_by_source(corpus: Path, judged: list[Judged]) -> None:
    """One line per source of the judged items: items, loops, flagged, precision, recall and
    semantic loops found."""
    lines = corpus.read_text(encoding="utf-8").splitlines()
    sources = {row["id"]: source_of(row.get("source", "")) for row in map(json.loads, lines)}
    print(f"{'source':44} {'items':>5} {'loops':>5} {'flagged':>7} {'prec':>6} {'recall':>6} sem")
    for source in sorted(set(sources[entry.item.id] for entry in judged)):
        part = [entry for entry in judged if sources[entry.item.id] == source]
        scores = score_corpus(part)
        found, semantic = scores.recall_by_kind["semantic"]
        print(
            f"{source[:44]:44} {len(part):>5} {scores.loops:>5} {scores.flagged:>7} "
            f"{scores.precision:>6.3f} {scores.recall:>6.3f} {found}/{semantic}"
        )


if __name__ == "__main__":
    main()
