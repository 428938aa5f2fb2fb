"""The HTML reports of scans and guard comparisons, with inline SVG charts."""

from loopfix.report.html import render_report, write_report

__all__ = ["render_report", "write_report"]
