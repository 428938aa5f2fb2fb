"""The proxy's online watch replayed over the corpus: false stops on clean outputs, and how early
it stops true loops.

    python bench/bench_online_stops.py [--corpus data/detect_corpus_real/corpus.jsonl]
        [--split heldout] [--by-source]

Each output is streamed, token by token (loopfix's built-in tokens, each with the white space
before it), into `loopfix.serve.PartWatcher`, the judge `loopfix serve` runs on every part; then
`finish(cut)` with the corpus's cut. `stop`, `rescue` and `think-escape` share this one trigger
(`Choice._on_loop` acts on the watcher's first Detection; only what follows differs: stop ends
the choice, rescue rewinds and continues with the repeat's first token banned, think-escape
ends the reasoning), so the first intervention on each output is the same for the three.

- false stop: a clean output on which the watcher fires mid-stream (before its last token):
  under stop the answer is lost; under rescue and think-escape the model is sent on from the
  text before the "repeat", which may or may not recover (not replayed here: that needs the
  model);
- at finish: the whole-part verdict `detect_text(text, cut)` flags the output as it ends (the
  client already has all but the held-back tokens; stop withholds up to the holdback and sets
  finish_reason "repetition");
- lead: on loops caught mid-stream, the tokens between the stop and the output's end (the
  tokens a stop saves on these capped outputs), also as a share of the output.

`--restated-steps-every N` measures a candidate think-escape trigger that `serve` does not have:
besides the watcher, the restated-steps check (steps.py, off by default and, like every semantic
check, never run mid-stream) on the text so far every N tokens; the earlier of the two fires.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_detect_peers import CORPUS, Item, as_stream, read_items

from loopfix.detect import DetectConfig, split_text
from loopfix.detect.steps import find_restated_steps
from loopfix.serve import PartWatcher


@dataclass(frozen=True)
class Replay:
    """Where the watcher fired on one output (None: never), and the output's length."""

    item: Item
    tokens: int
    fired_at: int | None
    at_finish: bool

    @property
    def mid_stream(self) -> bool:
        return self.fired_at is not None and not self.at_finish


def replay(item: Item, config: DetectConfig) -> Replay:
    stream = as_stream(item.text)
    watcher = PartWatcher(config, keep_text=True)  # as under stop, rescue and think-escape
    for chunk in stream.chunks:
        if watcher.feed(chunk) is not None:
            # Fired on the token just completed before this chunk, or on this chunk's token.
            return Replay(item, len(stream.chunks), watcher.tokens, False)
    found = watcher.finish(cut=item.cut)
    return Replay(item, len(stream.chunks), watcher.tokens if found else None, found is not None)


def restated_steps_stop(item: Item, config: DetectConfig, every: int) -> int | None:
    """Tokens seen when the restated-steps check first fires on the text so far, checked every
    `every` tokens (None: never before the end)."""
    ends = split_text(item.text).ends
    for count in range(every, len(ends), every):
        text = item.text[: int(ends[count - 1])]
        if find_restated_steps(split_text(text), config) is not None:
            return count
    return None


def with_restated_steps(replay: Replay, config: DetectConfig, every: int) -> Replay:
    """The replay when the restated-steps trigger runs beside the watcher."""
    fired = restated_steps_stop(replay.item, config, every)
    if fired is None or (
        replay.mid_stream and replay.fired_at is not None and replay.fired_at <= fired
    ):
        return replay
    return Replay(replay.item, replay.tokens, fired, False)


def summary(replays: Sequence[Replay]) -> list[str]:
    clean = [r for r in replays if r.item.label == "clean"]
    loops = [r for r in replays if r.item.label == "loop"]
    false_stops = sum(r.mid_stream for r in clean)
    lines = [
        f"clean {len(clean)}: stopped mid-stream {false_stops}"
        + (f" ({false_stops / len(clean):.1%})" if clean else "")
        + f", flagged at finish {sum(r.at_finish for r in clean)}"
    ]
    caught = [r for r in loops if r.mid_stream]
    leads = [r.tokens - (r.fired_at or 0) for r in caught]
    shares = [lead / r.tokens for lead, r in zip(leads, caught, strict=True)]
    lines.append(
        f"loops {len(loops)}: stopped mid-stream {len(caught)}, flagged at finish "
        f"{sum(r.at_finish for r in loops)}, missed {sum(r.fired_at is None for r in loops)}"
    )
    if caught:
        lines.append(
            f"  lead (tokens before the end): median {statistics.median(leads):.0f}, "
            f"mean {statistics.mean(leads):.0f}, median share {statistics.median(shares):.0%}"
        )
    kinds = sorted({r.item.kind for r in loops})
    for kind in kinds:
        own = [r for r in loops if r.item.kind == kind]
        mid = [r for r in own if r.mid_stream]
        lead = statistics.median(r.tokens - (r.fired_at or 0) for r in mid) if mid else 0
        lines.append(
            f"  {kind:9} {len(own):>4}: mid-stream {len(mid):>3}, at finish "
            f"{sum(r.at_finish for r in own):>3}, median lead {lead:.0f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--split", default="heldout", help="tune, heldout or all")
    parser.add_argument("--by-source", action="store_true", help="also one summary per source")
    parser.add_argument(
        "--restated-steps-every",
        type=int,
        default=0,
        metavar="N",
        help="also run the restated-steps check on the text so far every N tokens",
    )
    args = parser.parse_args()
    items = [i for i in read_items(args.corpus) if args.split in ("all", i.split)]
    config = DetectConfig()
    replays = [replay(item, config) for item in items]
    trigger = "PartWatcher"
    if args.restated_steps_every:
        steps = config.model_copy(update={"restated_steps": True})
        replays = [with_restated_steps(r, steps, args.restated_steps_every) for r in replays]
        trigger += f" + restated steps every {args.restated_steps_every} tokens"
    print(f"{args.corpus.name} [{args.split}]: {len(items)} items, streamed through {trigger}")
    print("\n".join(summary(replays)))
    if args.by_source:
        for source in sorted({r.item.source for r in replays}):
            print(f"\n{source}:")
            print("\n".join(summary([r for r in replays if r.item.source == source])))


if __name__ == "__main__":
    main()
