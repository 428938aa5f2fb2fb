import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from loopfix.lab.train import TrainConfig, train

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
