"""`loopfix serve`: an OpenAI-compatible proxy that watches every stream for loops, observes,
stops, rescues or think-escapes them, and exports Prometheus metrics (docs/serve.md)."""

from loopfix.serve.app import create_app, run
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
