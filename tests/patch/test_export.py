from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import tiny_tokenizer
from loopfix.patch import build_patch, load_patch, patched, save_patch
from loopfix.patch.export import PATCH_COPY_DIR

from .helpers import fresh, requests_for

runner = CliRunner()


@pytest.fixture(params=["llama", "gpt2"])
def saved(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """A saved tiny model folder and a patch for it."""
    model = fresh(str(request.param))
    folder = tmp_path / "base"
    model.save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    patch = build_patch(model, requests_for(model), model_id=str(folder), metrics={"kl": 0.02})
    save_patch(patch, tmp_path / "patch")
    return folder, tmp_path / "patch"


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_cli_apply_then_revert_round_trips_bit_exact(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    base, patch_dir = saved
    out, back = tmp_path / "patched", tmp_path / "reverted"
    applied = runner.invoke(app, ["patch", "apply", str(base), str(patch_dir), "--out", str(out)])
    assert applied.exit_code == 0, applied.output
    patch = load_patch(patch_dir)
    # The exported folder loads with from_pretrained and equals the in-memory patched model.
    exported = AutoModelForCausalLM.from_pretrained(out)
    reference = AutoModelForCausalLM.from_pretrained(base)
    with patched(reference, patch):
        for name, tensor in reference.state_dict().items():
            assert torch.equal(exported.state_dict()[name], tensor), name
    card = (out / "README.md").read_text()
    assert '"kl": 0.02' in card and "loopfix patch revert" in card
    assert (out / PATCH_COPY_DIR / "patch.json").is_file()
    assert (out / "tokenizer.json").is_file()
    reverted = runner.invoke(app, ["patch", "revert", str(out), str(patch_dir), "--out", str(back)])
    assert reverted.exit_code == 0, reverted.output
    original, restored = _weights(base), _weights(back)
    assert original.keys() == restored.keys()
    assert all(torch.equal(original[name], restored[name]) for name in original)


def test_cli_refuses_the_wrong_model_and_inspect_shows_the_edits(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    base, patch_dir = saved
    inspected = runner.invoke(app, ["patch", "inspect", str(patch_dir / "patch.json")])
    assert inspected.exit_code == 0, inspected.output
    assert "alpha" in inspected.output and "layer" in inspected.output
    # Reverting an unpatched folder is refused: its tensors match "before", not "after".
    refused = runner.invoke(
        app, ["patch", "revert", str(base), str(patch_dir), "--out", str(tmp_path / "x")]
    )
    assert refused.exit_code == 2
    assert "already reverted" in refused.output
