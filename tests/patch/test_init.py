import loopfix.patch


def test_exported_names_exist_and_are_sorted() -> None:
    names = loopfix.patch.__all__
    assert all(hasattr(loopfix.patch, name) for name in names)
    assert len(set(names)) == len(names)
