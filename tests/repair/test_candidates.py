import torch

from loopfix.models import tiny_model
from loopfix.repair.candidates import candidate_grid, edit_norm, layer_sets, norm_matched_control
from loopfix.repair.directions import random_directions


def test_grid_respects_the_touched_budget_and_uses_top_columns() -> None:
    model = tiny_model("llama", seed=4)
    directions = random_directions(2, 64, seed=1)
    grid = candidate_grid(
        model,
        directions,
        ("down_proj", "attn_out"),
        [0, 1],
        2,
        (8, 32),
        (1.0, 6.0),
        max_touched=64 * 32,
    )
    labels = {c.label() for c in grid}
    assert "down_proj L0,1 k8 a6" in labels and "attn_out L1 k32 a1" in labels
    assert "down_proj L0,1 k32 a1" not in labels  # 2 x 32 x 64 weights: over the budget
    # attn_out has only 32 inputs in the tiny config: k is capped at the matrix width.
    assert all(len(r.columns) <= 32 for c in grid if c.kind == "attn_out" for r in c.requests)
    assert layer_sets([2, 0], 2) == [(2,), (0,), (0, 2)]


def test_control_matches_the_edit_norm_with_a_random_direction() -> None:
    model = tiny_model("gpt2", seed=4)
    directions = random_directions(2, 64, seed=1)
    candidate = candidate_grid(
        model, directions, ("down_proj",), [1], 1, (16,), (6.0,), max_touched=10**6
    )[0]
    control = norm_matched_control(model, candidate, random_directions(2, 64, seed=99))
    assert control.layers == candidate.layers and control.k == candidate.k
    assert abs(edit_norm(model, control.requests) - edit_norm(model, candidate.requests)) < 1e-9
    cosine = torch.dot(control.requests[0].direction, candidate.requests[0].direction)
    assert abs(float(cosine)) < 0.5
