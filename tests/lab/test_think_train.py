"""The thinking model's training path on a tiny model (CI trains nothing bigger): LoRA starts
at the base model, a few steps write a delta that merges bit for bit, and a run interrupted
after a checkpoint and resumed writes the same delta as one run straight through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.lab.think_config import ThinkTrainConfig
from loopfix.lab.think_train import add_lora, render_example, train_think, training_problem
from loopfix.models.delta import (
    DELTA_FILE,
    DERIVED_MODELS,
    DerivedModel,
    delta_factors,
    derived_folder,
    merge_delta,
)
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import file_sha256
from loopfix.models.tiny import tiny_model, tiny_tokenizer

_TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant {% endif %}"
)


@pytest.fixture
def base_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = _TEMPLATE
    tiny_model("llama").save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _config(**update: object) -> ThinkTrainConfig:
    settings = {"steps": 4, "batch_size": 2, "first_layer": 1, "threads": 1}
    return ThinkTrainConfig.model_validate(settings | update)


def test_lora_starts_at_the_base_model() -> None:
    model = tiny_model("llama")
    ids = torch.tensor([[3, 4, 5, 6]])
    before = model(ids).logits
    wrapped = add_lora(model, _config(first_layer=0))
    assert len(wrapped) == 2 * 7  # two layers, seven projections each
    assert torch.equal(model(ids).logits, before)  # B starts at zero
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert len(trainable) == 2 * len(wrapped) and all(".lora_" in n for n in trainable)


def test_training_problems_never_come_from_the_held_out_seed() -> None:
    from loopfix.lab.think_teacher import make_problem

    held_out = {make_problem(100, index).question for index in range(200)}
    drawn = {training_problem(0, step, k).question for step in range(25) for k in range(8)}
    assert not drawn & held_out


def test_the_completion_is_what_the_loss_sees(base_folder: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_folder)
    ids, start = render_example(tokenizer, "a b", "c d")
    assert tokenizer.decode(ids[start:]) == "c d </s>"


def test_a_few_steps_write_a_delta_that_merges_bit_for_bit(
    base_folder: Path, tmp_path: Path
) -> None:
    out = tmp_path / "delta"
    provenance = train_think(_config(), base_folder, out)
    assert provenance["delta_sha256"] == file_sha256(out / DELTA_FILE)
    factors, scale = delta_factors(out / DELTA_FILE)
    assert scale == 2.0 and len(factors) == 7  # layer 1 only
    assert any(b.abs().sum() > 0 for _, b in factors.values())  # it trained

    model = tiny_model("llama")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    touched = merge_delta(model, out / DELTA_FILE)
    for name, parameter in model.named_parameters():
        if name not in touched:
            assert torch.equal(parameter, before[name])
            continue
        a, b = factors[name]
        expected = (before[name].double() + scale * (b.double() @ a.double())).float()
        assert torch.equal(parameter, expected)


def test_a_resumed_run_writes_the_same_delta(base_folder: Path, tmp_path: Path) -> None:
    config = _config(checkpoint_every=2)
    straight = train_think(config, base_folder, tmp_path / "straight")

    class Interrupted(Exception):
        pass

    def stop_after_checkpoint(step: int, loss: float) -> None:
        if step == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        train_think(config, base_folder, tmp_path / "resumed", stop_after_checkpoint)
    assert (tmp_path / "resumed" / "resume.pt").is_file()
    resumed = train_think(config, base_folder, tmp_path / "resumed")
    assert resumed["delta_sha256"] == straight["delta_sha256"]
    assert not (tmp_path / "resumed" / "resume.pt").exists()
    with pytest.raises(ValueError, match="another config"):
        with pytest.raises(Interrupted):
            train_think(config, base_folder, tmp_path / "other", stop_after_checkpoint)
        train_think(_config(checkpoint_every=2, seed=1), base_folder, tmp_path / "other")


def test_a_derived_model_is_its_base_plus_the_pinned_delta(
    base_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopfix.models import CACHE_DIR_VARIABLE, load_model

    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    out = tmp_path / "delta"
    provenance = train_think(_config(steps=2), base_folder, out)
    monkeypatch.setitem(
        DERIVED_MODELS,
        "tiny-think",
        DerivedModel("unused", "tiny-think", provenance["delta_sha256"]),
    )
    folder = derived_folder("tiny-think", base_folder, out)
    assert derived_folder("tiny-think", base_folder, out) == folder  # built once
    merged, _ = load_model(folder, device="cpu")
    model = tiny_model("llama")
    merge_delta(model, out / DELTA_FILE)
    for (name, expected), (_, got) in zip(
        model.state_dict().items(), merged.state_dict().items(), strict=True
    ):
        assert torch.equal(expected, got), name

    monkeypatch.setitem(
        DERIVED_MODELS, "tiny-think", DerivedModel("unused", "tiny-think", "0" * 64)
    )
    with pytest.raises(ModelLoadError, match="not the pinned"):
        derived_folder("tiny-think", base_folder, out)


def test_the_shipped_delta_is_the_pinned_one_with_its_provenance() -> None:
    import json

    from loopfix.models.loading import bundled_checkpoints

    entry = DERIVED_MODELS["smollm2-think"]
    folder = bundled_checkpoints() / entry.folder
    provenance = json.loads((folder / "provenance.json").read_text())
    assert file_sha256(folder / DELTA_FILE) == entry.sha256 == provenance["delta_sha256"]
    # What `loopfix lab train --variant smollm2-think` writes with its defaults.
    assert provenance["config"] == ThinkTrainConfig().model_dump(mode="json")
    factors, scale = delta_factors(folder / DELTA_FILE)
    assert len(factors) == 18 * 7 and scale == 2.0  # layers 12-29, seven projections
    assert (folder / DELTA_FILE).stat().st_size <= 10 * 2**20


def test_the_cli_trains_a_step_of_the_thinker_and_refuses_a_bad_share(tmp_path: Path) -> None:
    """`loopfix lab train --variant smollm2-think` on the real base: one step writes a delta
    with its provenance; a circling share outside [0, 1] is one line, nothing written."""
    runner = CliRunner()
    bad = runner.invoke(
        app,
        [
            "lab",
            "train",
            "--variant",
            "smollm2-think",
            "--circle-share",
            "2",
            "--out",
            str(tmp_path / "bad"),
        ],
    )
    assert bad.exit_code == 2 and "--circle-share" in " ".join(bad.output.split())
    assert not (tmp_path / "bad").exists()
    out = tmp_path / "one"
    arguments = ["lab", "train", "--variant", "smollm2-think", "--steps", "1", "--out", str(out)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["delta_sha256"] == file_sha256(out / DELTA_FILE)
