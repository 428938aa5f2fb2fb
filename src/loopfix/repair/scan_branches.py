"""Matched branch pairs from scan records: the loop as generated vs a non-looping resample.

For a looping sample the branch point is the start of the loop's first repeat, `onset + period`
(`LoopVerdict.onset` is the first token of the unit's first copy). The prefix (prompt + the
tokens generated before the branch point) then holds the unit once, as the testbed's prefix holds
the excursion once, so the two branches differ in "copy it again or not" rather than in what to
say first:
- repetitive: the tokens the model generated from the branch point (`repeats` periods, at least
  `MIN_BRANCH_TOKENS`, as many as there are);
- productive: a resample of the same prefix at temperature `RESAMPLE_TEMPERATURE` with the
  repeat's first token banned at the first step and EOS banned throughout, kept only when the
  detector finds no loop in it (up to `RESAMPLE_TRIES` draws; otherwise the pair is dropped).
Both are equally long and open-ended (no EOS): the pair is matched on termination, so a direction
learnt from it cannot be "keep going vs stop" (the feasibility study's trap). States are probed
from the second period of the branch on (`skip`): the repetition mode shows from the second copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from loopfix.backends.hf import generate
from loopfix.detect import DetectConfig, LoopVerdict, detect_text
from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.chain import GuardChain
from loopfix.records import DecodeSettings, Sample
from loopfix.repair.branches import BranchPair
from loopfix.repair.scan_records import ScanRecords
from loopfix.scan.detection import scan_detect_config
from loopfix.scan.summary import is_loop

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "MIN_BRANCH_TOKENS",
    "RESAMPLE_TEMPERATURE",
    "RESAMPLE_TRIES",
    "loop_location",
    "normal_texts",
    "scan_pairs",
]

MIN_BRANCH_TOKENS = 16
"""Shortest branch: a loop of period 1 or 2 still gives the probe and the detector something."""
RESAMPLE_TEMPERATURE = 1.0
RESAMPLE_TRIES = 4


def _decoded_length(tokenizer: Any, tokens: Sequence[int]) -> int:
    return len(tokenizer.decode(list(tokens), skip_special_tokens=True))


def _token_at_char(tokenizer: Any, tokens: Sequence[int], char: int) -> int:
    """The largest i whose tokens[:i] decode to at most `char` characters: the index of the
    token that starts at `char` (binary search: decoded length grows with i)."""
    low, high = 0, len(tokens)
    while low < high:
        middle = (low + high + 1) // 2
        if _decoded_length(tokenizer, tokens[:middle]) <= char:
            low = middle
        else:
            high = middle - 1
    return low


def loop_location(sample: Sample, tokenizer: Any) -> tuple[int, int] | None:
    """(onset, period) of a looping sample's loop in its generated token ids, or None.

    The stored verdict's positions are in the tokens of the re-tokenized text (special tokens
    are not in the text, and re-tokenizing may split differently), so the loop is located by its
    characters: the span's first character and the unit's text (`evidence`). None when the
    sample does not loop, carries no character span, or its text is not its decoded tokens."""
    if not sample.loop or not sample.tokens:
        return None
    verdict = LoopVerdict.from_dict(sample.loop)
    if not verdict.looping or verdict.span is None or verdict.evidence is None:
        return None
    start = verdict.span.char_start
    if start is None or tokenizer.decode(sample.tokens, skip_special_tokens=True) != sample.text:
        return None
    onset = _token_at_char(tokenizer, sample.tokens, start)
    end = _token_at_char(tokenizer, sample.tokens, start + len(verdict.evidence))
    return (onset, end - onset) if end > onset else None


@dataclass(frozen=True)
class _Loop:
    prompt: list[int]
    before: list[int]  # generated tokens up to the branch point: the unit stated once
    repetitive: list[int]
    period: int


def _eos_ids(model: PreTrainedModel, tokenizer: Any) -> list[int]:
    ids = {tokenizer.eos_token_id}
    configured = model.generation_config.eos_token_id
    ids |= set(configured) if isinstance(configured, list) else {configured}
    return sorted(i for i in ids if i is not None)


def _find_loop(
    sample: Sample, prompt: list[int], repeats: int, tokenizer: Any, eos: Sequence[int]
) -> _Loop | str:
    """The sample's loop cut at the branch point, or why it gives no pair."""
    location = loop_location(sample, tokenizer)
    if location is None:
        return "loop_not_located"
    onset, period = location
    generated = list(sample.tokens)
    if generated and generated[-1] in eos:
        generated = generated[:-1]  # a branch is open-ended
    point = onset + period
    length = min(len(generated) - point, max(repeats * period, MIN_BRANCH_TOKENS))
    if length < 2 * period:
        return "loop_too_short"  # no second period to probe after the skip
    return _Loop(prompt, generated[:point], generated[point : point + length], period)


class _BranchBan(Guard):
    """EOS at every step, and at the first step the token each prefix's loop repeated with."""

    name = "branch-ban"
    Params = GuardParams

    def __init__(self, first: dict[tuple[int, ...], int], eos: Sequence[int]) -> None:
        super().__init__()
        self.first, self.eos = first, list(eos)

    def start(self, row: Row) -> None:
        return None

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        logits[self.eos] = -float("inf")
        if row.output_length == 0:
            logits[self.first[tuple(row.tokens)]] = -float("inf")


def _resample(
    model: PreTrainedModel,
    tokenizer: Any,
    loops: Sequence[_Loop],
    eos: list[int],
    seed: int,
    batch_size: int,
) -> list[list[int]]:
    """One continuation per loop, as long as its repetitive branch (EOS is banned, so every row
    runs to the longest branch and is cut to its own length), through the decode engine."""
    prefixes = [loop.prompt + loop.before for loop in loops]
    first = {tuple(p): loop.repetitive[0] for p, loop in zip(prefixes, loops, strict=True)}
    settings = DecodeSettings(
        temperature=RESAMPLE_TEMPERATURE,
        max_new_tokens=max(len(loop.repetitive) for loop in loops),
    )
    drawn = generate(
        model,
        tokenizer,
        prefixes,
        settings,
        batch_size,
        build_chain=lambda: GuardChain([_BranchBan(first, eos)]),
        seeds=[seed + i for i in range(len(loops))],
    )
    return [g.tokens[: len(loop.repetitive)] for g, loop in zip(drawn, loops, strict=True)]


def _branch_detector(length: int) -> DetectConfig:
    # Sized to the branch as the scan sizes its detector to the cap (a periodic tail over half
    # of it counts). The n-gram tier is off: it looks anywhere, and the text before the branch
    # point states the unit once already.
    return scan_detect_config(length).model_copy(update={"ngram": False})


def _loops(tokenizer: Any, loop: _Loop, continuation: list[int]) -> bool:
    text = tokenizer.decode(loop.before + continuation, skip_special_tokens=True)
    return detect_text(text, tokenizer, _branch_detector(len(continuation))).looping


def scan_pairs(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    records: ScanRecords,
    prompt_ids: Sequence[str],
    repeats: int,
    count: int,
    seed: int,
    batch_size: int,
) -> tuple[list[BranchPair], dict[str, Any]]:
    """Up to `count` pairs from the looping samples of `prompt_ids`, and how many samples gave
    none and why."""
    wanted, eos = set(prompt_ids), _eos_ids(model, tokenizer)
    looping = [s for s in records.samples if s.prompt_id in wanted and is_loop(s)]
    dropped: Counter[str] = Counter()
    loops: list[_Loop] = []
    for sample in looping:
        found = _find_loop(sample, records.prompts[sample.prompt_id], repeats, tokenizer, eos)
        if isinstance(found, str):
            dropped[found] += 1
        else:
            loops.append(found)
    productive: dict[int, list[int]] = {}
    for attempt in range(RESAMPLE_TRIES):
        pending = [i for i in range(len(loops)) if i not in productive]
        if not pending or len(productive) >= count:
            break
        chosen = [loops[i] for i in pending]  # a fresh draw per attempt: another seed
        drawn = _resample(model, tokenizer, chosen, eos, seed + 7919 * attempt, batch_size)
        for i, continuation in zip(pending, drawn, strict=True):
            if not _loops(tokenizer, loops[i], continuation):
                productive[i] = continuation
    dropped["no_non_looping_resample"] += len(loops) - len(productive)
    pairs = [
        BranchPair(
            prefix=loop.prompt + loop.before,
            repetitive=loop.repetitive,
            productive=productive[i],
            skip=loop.period,
        )
        for i, loop in enumerate(loops)
        if i in productive
    ][:count]
    counts = {"looping_samples": len(looping), "pairs": len(pairs), "dropped": dict(dropped)}
    return pairs, counts


def normal_texts(
    records: ScanRecords, prompt_ids: Sequence[str], count: int
) -> list[tuple[list[int], int]]:
    """(prompt + generated tokens, prompt length) of up to `count` samples of `prompt_ids` that
    did not loop: the normal text of the KL check."""
    wanted = set(prompt_ids)
    texts = [
        (records.prompts[s.prompt_id] + list(s.tokens), len(records.prompts[s.prompt_id]))
        for s in records.samples
        if s.prompt_id in wanted and s.tokens and s.finish_reason != "error" and not is_loop(s)
    ]
    return texts[:count]
