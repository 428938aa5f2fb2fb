"""Score an edit without generating: the selectivity proxy and the KL on normal walks.

- d_rep / d_prod: change of the mean log-prob per token of held-out repetitive / productive
  branch tokens (want d_rep strongly negative, d_prod near 0);
- kl: mean KL(base || edited) per token on normal teacher walks (harm; the feasibility study
  found it predicts damage better than the proxy).
Forward passes start at the first edited layer from cached inputs (`PrefixCache`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from loopfix.patch import Patch, patched
from loopfix.repair.batches import ProbeBatch
from loopfix.repair.replay import PrefixCache, readout_logprobs

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["ProxyScore", "Scorer", "mean_kl"]


@dataclass(frozen=True)
class ProxyScore:
    d_rep: float
    d_prod: float
    kl: float

    @property
    def selectivity(self) -> float:
        """How much more the repetitive branches lose than the productive ones (nats/token)."""
        return self.d_prod - self.d_rep

    def to_dict(self) -> dict[str, float]:
        return {
            "d_rep": self.d_rep,
            "d_prod": self.d_prod,
            "kl": self.kl,
            "selectivity": self.selectivity,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> ProxyScore:
        return cls(data["d_rep"], data["d_prod"], data["kl"])


def _target_logprob(logprobs: list[torch.Tensor], batches: Sequence[ProbeBatch]) -> float:
    total = sum(
        float(lp.gather(1, b.targets[:, None]).sum())
        for lp, b in zip(logprobs, batches, strict=True)
    )
    return total / sum(len(b.targets) for b in batches)


class Scorer:
    """Holds the held-out sets, their base log-probs and the prefix caches per start layer."""

    def __init__(
        self,
        model: PreTrainedModel,
        repetitive: Sequence[ProbeBatch],
        productive: Sequence[ProbeBatch],
        normal: Sequence[ProbeBatch],
    ) -> None:
        self.model = model
        self.sets = {"rep": list(repetitive), "prod": list(productive), "kl": list(normal)}
        self.caches: dict[tuple[str, int], PrefixCache] = {}
        self.base_lp = {
            name: _target_logprob(readout_logprobs(model, b), b)
            for name, b in self.sets.items()
            if name != "kl"
        }
        self.base_kl = readout_logprobs(model, self.sets["kl"])

    def _cache(self, name: str, start: int) -> PrefixCache:
        if (name, start) not in self.caches:
            self.caches[name, start] = PrefixCache(self.model, self.sets[name], start)
        return self.caches[name, start]

    def score(self, patch: Patch) -> ProxyScore:
        start = min(edit.layer for edit in patch.edits)
        # Caches come from the unedited model (an edit at >= start cannot change them anyway).
        caches = {name: self._cache(name, start) for name in self.sets}
        with patched(self.model, patch):
            lp = {
                name: readout_logprobs(self.model, batches, caches[name])
                for name, batches in self.sets.items()
            }
        return ProxyScore(
            d_rep=_target_logprob(lp["rep"], self.sets["rep"]) - self.base_lp["rep"],
            d_prod=_target_logprob(lp["prod"], self.sets["prod"]) - self.base_lp["prod"],
            kl=mean_kl(self.base_kl, lp["kl"]),
        )


def mean_kl(base: Sequence[torch.Tensor], new: Sequence[torch.Tensor]) -> float:
    """KL(base || new) per read-out state, from per-batch [states, vocab] log-probs."""
    total = sum(float((b.exp() * (b - n)).sum()) for b, n in zip(base, new, strict=True))
    return total / sum(len(b) for b in base)
