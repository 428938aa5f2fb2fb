import pytest

from loopfix.backends import HFBackend


@pytest.fixture(scope="session")
def testbed_backend() -> HFBackend:
    """The bundled testbed behind the hf backend, loaded once (batch 4: several batches per run)."""
    return HFBackend.load("loopfix:stargraph", device="cpu", batch_size=4)
