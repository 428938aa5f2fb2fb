"""The rescue source (`--source rescue`): the loop vs the decode engine's rescue of it.

Each looping record is cut at its branch point, where the repeated span first starts repeating
(`loops.py`); the repetitive branch is the loop's own continuation from there. The productive
branch is what the rescue guard does with a rollback to that point (`at="repeat"`): the engine
continues the same prefix with the repeat's first token banned at the first step, nothing else
changed (EOS allowed), so the branch is the model's own way out. Two variants per loop, both
kept and labelled (`BranchPair.variant`): greedy, and sampled at the primary verification
temperature (`RepairConfig.temperature`; none when that is 0). Each continuation runs as far as
the loop ran in its record (to the scan's cap), and the pair keeps its first tokens, as many as
the repetitive branch has. A continuation that ends within those (EOS) gives no pair, nor one that
loops again: the detector finds a loop in the kept branch (sized to it, as the scan source
checks its resamples), or the continuation runs to the cap and the detector finds a loop in it
(the one loop definition: one that ends by itself later does not loop). Both are counted by
variant in `dropped`.
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

__all__ = ["RescueSource"]


class RescueSource(RecordsSource):
    name = "rescue"
    method = (
        "mean difference of matched branches from scan records (the loop from its first repeat "
        "vs the decode engine's rescue there: the repeat's first token banned, greedy and "
        "sampled), loopfix.repair"
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
        variants = {"greedy": 0.0, "sampled": config.temperature}
        if config.temperature == 0:
            del variants["sampled"]
        rescued = {
            variant: continue_loops(
                model,
                tokenizer,
                loops,
                [loop.horizon for loop in loops],
                temperature,
                request.seed,
                config.gen_batch_size,
            )
            if loops
            else []
            for variant, temperature in variants.items()
        }
        pairs: list[BranchPair] = []
        made = dict.fromkeys(variants, 0)
        for i, loop in enumerate(loops):  # a loop's variants side by side, so `count` keeps both
            length = len(loop.repetitive)
            for variant in variants:
                continuation = rescued[variant][i]
                branch = continuation[:length]
                if len(branch) < length or set(eos) & set(branch):
                    dropped[f"{variant}_ended_early"] += 1
                elif loops_again(tokenizer, loop, branch) or (
                    not set(eos) & set(continuation) and loops_again(tokenizer, loop, continuation)
                ):
                    dropped[f"{variant}_looped_again"] += 1
                elif len(pairs) < request.count:
                    pairs.append(
                        BranchPair(loop.prefix, loop.repetitive, branch, loop.period, variant)
                    )
                    made[variant] += 1
        return pairs, PairCounts(looping, len(pairs), dict(dropped), made, variants)
