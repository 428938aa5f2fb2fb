"""loopfix: measure, explain and fix generation loops in language models.

The public API, each in five lines in docs/api.md: detection (`detect_text`, `detect_tokens`,
`LoopMonitor`), guards for a user's own `model.generate` (`guard_processor`), the verbs
(`run_scan`, `run_compare`, `run_repair`, `run_doctor`, with their settings `ScanConfig`,
`CompareConfig`, `RepairConfig`), models (`load_model`) and patches (`load_patch`,
`apply_patch`, `patched`). Names are imported on first use, so `import loopfix` stays fast and
pulls in neither torch nor transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopfix._version import __version__
from loopfix.lazy import lazy_exports

# name -> module that defines it
_API = {
    "CompareConfig": "loopfix.scan.guard_config",
    "LoopMonitor": "loopfix.detect",
    "RepairConfig": "loopfix.repair",
    "ScanConfig": "loopfix.scan",
    "apply_patch": "loopfix.patch",
    "detect_text": "loopfix.detect",
    "detect_tokens": "loopfix.detect",
    "guard_processor": "loopfix.guards",
    "load_model": "loopfix.models",
    "load_patch": "loopfix.patch",
    "patched": "loopfix.patch",
    "run_compare": "loopfix.scan.guard_comparison",
    "run_doctor": "loopfix.doctor",
    "run_repair": "loopfix.repair",
    "run_scan": "loopfix.scan",
}

__all__ = [
    "CompareConfig",
    "LoopMonitor",
    "RepairConfig",
    "ScanConfig",
    "__version__",
    "apply_patch",
    "detect_text",
    "detect_tokens",
    "guard_processor",
    "load_model",
    "load_patch",
    "patched",
    "run_compare",
    "run_doctor",
    "run_repair",
    "run_scan",
]

if TYPE_CHECKING:
    from loopfix.detect import LoopMonitor, detect_text, detect_tokens
    from loopfix.doctor import run_doctor
    from loopfix.guards import guard_processor
    from loopfix.models import load_model
    from loopfix.patch import apply_patch, load_patch, patched
    from loopfix.repair import RepairConfig, run_repair
    from loopfix.scan import ScanConfig, run_scan
    from loopfix.scan.guard_comparison import run_compare
    from loopfix.scan.guard_config import CompareConfig


__getattr__, __dir__ = lazy_exports(__name__, _API)
