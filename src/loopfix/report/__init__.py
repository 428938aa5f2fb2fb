"""The HTML report of a scan, with inline SVG charts."""

from loopfix.report.html import render_report, write_report
from loopfix.report.page import STYLE
from loopfix.report.svg import Series, histogram_chart, rate_chart

__all__ = ["STYLE", "Series", "histogram_chart", "rate_chart", "render_report", "write_report"]
