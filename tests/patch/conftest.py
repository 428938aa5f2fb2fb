import pytest

from loopfix.models import supported_families


@pytest.fixture(params=supported_families())
def family(request: pytest.FixtureRequest) -> str:
    """Every family in the architecture table (each has a tiny config)."""
    return str(request.param)
