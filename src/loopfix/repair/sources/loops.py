"""A looping record cut at its branch point, and continuations of that point through the decode
engine: what the `scan` and `rescue` sources share.

For a looping sample the branch point is the start of the loop's first repeat, `onset + period`
(`LoopVerdict.onset` is the first token of the unit's first copy). The prefix (prompt + the
tokens generated before the branch point) then holds the unit once, as the testbed's prefix holds
the excursion once, so the two branches differ in "copy it again or not" rather than in what to
say first. The repetitive branch is what the model generated from the branch point (`repeats`
periods, at least `MIN_BRANCH_TOKENS`, as many as there are); states are probed from its second
period on (`skip`): the repetition mode shows from the second copy. A continuation of the same
prefix bans the repeat's first token at its first step - the rescue guard's move after rolling
back to the repeat (`loopfix.guards.rescue`, `at="repeat"`) - so it differs from the loop there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from loopfix.backends.hf import generate
from loopfix.detect import DetectConfig, detect_text
from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.chain import GuardChain
from loopfix.records import DecodeSettings, Sample
from loopfix.scan.detection import scan_detect_config
from loopfix.scan.summary import is_loop

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from loopfix.repair.sources.records import PairRequest

__all__ = [
    "MIN_BRANCH_TOKENS",
    "Loop",
    "continue_loops",
    "eos_ids",
    "loop_location",
    "loops_again",
    "looping_records",
]

MIN_BRANCH_TOKENS = 16
"""Shortest branch: a loop of period 1 or 2 still gives the probe and the detector something."""


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
    verdict = sample.loop
    if verdict is None or not sample.tokens:
        return None
    if not verdict.looping or verdict.span is None or verdict.evidence is None:
        return None
    start = verdict.span.char_start
    if start is None or tokenizer.decode(sample.tokens, skip_special_tokens=True) != sample.text:
        return None
    onset = _token_at_char(tokenizer, sample.tokens, start)
    end = _token_at_char(tokenizer, sample.tokens, start + len(verdict.evidence))
    return (onset, end - onset) if end > onset else None


@dataclass(frozen=True)
class Loop:
    prompt: list[int]
    before: list[int]  # generated tokens up to the branch point: the unit stated once
    repetitive: list[int]
    period: int
    horizon: int  # tokens the sample generated from the branch point on (EOS left out)

    @property
    def prefix(self) -> list[int]:
        return self.prompt + self.before


def eos_ids(model: PreTrainedModel, tokenizer: Any) -> list[int]:
    ids = {tokenizer.eos_token_id}
    configured = model.generation_config.eos_token_id
    ids |= set(configured) if isinstance(configured, list) else {configured}
    return sorted(i for i in ids if i is not None)


def _cut(
    sample: Sample, prompt: list[int], repeats: int, tokenizer: Any, eos: Sequence[int]
) -> Loop | str:
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
    repetitive = generated[point : point + length]
    return Loop(prompt, generated[:point], repetitive, period, len(generated) - point)


def looping_records(
    request: PairRequest, tokenizer: Any, eos: Sequence[int]
) -> tuple[list[Loop], int, Counter[str]]:
    """The loops of the looping samples (the one loop definition, `is_loop`) of the request's
    prompts, cut at their branch points after `repeats` periods; how many samples looped; why
    the others gave no loop."""
    wanted, records = set(request.prompt_ids), request.records
    looping = [s for s in records.samples if s.prompt_id in wanted and is_loop(s)]
    dropped: Counter[str] = Counter()
    loops: list[Loop] = []
    for sample in looping:
        found = _cut(sample, records.prompts[sample.prompt_id], request.repeats, tokenizer, eos)
        if isinstance(found, str):
            dropped[found] += 1
        else:
            loops.append(found)
    return loops, len(looping), dropped


class _BranchBan(Guard):
    """At the first step the token each prefix's loop repeated with; EOS at every step when
    `eos` is given."""

    name = "branch-ban"
    Params = GuardParams

    def __init__(self, first: dict[tuple[int, ...], int], eos: Sequence[int]) -> None:
        super().__init__()
        self.first, self.eos = first, list(eos)

    def start(self, row: Row) -> None:
        return None

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        if self.eos:
            logits[self.eos] = -float("inf")
        if row.output_length == 0:
            logits[self.first[tuple(row.tokens)]] = -float("inf")


def continue_loops(
    model: PreTrainedModel,
    tokenizer: Any,
    loops: Sequence[Loop],
    lengths: Sequence[int],
    temperature: float,
    seed: int,
    batch_size: int,
    ban_eos: Sequence[int] = (),
) -> list[list[int]]:
    """One continuation per loop from its branch point, the repeat's first token banned at the
    first step (and `ban_eos` throughout), of at most `lengths[i]` tokens; shorter only where
    it ended (its EOS kept)."""
    first = {tuple(loop.prefix): loop.repetitive[0] for loop in loops}
    settings = DecodeSettings(temperature=temperature, max_new_tokens=max(lengths))
    drawn = generate(
        model,
        tokenizer,
        [loop.prefix for loop in loops],
        settings,
        batch_size,
        build_chain=lambda: GuardChain([_BranchBan(first, ban_eos)]),
        seeds=[seed + i for i in range(len(loops))],
    )
    return [g.tokens[:length] for g, length in zip(drawn, lengths, strict=True)]


def _branch_detector(length: int) -> DetectConfig:
    # Sized to the branch as the scan sizes its detector to the cap (a periodic tail over half
    # of it counts). The n-gram tier is off: it looks anywhere, and the text before the branch
    # point states the unit once already.
    return scan_detect_config(length).model_copy(update={"ngram": False})


def loops_again(tokenizer: Any, loop: Loop, continuation: list[int]) -> bool:
    """Whether the detector finds a loop in the unit's statement followed by `continuation`."""
    text = tokenizer.decode(loop.before + continuation, skip_special_tokens=True)
    return detect_text(text, tokenizer, _branch_detector(len(continuation))).looping
