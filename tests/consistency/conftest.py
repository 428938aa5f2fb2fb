"""One consistency session on the bundled testbed, shared by the tests of this folder (the
checks reuse each other's runs there too, so sharing it is what the library does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopfix.consistency import ConsistencyConfig, ConsistencyResult, run_consistency

SMALL = {
    "model": "loopfix:stargraph",
    "n": 6,
    "batch_sizes": [3, 6],
    "max_new_tokens": 24,
    "seeds": 2,
    "temperatures": [0.0, 1.0],
    "top_k": [0, 1],
    "top_p": [1.0],
    "min_p": [0.0],
    "vllm_python": Path("/nonexistent/python"),
}


@pytest.fixture(scope="session")
def testbed_result() -> ConsistencyResult:
    return run_consistency(ConsistencyConfig.model_validate(SMALL))
