import json
import math
import random
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from loopfix.lab.stargraph import PAD_ID
from loopfix.lab.train import (
    TrainConfig,
    build_model,
    by_length,
    learning_rate,
    make_batch,
    next_token_loss,
    train,
    visited_mass,
)

TINY = TrainConfig(
    steps=25, batch_size=16, warmup_steps=4, threads=1, loop_fraction=0.25, loop_batch_fraction=1.0
)


def test_training_learns_saves_a_loadable_hf_folder_and_is_deterministic(tmp_path: Path) -> None:
    first = train(TINY, tmp_path / "a")
    train(TINY, tmp_path / "b")
    loaded = {name: AutoModelForCausalLM.from_pretrained(tmp_path / name) for name in "ab"}
    for (name, p), (_, q) in zip(
        loaded["a"].named_parameters(), loaded["b"].named_parameters(), strict=True
    ):
        assert torch.equal(p, q), name
    model = loaded["a"]
    assert model.model.layers[0].mlp.down_proj.weight.shape == (64, 256)
    assert model.config.head_dim == 32
    metadata = json.loads((tmp_path / "a" / "training.json").read_text())
    assert metadata["config"]["steps"] == 25 and metadata["parameters"] == first["parameters"]
    assert 0 < metadata["looping_walk_share"] < 1
    assert metadata["final_loss"] < metadata["first_loss"] - 0.25  # it learns


def test_the_rate_holds_at_its_peak_until_the_decay_share_then_falls_to_a_tenth() -> None:
    whole = TrainConfig(steps=100, warmup_steps=10, learning_rate=1.0)
    late = whole.model_copy(update={"decay_share": 0.5})
    assert learning_rate(late, 4) == 0.5 and learning_rate(whole, 4) < 0.5  # warm-up
    assert math.isclose(learning_rate(whole, 50), 0.55)  # cosine over the run: half way
    assert [learning_rate(late, s) for s in (10, 30, 50)] == [1.0, 1.0, 1.0]
    assert math.isclose(learning_rate(late, 75), 0.55)  # half way through its decay
    assert learning_rate(late, 99) < 0.11 and learning_rate(whole, 99) < 0.11
    assert learning_rate(whole.model_copy(update={"warmup_steps": 0}), 0) == 1.0


def test_the_initialisation_width_is_the_configured_one() -> None:
    for std in (0.02, 0.08):
        model = build_model(TrainConfig(init_std=std, seed=0))
        weights = torch.cat([p.detach().flatten() for p in model.parameters() if p.dim() == 2])
        assert abs(float(weights.std()) - std) < 0.1 * std


def test_a_batch_in_length_groups_gives_the_whole_batchs_loss() -> None:
    config = TINY.model_copy(update={"batch_size": 12})
    batch = make_batch(random.Random(0), config, looping=3)
    model = build_model(config)
    torch.manual_seed(0)

    def loss(parts: int) -> tuple[float, int]:
        total, width = torch.zeros(()), 0
        for ids, labels in by_length(batch.ids, batch.labels, parts):
            logits = model(input_ids=ids).logits
            total = total + next_token_loss(logits, labels) + visited_mass(logits, ids, labels)
            width = max(width, ids.shape[1])
            assert ids.shape[0] in (6, 12) and (ids != PAD_ID).sum(1).max() == ids.shape[1]
        return float(total.detach()), width

    (whole, width), (grouped, _) = loss(1), loss(2)
    assert width == batch.ids.shape[1] and math.isclose(grouped, whole, rel_tol=1e-5)

    def rows(ids: torch.Tensor) -> list[list[int]]:
        return [row[row != PAD_ID].tolist() for row in ids]

    grouped_rows = [row for ids, _ in by_length(batch.ids, batch.labels, 2) for row in rows(ids)]
    assert sorted(grouped_rows) == sorted(rows(batch.ids))  # every walk once, none cut
