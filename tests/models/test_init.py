import types

import loopfix.models


def test_exports_match_public_names():
    public = {
        name
        for name, value in vars(loopfix.models).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert sorted(loopfix.models.__all__) == sorted(public)
