"""Scans: sweep decode settings over a suite, store every sample, summarize, compare runs."""

from loopfix.scan.compare import compare_runs, compare_samples
from loopfix.scan.config import ConfigMismatchError, ScanConfig
from loopfix.scan.detection import paper_loop, paper_ngram, scan_detect_config
from loopfix.scan.identity import check_run_identity
from loopfix.scan.run import ScanResult, run_scan, write_outputs
from loopfix.scan.stats import mcnemar_exact, wilson_interval
from loopfix.scan.summary import is_loop, summarize

__all__ = [
    "ConfigMismatchError",
    "ScanConfig",
    "ScanResult",
    "check_run_identity",
    "compare_runs",
    "compare_samples",
    "is_loop",
    "mcnemar_exact",
    "paper_loop",
    "paper_ngram",
    "run_scan",
    "scan_detect_config",
    "summarize",
    "wilson_interval",
    "write_outputs",
]
