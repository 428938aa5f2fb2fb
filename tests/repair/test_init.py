import loopfix.repair


def test_exported_names_exist_and_are_unique() -> None:
    names = loopfix.repair.__all__
    assert all(hasattr(loopfix.repair, name) for name in names)
    assert len(set(names)) == len(names)
