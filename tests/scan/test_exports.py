import importlib

import pytest


@pytest.mark.parametrize(
    "package", ["loopfix.scan", "loopfix.suites", "loopfix.report", "loopfix.backends"]
)
def test_all_names_are_exported_and_sorted(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)
