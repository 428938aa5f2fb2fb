import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too, so `--strict-markers` accepts it whatever pyproject lists.
    config.addinivalue_line("markers", "vllm: needs .venv-vllm (bash scripts/setup-vllm.sh)")
