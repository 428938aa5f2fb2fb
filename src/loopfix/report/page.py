"""The one page style of every loopfix report (scan, compare): inline CSS, no scripts, no
network, so a report is a single file that opens anywhere."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from loopfix._version import __version__

__all__ = ["page"]

STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4}
td.text{text-align:left;font-family:monospace;white-space:pre-wrap;max-width:760px}
mark{background:#ffb3b3}
.charts{display:flex;flex-wrap:wrap;gap:16px}
.small{color:#666;font-size:12px}
"""


def page(title: str, about: str, sections: Iterable[str]) -> str:
    """A whole report: `title` as heading, a small line `about` it (loopfix's version added),
    then the sections' HTML in order."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html lang=en><head><meta charset=utf-8>",
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            f"<p class=small>{escape(about)} · loopfix {__version__}</p>",
            *sections,
            "</body></html>",
        ]
    )
