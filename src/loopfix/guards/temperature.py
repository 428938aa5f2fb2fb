"""Turn a guard's target temperature into logits the sampler downstream will honour.

Guards run before the sampler applies its own temperature T_s (HF warpers; vLLM's sampler). To
sample one row at a target T_g instead:
- T_g == T_s: nothing to do;
- T_g == 0: keep only the argmax (the sampler then draws it whatever T_s is);
- T_s > 0: scale the logits by T_s / T_g (the sampler divides by T_s; top-p/top-k still apply);
- T_s == 0 (greedy): the sampler would take the argmax, so the guard draws the token itself from
  softmax(logits / T_g) with the row's seeded generator and keeps only that token.
"""

from __future__ import annotations

import torch

__all__ = ["entropy", "keep_only_", "retemper_"]


def keep_only_(logits: torch.Tensor, token: int) -> None:
    value = logits[token].clone()
    logits.fill_(-float("inf"))
    logits[token] = value


def retemper_(
    logits: torch.Tensor, sampler: float, target: float, generator: torch.Generator | None
) -> None:
    """Make a 1-D logits row be sampled at `target` by a sampler running at `sampler`."""
    if target == sampler:
        return
    if target == 0.0:
        keep_only_(logits, int(torch.argmax(logits)))
    elif sampler > 0.0:
        logits.mul_(sampler / target)
    else:
        # Drawn on the CPU, where the row's generator lives.
        probs = torch.softmax(logits.float().cpu() / target, dim=-1)
        keep_only_(logits, int(torch.multinomial(probs, 1, generator=generator)))


def entropy(logits: torch.Tensor) -> float:
    """Entropy (nats) of softmax(logits); banned (-inf) tokens contribute nothing."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    return float(-(log_probs.exp() * log_probs).nan_to_num(0.0).sum())
