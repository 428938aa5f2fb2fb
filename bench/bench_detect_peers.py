"""Loop stops of serving engines and metrics of papers, side by side with loopfix, on the corpus.

    python bench/bench_detect_peers.py [--corpus data/detect_corpus_real/corpus.jsonl]
        [--split heldout] [--by-source]

Each peer rule is written here from its documentation and replayed over the whole output as a
stream: an item is flagged when the rule would have stopped (or flagged) the stream at any
point. Tokens are loopfix's built-in segmentation (`split_text`: words, numbers, punctuation
runs, newlines), not each model's own tokenizer; a streamed chunk ("fragment") is one such token
with the white space before it, as BPE pieces carry it.

- vLLM `repetition_detection` (`RepetitionDetectionParams`, vLLM PR #35451): stop when the
  output ends in `min_count` copies of one pattern of `min_pattern_size`..`max_pattern_size`
  tokens. Off by default (0 disables): two documented settings are replayed, the one loopfix's
  `cut` guard maps to (11..256 x 3, loopfix.guards.vllm) and the auto-enable proposal for
  structured outputs (1..20 x 3, vLLM PR #40097).
- lmdeploy `repetition_ngram_size` / `repetition_ngram_threshold` (lmdeploy PR #4288): stop when
  the n-gram of the last `size` tokens occurs `threshold` times within the last 1024 tokens. Off
  by default; 20 / 3 as set by a public pipeline that uses it.
- Ollama's runner: abort when a fragment, white space trimmed, repeats more than 30 times after
  its first appearance (32 identical fragments in a row).
- LiteLLM `REPEATED_STREAMING_CHUNK_LIMIT` = 100: raise when the last 100 chunks are identical
  and longer than 2 characters.
- The paper metric (Pipis et al.): some 30-gram occurs 20 times anywhere.
- seq-rep-4 (Welleck et al.): the share of repeated 4-grams; its flag threshold is fitted on the
  tune split (the highest tune recall at tune precision >= 0.95) and applied unchanged.
- loopfix: `detect_text` with the defaults, told the cut where the corpus knows it, and hidden;
  and with the restated-steps check (steps.py, off by default) on.

Recall per labelled kind, precision over everything flagged; `--by-source` adds one table per
source (the corpus's `source` up to its first path segment after the repository).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from loopfix.detect import DetectConfig, TokenizedText, detect_text, find_ngram_loop, split_text
from loopfix.detect.corpus import CorpusItem, read_corpus
from loopfix.detect.ngram import window_hashes
from loopfix.detect.verdict import LOOP_KINDS

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data/detect_corpus_real/corpus.jsonl"
LMDEPLOY_WINDOW = 1024
OLLAMA_REPEATS = 30  # the runner aborts once a fragment repeats more than this
LITELLM_CHUNKS = 100
LITELLM_MIN_CHARS = 3  # "len(content) > 2"
SEQ_REP_N = 4
PRECISION_BAR = 0.95


Item = CorpusItem  # its `source` shortened by `source_of`


@dataclass(frozen=True)
class Stream:
    """One output as the peers see it: token ids and the streamed chunk of each token."""

    tokens: TokenizedText
    chunks: list[str]


def read_items(path: Path) -> list[Item]:
    return [replace(item, source=source_of(item.source)) for item in read_corpus(path)]


def source_of(source: str) -> str:
    """A short source name: the repository of saved generations, issue threads, the scan, or
    real text that is not model output (the hard negatives)."""
    match = re.match(r"https://github\.com/([^/]+/[^/]+)/(blob|tree)/", source)
    if match:
        return match.group(1)
    if source.startswith("https://github.com/"):
        return "issue threads"
    if source.startswith("loopfix scan"):
        return source.split(" (")[0]
    return "real text, not model output"


def as_stream(text: str) -> Stream:
    tokens = split_text(text)
    ends = tokens.ends.tolist()
    starts = [0, *ends[:-1]]
    return Stream(tokens, [text[start:end] for start, end in zip(starts, ends, strict=True)])


def longest_run(mask: np.ndarray) -> int:
    """Length of the longest run of True in a boolean array."""
    if not mask.any():
        return 0
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def vllm_stops(ids: np.ndarray, min_size: int, max_size: int, min_count: int) -> bool:
    """Some prefix ends in `min_count` copies of a pattern of min_size..max_size tokens: a run
    of `size * (min_count - 1)` tokens equal to the token `size` back."""
    for size in range(max(min_size, 1), max_size + 1):
        if size * min_count > len(ids):
            break
        if longest_run(ids[size:] == ids[:-size]) >= size * (min_count - 1):
            return True
    return False


def lmdeploy_stops(ids: np.ndarray, size: int, threshold: int) -> bool:
    """After some token, the n-gram of the last `size` tokens occurs `threshold` times among the
    n-grams inside the last LMDEPLOY_WINDOW tokens."""
    if len(ids) < size:
        return False
    hashes = window_hashes(ids, size)
    values, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    reach = LMDEPLOY_WINDOW - size  # n-gram starts at most this far before the newest one
    for group in np.flatnonzero(counts >= threshold):
        starts = np.flatnonzero(inverse == group)
        earliest = np.searchsorted(starts, starts - reach, side="left")
        if (np.arange(len(starts)) - earliest + 1 >= threshold).any():
            return True
    return False


def identical_run(chunks: Sequence[str], needed: int, keep: Callable[[str], bool]) -> bool:
    """`needed` equal chunks in a row, the repeated chunk passing `keep`."""
    run, last = 0, None
    for chunk in chunks:
        run = run + 1 if chunk == last else 1
        last = chunk
        if run >= needed and keep(chunk):
            return True
    return False


def ollama_stops(stream: Stream) -> bool:
    trimmed = [chunk.strip() for chunk in stream.chunks]
    return identical_run(trimmed, OLLAMA_REPEATS + 2, lambda _: True)


def litellm_stops(stream: Stream) -> bool:
    return identical_run(
        stream.chunks, LITELLM_CHUNKS, lambda chunk: len(chunk) >= LITELLM_MIN_CHARS
    )


def seq_rep(ids: np.ndarray, n: int = SEQ_REP_N) -> float:
    """Share of the n-grams that repeat an earlier one: 1 - distinct / total."""
    if len(ids) < n:
        return 0.0
    hashes = window_hashes(ids, n)
    return 1.0 - len(np.unique(hashes)) / len(hashes)


def fit_seq_rep_threshold(scores: Sequence[float], loops: Sequence[bool]) -> float:
    """The lowest threshold whose flags keep precision >= PRECISION_BAR (highest recall)."""
    best = 1.0
    for threshold in sorted(set(scores), reverse=True):
        flagged = [loop for score, loop in zip(scores, loops, strict=True) if score >= threshold]
        if sum(flagged) / len(flagged) >= PRECISION_BAR:
            best = threshold
        else:
            break
    return best


@dataclass(frozen=True)
class Row:
    name: str
    flags: list[bool]


def table(rows: Sequence[Row], items: Sequence[Item]) -> list[str]:
    """Markdown lines: flagged, precision, recall, per-kind found/loops, clean flagged."""
    kinds = [kind for kind in LOOP_KINDS if any(item.kind == kind for item in items)]
    loops = sum(item.label == "loop" for item in items)
    clean = len(items) - loops
    lines = [
        "| rule | flagged | precision | recall | " + " | ".join(kinds) + " | clean flagged |",
        "|---|---|---|---|" + "---|" * len(kinds) + "---|",
    ]
    for row in rows:
        hits = [item for item, flag in zip(items, row.flags, strict=True) if flag]
        true = sum(item.label == "loop" for item in hits)
        precision = f"{true / len(hits):.3f}" if hits else "-"
        recall = f"{true / loops:.3f}" if loops else "-"
        per_kind = [
            f"{sum(item.kind == kind for item in hits)}/{sum(i.kind == kind for i in items)}"
            for kind in kinds
        ]
        lines.append(
            f"| {row.name} | {len(hits)} | {precision} | {recall} | "
            + " | ".join(per_kind)
            + f" | {len(hits) - true}/{clean} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--split", default="heldout", help="the part judged (tune fits seq-rep)")
    parser.add_argument("--by-source", action="store_true", help="also one table per source")
    args = parser.parse_args()

    everything = read_items(args.corpus)
    tune = [item for item in everything if item.split == "tune"]
    items = [item for item in everything if item.split == args.split]
    tune_scores = [seq_rep(split_text(item.text).ids) for item in tune]
    threshold = fit_seq_rep_threshold(tune_scores, [item.label == "loop" for item in tune])

    streams = [as_stream(item.text) for item in items]
    steps = DetectConfig(restated_steps=True)
    ids = [stream.tokens.ids for stream in streams]
    rows = [
        Row("vLLM `repetition_detection` 11..256 x 3", [vllm_stops(i, 11, 256, 3) for i in ids]),
        Row("vLLM `repetition_detection` 1..20 x 3", [vllm_stops(i, 1, 20, 3) for i in ids]),
        Row("lmdeploy n-gram 20 x 3 in 1024", [lmdeploy_stops(i, 20, 3) for i in ids]),
        Row("Ollama 32 identical fragments", [ollama_stops(s) for s in streams]),
        Row("LiteLLM 100 identical chunks", [litellm_stops(s) for s in streams]),
        Row("paper: a 30-gram x 20", [find_ngram_loop(i, 30, 20) is not None for i in ids]),
        Row(
            f"seq-rep-4 >= {threshold:.3f} (fitted on tune)",
            [seq_rep(i) >= threshold for i in ids],
        ),
        Row(
            "**loopfix defaults**, cut told",
            [detect_text(item.text, cut=item.cut).looping for item in items],
        ),
        Row("loopfix defaults, cut hidden", [detect_text(item.text).looping for item in items]),
        Row(
            "loopfix + restated steps (off by default), cut told",
            [detect_text(item.text, config=steps, cut=item.cut).looping for item in items],
        ),
    ]
    loops = sum(item.label == "loop" for item in items)
    print(f"{args.corpus.name} [{args.split}]: {len(items)} items, {loops} loops")
    print("\n".join(table(rows, items)))
    if args.by_source:
        for source in sorted({item.source for item in items}):
            chosen = [n for n, item in enumerate(items) if item.source == source]
            part = [items[n] for n in chosen]
            print(f"\n{source}: {len(part)} items, {sum(i.label == 'loop' for i in part)} loops")
            picked = [Row(row.name, [row.flags[n] for n in chosen]) for row in rows]
            print("\n".join(table(picked, part)))


if __name__ == "__main__":
    main()
