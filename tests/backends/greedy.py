"""Compare greedy continuations from two engines: equal, or split only at a near-tie.

vLLM and transformers compute the same logits in different orders, so where two tokens are all
but tied the argmax may differ; from there the sequences legitimately go separate ways."""

from __future__ import annotations

import torch

NEAR_TIE = 0.02  # largest probability gap between the two picks that counts as a tie


def assert_same_greedy(model, prompt: list[int], ours: list[int], theirs: list[int]) -> bool:
    """True when equal; False when they split at a near-tie (checked on the HF model)."""
    if ours == theirs:
        return True
    split = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    assert split is not None, f"one is a prefix of the other: {ours} vs {theirs}"
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + ours[:split]])).logits[0, -1].float()
    probs = torch.softmax(logits, -1)
    gap = abs(float(probs[ours[split]] - probs[theirs[split]]))
    ours_p, theirs_p = float(probs[ours[split]]), float(probs[theirs[split]])
    assert gap < NEAR_TIE and theirs_p > float(probs.max()) - NEAR_TIE, (
        f"split at {split} is not a near-tie: p={ours_p:.4f} vs {theirs_p:.4f}"
    )
    return False
