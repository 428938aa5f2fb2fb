"""scan.json records the weights the backend ran: the model's files, and the id of a patch
applied in memory (only where there is one), so a run on patched weights is never resumed as
the base model's, and an unpatched scan.json keeps the shape older runs wrote."""

import json
from pathlib import Path

import pytest

from loopfix.backends import HFBackend
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.config import ConfigMismatchError

OPTIONS = {
    "model": "loopfix:stargraph",
    "suite": "stargraph",
    "n": 4,
    "temperatures": [0.0],
    "max_new_tokens": 16,
    "batch_size": 4,
}


def patched(backend: HFBackend, patch: str) -> HFBackend:
    """The same weights, as a backend running them under the patch `patch` would report."""
    return HFBackend(backend.model, backend.tokenizer, 4, source=backend.source, patch=patch)


def test_an_unpatched_run_keeps_scan_json_shape_and_resumes(
    tmp_path: Path, testbed_backend: HFBackend
) -> None:
    config = ScanConfig(**OPTIONS, out=tmp_path / "base")
    assert run_scan(config, testbed_backend).generated == 4
    stored = json.loads((tmp_path / "base" / "scan.json").read_text())
    assert stored.keys() == {"config", "suite_sha256", "model_files"}
    assert "model.safetensors" in stored["model_files"]
    assert all(
        entry.keys() == {"size", "mtime_ns", "sha256"} for entry in stored["model_files"].values()
    )
    # What an older run wrote is what this one writes: adopted, nothing generated again.
    assert run_scan(config, testbed_backend).generated == 0
    assert json.loads((tmp_path / "base" / "scan.json").read_text()) == stored


def test_a_patched_run_names_its_patch_and_is_not_the_base(
    tmp_path: Path, testbed_backend: HFBackend
) -> None:
    base = ScanConfig(**OPTIONS, out=tmp_path / "base")
    run_scan(base, testbed_backend)
    arm = ScanConfig(**OPTIONS, out=tmp_path / "arm")
    run_scan(arm, patched(testbed_backend, "ab" * 32))
    base_identity = json.loads((tmp_path / "base" / "scan.json").read_text())
    arm_identity = json.loads((tmp_path / "arm" / "scan.json").read_text())
    assert arm_identity == {**base_identity, "patch": "ab" * 32}

    with pytest.raises(ConfigMismatchError, match="the patch differs"):
        run_scan(base, patched(testbed_backend, "cd" * 32))
    with pytest.raises(ConfigMismatchError, match="the patch differs"):
        run_scan(arm, testbed_backend)
    assert json.loads((tmp_path / "arm" / "scan.json").read_text()) == arm_identity
    assert run_scan(arm, patched(testbed_backend, "ab" * 32)).generated == 0


def test_a_backend_is_a_context_manager_with_a_typed_generation_cap(
    testbed_backend: HFBackend,
) -> None:
    with patched(testbed_backend, "ab" * 32) as backend:
        assert backend.identity().patch == "ab" * 32
        assert backend.generation_cap == testbed_backend.model.generation_config.max_new_tokens
