import pytest

from loopfix.models import supported_families


@pytest.fixture(params=supported_families())
def family(request: pytest.FixtureRequest) -> str:
    return request.param
