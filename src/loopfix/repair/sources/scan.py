"""The scan source (`--source scan`): the loop as generated vs a non-looping resample.

Each looping record is cut at its branch point (`loops.py`). The productive branch is a
resample of the same prefix at `RESAMPLE_TEMPERATURE` with the repeat's first token banned at
the first step and EOS banned throughout (so both branches are equally long and open-ended),
kept only when the detector finds no loop in it (up to `RESAMPLE_TRIES` draws; otherwise the
pair is dropped and counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopfix.repair.config import RepairConfig
from loopfix.repair.sources.base import BranchPair
from loopfix.repair.sources.description import PairCounts
from loopfix.repair.sources.loops import continue_loops, eos_ids, looping_records, loops_again
from loopfix.repair.sources.records import PairRequest, RecordsSource

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["RESAMPLE_TEMPERATURE", "RESAMPLE_TRIES", "ScanSource"]

RESAMPLE_TEMPERATURE = 1.0
RESAMPLE_TRIES = 4


class ScanSource(RecordsSource):
    name = "scan"
    method = (
        "mean difference of matched branches from scan records (the loop as generated vs a "
        "non-looping resample of its prefix), loopfix.repair"
    )

    def pairs(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        request: PairRequest,
        config: RepairConfig,
    ) -> tuple[list[BranchPair], PairCounts]:
        eos = eos_ids(model, tokenizer)
        loops, looping, dropped = looping_records(request, tokenizer, eos)
        productive: dict[int, list[int]] = {}
        for attempt in range(RESAMPLE_TRIES):
            pending = [i for i in range(len(loops)) if i not in productive]
            if not pending or len(productive) >= request.count:
                break
            chosen = [loops[i] for i in pending]
            drawn = continue_loops(  # a fresh draw per attempt: another seed
                model,
                tokenizer,
                chosen,
                [len(loop.repetitive) for loop in chosen],
                RESAMPLE_TEMPERATURE,
                request.seed + 7919 * attempt,
                config.gen_batch_size,
                ban_eos=eos,
            )
            for i, continuation in zip(pending, drawn, strict=True):
                if not loops_again(tokenizer, loops[i], continuation):
                    productive[i] = continuation
        dropped["no_non_looping_resample"] += len(loops) - len(productive)
        pairs = [
            BranchPair(loop.prefix, loop.repetitive, productive[i], skip=loop.period)
            for i, loop in enumerate(loops)
            if i in productive
        ][: request.count]
        return pairs, PairCounts(looping, len(pairs), dict(dropped))
