"""`loopfix serve`: an OpenAI-compatible proxy that watches every stream for loops, observes,
stops, rescues or think-escapes them, and exports Prometheus metrics (docs/serve.md).

`create_app` and `run` load the web stack (the `serve` extra) on first use, so the settings and
the watcher import without it.
"""

from typing import Any

from loopfix.serve.config import ACTIONS, Action, RequestOptions, ServeConfig, build_config
from loopfix.serve.watch import Detection, PartWatcher

__all__ = [
    "ACTIONS",
    "Action",
    "Detection",
    "PartWatcher",
    "RequestOptions",
    "ServeConfig",
    "build_config",
    "create_app",
    "run",
]


def __getattr__(name: str) -> Any:
    if name in ("create_app", "run"):
        from loopfix.serve import app

        return getattr(app, name)
    raise AttributeError(f"module 'loopfix.serve' has no attribute {name!r}")
