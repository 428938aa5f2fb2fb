"""Scans: sweep decode settings over a suite, store every sample, summarize, compare runs."""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

__all__ = ["ConfigMismatchError", "ScanConfig", "ScanResult", "compare_runs", "run_scan"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ConfigMismatchError": "loopfix.scan.config",
        "ScanConfig": "loopfix.scan.config",
        "ScanResult": "loopfix.scan.run",
        "compare_runs": "loopfix.scan.compare",
        "run_scan": "loopfix.scan.run",
    },
)

if TYPE_CHECKING:
    from loopfix.scan.compare import compare_runs
    from loopfix.scan.config import ConfigMismatchError, ScanConfig
    from loopfix.scan.run import ScanResult, run_scan
