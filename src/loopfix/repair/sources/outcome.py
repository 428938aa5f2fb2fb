"""The outcome source (`--source outcome`): runs that loop vs runs that converge, the seed's
literal construction, kept as a baseline for what the matched sources add.

Samples of one prompt are paired: each looping sample (the one loop definition, `is_loop`) with
an unused sample of the same prompt that did not loop and ended by itself (finish reason
"stop"). The two runs share the prompt and whatever tokens they generated alike; the branch
point is their first differing token, and both branches are the whole runs from there, cut to
the shorter one's length before its EOS: equal-length windows at matched positions. Every state
is probed (`skip` 0). A prompt without such a partner, or a window under `MIN_BRANCH_TOKENS`,
gives no pair (counted in `dropped`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import takewhile
from typing import TYPE_CHECKING

from loopfix.records import Sample
from loopfix.repair.config import RepairConfig
from loopfix.repair.sources.base import BranchPair
from loopfix.repair.sources.description import PairCounts
from loopfix.repair.sources.loops import MIN_BRANCH_TOKENS, eos_ids
from loopfix.repair.sources.records import PairRequest, RecordsSource
from loopfix.scan.summary import is_loop

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["OutcomeSource"]


def _open(tokens: Sequence[int], eos: Sequence[int]) -> list[int]:
    """The generated tokens before the first EOS."""
    return list(takewhile(lambda token: token not in eos, tokens))


class OutcomeSource(RecordsSource):
    name = "outcome"
    method = (
        "mean difference of runs that loop vs runs of the same prompt that converge (equal-length "
        "windows from their first differing token), loopfix.repair"
    )

    def pairs(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        request: PairRequest,
        config: RepairConfig,
    ) -> tuple[list[BranchPair], PairCounts]:
        eos = eos_ids(model, tokenizer)
        wanted = set(request.prompt_ids)
        looping: dict[str, list[Sample]] = defaultdict(list)
        converging: dict[str, list[Sample]] = defaultdict(list)
        for sample in request.records.samples:
            if sample.prompt_id not in wanted or not sample.tokens:
                continue
            if is_loop(sample):
                looping[sample.prompt_id].append(sample)
            elif sample.finish_reason == "stop":
                converging[sample.prompt_id].append(sample)
        dropped: Counter[str] = Counter()
        pairs: list[BranchPair] = []
        for prompt_id, loops in looping.items():
            partners = converging[prompt_id]
            for index, sample in enumerate(loops):
                if index >= len(partners):
                    dropped["no_converging_run"] += 1
                    continue
                repetitive = _open(sample.tokens, eos)
                productive = _open(partners[index].tokens, eos)
                shared = 0
                while (
                    shared < min(len(repetitive), len(productive))
                    and repetitive[shared] == productive[shared]
                ):
                    shared += 1
                length = min(len(repetitive), len(productive)) - shared
                if length < MIN_BRANCH_TOKENS:
                    dropped["window_too_short"] += 1
                    continue
                prefix = request.records.prompts[prompt_id] + repetitive[:shared]
                pairs.append(
                    BranchPair(
                        prefix,
                        repetitive[shared : shared + length],
                        productive[shared : shared + length],
                        skip=0,
                    )
                )
        counts = PairCounts(
            sum(len(v) for v in looping.values()), min(len(pairs), request.count), dict(dropped)
        )
        return pairs[: request.count], counts
