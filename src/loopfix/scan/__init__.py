"""Scans: sweep decode settings over a suite, store every sample, summarize, compare runs."""

from loopfix.scan.compare import compare_runs
from loopfix.scan.config import ConfigMismatchError, ScanConfig
from loopfix.scan.run import ScanResult, run_scan

__all__ = ["ConfigMismatchError", "ScanConfig", "ScanResult", "compare_runs", "run_scan"]
