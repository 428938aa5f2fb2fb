import math

import pytest
import torch

from loopfix.guards import GuardContext, parse_guards

SURE = torch.tensor([[12.0, 0.0, 0.0, 0.0]])  # entropy ~ 8e-5 nats
UNSURE = torch.tensor([[0.0, 0.0, 0.0, 0.0]])  # entropy log 4


def chain_for(spec: str, args: dict, temperature: float, output: list[int] = (), **context):
    chain = parse_guards(spec, args, GuardContext(vocab_size=4, **context))
    chain.add(0, [0], list(output), temperature=temperature, seed=1)
    return chain


def test_entropy_temp_raises_after_a_low_entropy_streak_then_returns() -> None:
    chain = chain_for(
        "entropy-temp", {"entropy-temp.steps": 2, "entropy-temp.temperature": 1.0}, 0.5
    )
    steps = [SURE, UNSURE, SURE, SURE, SURE]
    # A high-entropy step breaks the streak: no trigger within the first five steps.
    assert all(torch.equal(chain.apply(logits.clone()), logits) for logits in steps)
    # The streak of three is complete; the next two steps run at 1.0 (scale 0.5 / 1.0), then off.
    assert torch.equal(chain.apply(SURE.clone()), SURE * 0.5)
    assert torch.equal(chain.apply(SURE.clone()), SURE * 0.5)
    assert torch.equal(chain.apply(SURE.clone()), SURE)


def test_adaptive_temp_follows_the_top_probability() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.125, 0.125]]))
    chain = chain_for("adaptive-temp", {}, 0.5)
    # p_top1 = 0.5: T = clip(1.0 * (2 - 0.5), 0.3, 2.0) = 1.5; the sampler divides by 0.5.
    assert torch.allclose(chain.apply(logits.clone()), logits * (0.5 / 1.5), rtol=0, atol=1e-6)
    # Clipped from below: base 0.1 gives 0.15 -> 0.3.
    chain = chain_for("adaptive-temp", {"adaptive-temp.base": 0.1}, 0.6)
    assert torch.allclose(chain.apply(logits.clone()), logits * (0.6 / 0.3), rtol=0, atol=1e-6)


def test_a_raised_temperature_under_greedy_draws_with_the_row_seed() -> None:
    def draw() -> torch.Tensor:
        return chain_for("adaptive-temp", {}, 0.0).apply(UNSURE.clone())

    first = draw()
    assert torch.isfinite(first).sum() == 1  # the guard drew one token and kept only it
    assert first.max() == 0.0  # with its own logit
    assert torch.equal(first, draw())  # same seed, same draw


def test_phase_temp_by_position() -> None:
    args = {
        "phase-temp.mode": "position",
        "phase-temp.start_tokens": 2,
        "phase-temp.conclusion_at": 4,
    }
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    # start (0.3): scale 0.6 / 0.3
    assert torch.equal(chain_for("phase-temp", args, 0.6).apply(logits.clone()), logits * 2.0)
    # middle (0): only the argmax survives
    middle = chain_for("phase-temp", args, 0.6, [1, 1]).apply(logits.clone())
    assert torch.equal(middle, torch.tensor([[-math.inf, 3.0, -math.inf, -math.inf]]))
    # conclusion (0.7)
    late = chain_for("phase-temp", args, 0.6, [1, 1, 1, 1]).apply(logits.clone())
    assert torch.allclose(late, logits * (0.6 / 0.7), rtol=0, atol=1e-6)


def test_phase_temp_by_think_markers() -> None:
    args = {"phase-temp.start_tokens": 0}
    encode = {"</think>": [2, 3]}.__getitem__
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    inside = chain_for("phase-temp", args, 0.7, [1, 2], encode=encode).apply(logits.clone())
    assert torch.isfinite(inside).sum() == 1  # middle: greedy
    after = chain_for("phase-temp", args, 0.7, [1, 2, 3], encode=encode).apply(logits.clone())
    assert torch.equal(after, logits)  # conclusion at 0.7 = the sampler's own temperature


def test_markers_mode_needs_a_tokenizer() -> None:
    with pytest.raises(ValueError, match="phase-temp"):
        chain_for("phase-temp", {}, 0.7)
