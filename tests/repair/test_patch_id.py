"""A patched arm's scan.json names the weights that ran: its patch id is read from the touched
tensors while the patch is applied, not passed beside the patch."""

import hashlib
import json
from pathlib import Path

import pytest

from loopfix.backends.hf import HFBackend
from loopfix.backends.open import open_backend
from loopfix.backends.spec import BackendSpec
from loopfix.models import load_model
from loopfix.models.modules import num_layers, residual_width
from loopfix.patch import apply_patch, build_patch
from loopfix.patch.hashing import tensor_sha256
from loopfix.repair import RepairConfig
from loopfix.repair.candidates import candidate
from loopfix.repair.directions import random_directions
from loopfix.repair.scan_verify import ScanPrompts
from loopfix.repair.verification import Verifier
from loopfix.scan import ScanConfig
from loopfix.suites import load_suite


def test_a_patched_arm_records_the_id_of_the_weights_it_ran(
    tiny_folder: Path, tmp_path: Path
) -> None:
    generator = open_backend(BackendSpec("hf", str(tiny_folder), 4, device="cpu"))
    assert isinstance(generator, HFBackend)
    model = generator.model
    config = RepairConfig(temperature=0.0, temperatures=(0.0,), gen_batch_size=4)
    scan = ScanConfig(model=str(tiny_folder), suite="arith", max_new_tokens=8)
    prompts = ScanPrompts(
        generator, scan, {"verify": load_suite("arith", 4, 7)}, config, tmp_path / "arms"
    )
    verifier = Verifier(prompts, config)
    directions = random_directions(num_layers(model), residual_width(model), 0)
    edit = candidate(model, directions, "down_proj", (0,), 4, 2.0)
    base = verifier.base("verify", 0.0)
    arm = verifier.edited(edit, 0.0)

    def recorded(outcomes_folder: Path) -> str | None:
        return json.loads((outcomes_folder / "scan.json").read_text()).get("patch")

    # Derived independently: the same edit on a fresh copy of the weights, its touched tensors
    # hashed before and after applying it.
    fresh, _ = load_model(tiny_folder, device="cpu")
    patch = build_patch(fresh, edit.requests)
    before = {e.name: tensor_sha256(fresh.get_parameter(e.name)) for e in patch.edits}
    with apply_patch(fresh, patch) as elsewhere:
        edits = [
            [name, digest, tensor_sha256(fresh.get_parameter(name))]
            for name, digest in before.items()
        ]
        # A patch applied to other weights than the ones the arm runs is refused.
        with pytest.raises(ValueError, match="another model"):
            prompts.generate("verify", 0.0, "elsewhere", elsewhere)
    assert recorded(arm.folder) == hashlib.sha256(json.dumps(edits).encode()).hexdigest()
    assert recorded(base.folder) is None and generator.patch is None  # only while applied
    # The arm ran the patched weights, which are reverted after it.
    assert all(tensor_sha256(model.get_parameter(name)) == b for name, b in before.items())
