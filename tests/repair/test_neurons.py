"""Neuron edits (issue 54): each MLP unit's separation from a real forward pass, the edit that
scales its down_proj column (the same as scaling the unit's activation), stored, applied and
reverted bit-exactly, its random-unit controls, and a whole repair that searches neurons."""

import json
from pathlib import Path

import pytest
import torch

from loopfix.models import load_model, tiny_model
from loopfix.patch import EditSite, build_patch, load_patch, patched, save_patch
from loopfix.patch.manifest import manifest_sha256
from loopfix.patch.sites import site_module
from loopfix.repair import RepairConfig, RepairResult, run_repair
from loopfix.repair.batches import make_batches
from loopfix.repair.neurons import (
    neuron_candidate,
    neuron_grid,
    neuron_separations,
    random_neuron_control,
)
from loopfix.repair.probe import class_means
from loopfix.repair.report import render_report
from tests.repair.small import SMALL_TESTBED_REPAIR


def _unit_inputs(model: torch.nn.Module, ids: torch.Tensor, site: EditSite) -> torch.Tensor:
    captured = []
    handle = site_module(model, site).register_forward_pre_hook(
        lambda module, inputs: captured.append(
            inputs[0][:, [2, 5]].reshape(-1, inputs[0].shape[-1])
        )
    )
    with torch.no_grad():
        model(input_ids=ids)
    handle.remove()
    return captured[0].double()


def test_separation_is_the_standardised_gap_of_each_units_activation() -> None:
    model = tiny_model("qwen2", seed=3)
    generator = torch.Generator().manual_seed(1)
    site = EditSite(1, "down_proj")
    classes = {}
    for which in ("repetitive", "productive"):
        ids = torch.randint(3, 40, (8, 9), generator=generator)
        batches = make_batches([(row.tolist(), [2, 5]) for row in ids], batch_size=4, pad_id=0)
        classes[which] = (class_means(model, batches, [site]), _unit_inputs(model, ids, site))
    (rep, rep_units), (prod, prod_units) = classes["repetitive"], classes["productive"]
    separations = neuron_separations(rep, prod)
    pooled = (0.5 * (rep_units.var(0, correction=0) + prod_units.var(0, correction=0))).sqrt()
    expected = (rep_units.mean(0) - prod_units.mean(0)) / pooled
    assert set(separations) == {1}
    torch.testing.assert_close(separations[1], expected, atol=1e-4, rtol=1e-3)


def test_a_neuron_edit_scales_the_units_output_as_scaling_its_activation_does(
    tmp_path: Path,
) -> None:
    model = tiny_model("llama", seed=2)
    ids = torch.tensor([[5, 9, 13, 4, 22, 7]])
    edit = neuron_candidate(1, [7, 3, 30], -1.0)
    module = site_module(model, EditSite(1, "down_proj"))

    def flip_units(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple:
        scaled = inputs[0].clone()
        scaled[..., [3, 7, 30]] *= -1.0
        return (scaled,)

    handle = module.register_forward_pre_hook(flip_units)
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    handle.remove()
    original = {k: v.clone() for k, v in model.state_dict().items()}
    patch = build_patch(model, edit.requests)
    (stored,) = patch.edits
    assert stored.operation == "scale" and stored.direction is None
    torch.testing.assert_close(stored.after, -stored.before)
    save_patch(patch, tmp_path)
    manifest = json.loads((tmp_path / "patch.json").read_text())
    assert manifest["edits"][0]["operation"] == "scale"
    assert "direction" not in manifest["edits"][0]["tensors"]
    loaded = load_patch(tmp_path)
    with torch.no_grad(), patched(model, loaded):
        torch.testing.assert_close(model(input_ids=ids).logits, expected, atol=1e-5, rtol=1e-5)
    assert all(torch.equal(original[k], v) for k, v in model.state_dict().items())


def test_a_scale_edit_that_claims_a_direction_is_refused(tmp_path: Path) -> None:
    model = tiny_model("llama", seed=2)
    save_patch(build_patch(model, neuron_candidate(0, [1], 0.0).requests), tmp_path)
    manifest = json.loads((tmp_path / "patch.json").read_text())
    manifest["edits"][0]["operation"] = "along"
    manifest["manifest_sha256"] = manifest_sha256(manifest)
    (tmp_path / "patch.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="stores a direction exactly when"):
        load_patch(tmp_path)


def test_the_grid_takes_the_strongest_units_of_the_most_separating_layers() -> None:
    separations = {
        0: torch.tensor([0.1, -0.2, 0.3, 0.0], dtype=torch.float64),
        1: torch.tensor([0.5, -3.0, 0.2, 1.0], dtype=torch.float64),
        2: torch.tensor([2.0, 0.1, -0.1, 0.0], dtype=torch.float64),
    }
    grid = neuron_grid(separations, search_layers=2, counts=(1, 2), scales=(-1.0, 0.0))
    assert [c.label() for c in grid] == [
        "down_proj L1 1 neurons x-1",
        "down_proj L1 1 neurons x0",
        "down_proj L1 2 neurons x-1",
        "down_proj L1 2 neurons x0",
        "down_proj L2 1 neurons x-1",
        "down_proj L2 1 neurons x0",
        "down_proj L2 2 neurons x-1",
        "down_proj L2 2 neurons x0",
    ]
    assert grid[2].requests[0].columns.tolist() == [1, 3]  # |-3.0| then |1.0|
    with pytest.raises(ValueError, match="down_proj"):
        neuron_grid({}, 2, (1,), (-1.0,))
    # More units asked for than a layer has: each edit once, not once per count.
    whole = neuron_grid(separations, search_layers=1, counts=(4, 8), scales=(0.0,))
    assert [c.label() for c in whole] == ["down_proj L1 4 neurons x0"]


def test_a_controls_units_are_random_units_of_the_same_layer_scaled_alike() -> None:
    edit = neuron_candidate(3, [10, 11, 12, 13], 0.0)
    controls = [random_neuron_control(edit, 1536, seed) for seed in (77, 78)]
    for control in controls:
        assert control.layers == (3,) and control.k == 4 and control.alpha == 0.0
        assert control.edit == "neurons"
        columns = control.requests[0].columns.tolist()
        assert len(set(columns)) == 4 and all(0 <= c < 1536 for c in columns)
    assert controls[0].requests[0].columns.tolist() != controls[1].requests[0].columns.tolist()
    again = random_neuron_control(edit, 1536, 77)
    assert torch.equal(again.requests[0].columns, controls[0].requests[0].columns)


def test_a_repair_searches_neurons_and_verifies_them_against_random_units(tmp_path: Path) -> None:
    config = SMALL_TESTBED_REPAIR.model_copy(
        update={"sites": ("down_proj",), "search": "neuron", "neuron_counts": (2,),
                "neuron_scales": (-1.0, 0.0), "verify_screened_out": True}
    )  # fmt: skip
    result = run_repair("loopfix:stargraph", tmp_path, config, report=lambda line: None)
    verify = json.loads((tmp_path / "verify.json").read_text())
    assert verify["search"]["method"] == "neuron" and verify["search"]["candidates"] == 2
    assert verify["candidate"]["edit"] == "neurons" and verify["candidate"]["k"] == 2
    assert verify["control"]["edit"] == "neurons"
    assert verify["causal"] is None
    assert RepairResult.from_verify(verify, tmp_path) == result
    assert render_report(result) == (tmp_path / "report.md").read_text()
    assert "random neurons of the same layer" in (tmp_path / "report.md").read_text()
    patch = load_patch(Path(verify["patch"]))
    assert [edit.operation for edit in patch.edits] == ["scale"]
    model, _ = load_model("loopfix:stargraph", device="cpu")
    original = {k: v.clone() for k, v in model.state_dict().items()}
    with patched(model, patch):
        pass
    assert all(torch.equal(original[k], v) for k, v in model.state_dict().items())


def test_a_neuron_search_needs_the_mlp_site() -> None:
    with pytest.raises(ValueError, match="sites must include down_proj"):
        RepairConfig(search="neuron", sites=("attn_out",))
