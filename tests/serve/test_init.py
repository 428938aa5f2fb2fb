"""The public surface of loopfix.serve: `__all__` names what it exports, and the settings and
the watcher import without the web stack (the CLI's help needs them, not FastAPI)."""

import subprocess
import sys

import loopfix.serve as serve


def test_all_lists_the_public_names_and_each_resolves() -> None:
    assert len(serve.__all__) == len(set(serve.__all__))
    for name in serve.__all__:
        assert getattr(serve, name) is not None
    assert callable(serve.create_app) and callable(serve.run)


def test_settings_and_watcher_import_without_fastapi_or_torch() -> None:
    code = (
        "import sys, loopfix.serve, loopfix.cli.serve\n"
        "loopfix.serve.PartWatcher, loopfix.serve.ServeConfig\n"
        "loaded = [m for m in ('fastapi', 'uvicorn', 'httpx', 'torch') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
