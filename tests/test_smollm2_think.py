"""The thinking model, end to end (`loopfix:smollm2-think`, docs/thinking.md): it loads as
SmolLM2 with the shipped delta merged bit for bit, and on held-out `think` prompts at greedy it
closes its thinking and answers (docs: 52 of 60), mostly right (48), and loops inside its
thinking where it fails to close (8), never after it (0). The first 30 of those prompts (the
docs run's first batch) measured 28 closed, 26 right, 2 loops in the thinking, 0 after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from loopfix.backends.hf import HFBackend
from loopfix.models import load_model, resolve_model_path
from loopfix.models.delta import DELTA_FILE, DERIVED_MODELS, delta_factors
from loopfix.models.loading import bundled_checkpoints
from loopfix.records import read_samples
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.think_families import family_rows

pytestmark = pytest.mark.slow


def test_the_thinker_is_smollm2_plus_the_shipped_delta(smollm2_folder: Path) -> None:
    folder = Path(resolve_model_path("loopfix:smollm2-think"))
    assert json.loads((folder / "provenance.json").read_text())["config"]["rank"] == 8
    delta = bundled_checkpoints() / DERIVED_MODELS["smollm2-think"].folder / DELTA_FILE
    factors, scale = delta_factors(delta)
    name = "model.layers.29.mlp.down_proj.weight"
    a, b = factors[name]
    base = load_file(str(smollm2_folder / "model.safetensors"))[name]
    merged = load_file(str(folder / "model.safetensors"))[name]
    assert torch.equal(merged, (base.double() + scale * (b.double() @ a.double())).float())
    untouched = "model.layers.0.mlp.down_proj.weight"
    assert torch.equal(
        load_file(str(folder / "model.safetensors"))[untouched],
        load_file(str(smollm2_folder / "model.safetensors"))[untouched],
    )


def test_held_out_greedy_thinking_answers_and_loops_inside_the_thinking(tmp_path: Path) -> None:
    model, tokenizer = load_model("loopfix:smollm2-think", device="cpu")
    config = ScanConfig(
        model="loopfix:smollm2-think",
        suite="think",
        n=30,
        seed=100,
        temperatures=[0.0],
        max_new_tokens=384,
        out=tmp_path / "scan",
    )
    run_scan(config, backend=HFBackend(model, tokenizer, batch_size=30))
    samples = list(read_samples(tmp_path / "scan" / "records.jsonl"))
    row = next(r for r in family_rows(samples) if r.family == "all")
    assert row.n == 30
    assert row.closed >= 24  # measured 28
    assert row.correct >= 20  # measured 26
    assert 1 <= row.loop_in_thinking <= 6  # measured 2: every output that did not close
    assert row.closed + row.loop_in_thinking >= 29  # measured 30
    assert row.loop_after <= 1  # measured 0
