"""--ray-address local: a scan fanned out over a local Ray cluster equals the same scan run in
one process, record for record."""

import json
from pathlib import Path

import pytest

from loopfix.scan import ScanConfig, run_scan

pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'loopfix[ray]'")


def tokens(out: Path) -> dict[tuple, list[int]]:
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return {
        (r["prompt_id"], r["sample_index"], r["settings"]["temperature"]): r["tokens"] for r in rows
    }


def test_ray_local_cluster_merges_shards_into_one_store(tmp_path: Path) -> None:
    options = {
        "model": "loopfix:stargraph",
        "n": 8,
        "temperatures": [0.0, 1.0],
        "max_new_tokens": 24,
        "batch_size": 4,
    }
    fanned = run_scan(ScanConfig(**options, ray_address="local", out=tmp_path / "ray"))
    run_scan(ScanConfig(**options, out=tmp_path / "local"))
    assert fanned.generated == 16
    assert tokens(tmp_path / "ray") == tokens(tmp_path / "local")
