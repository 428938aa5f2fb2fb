"""The report is rendered by a real headless Chromium: the screenshot is not blank and the
numbers of the summary are in the DOM."""

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from loopfix.detect import LoopVerdict
from loopfix.records import Sample
from loopfix.report import render_report
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.summary import is_loop
from loopfix.summaries import ScanSummary

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium(tmp_path: Path, *args: str) -> str:
    assert CHROMIUM is not None
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def png_pixels(path: Path) -> bytes:
    """Raw scanlines of an 8-bit PNG (filter bytes included): enough to tell blank from drawn."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, []
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        if kind == b"IDAT":
            chunks.append(data[position + 8 : position + 8 + length])
        position += 12 + length
    return zlib.decompress(b"".join(chunks))


@pytest.fixture(scope="module")
def scan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scan")
    run_scan(
        ScanConfig(
            model="loopfix:stargraph",
            n=6,
            temperatures=[0.0, 1.0],
            samples=2,
            max_new_tokens=32,
            batch_size=6,
            out=out,
        )
    )
    return out


def test_report_is_self_contained_and_highlights_loops(scan_dir: Path) -> None:
    html = (scan_dir / "report.html").read_text()
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "<script" not in html
    assert html.count("<svg") == 4
    sample = Sample(
        "p",
        0,
        {"temperature": 0.0},
        [1] * 6,
        "intro la la la la",
        "length",
        LoopVerdict(looping=True, onset=2),
        False,
        {"loop_chars": [6, 17]},
    )
    summary = ScanSummary(settings=(), records=1, loops=1, detector_looping=1, overlong_prompts=())
    assert "intro <mark>la la la la</mark>" in render_report(summary, [sample], is_loop)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(scan_dir: Path, tmp_path: Path) -> None:
    import json

    report = scan_dir / "report.html"
    screenshot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={screenshot}", "--window-size=1200,1400", report.as_uri())
    pixels = png_pixels(screenshot)
    ink = sum(1 for byte in pixels if byte not in (0, 255))
    assert ink > len(pixels) // 100, "the screenshot is blank"
    dom = chromium(tmp_path, "--dump-dom", report.as_uri())
    summary = json.loads((scan_dir / "summary.json").read_text())
    assert 'id="settings"' in dom and 'id="prompts"' in dom
    for row in summary["settings"]:
        for rate in ("loop_rate", "cut_rate", "accuracy"):
            assert f"{row[rate]:.1%}" in dom
        assert f"{row['mean_length']:.1f}" in dom


def test_chart_series_differ_in_colour_and_marker_and_equal_points_stay_visible() -> None:
    import re

    from loopfix.report.svg import Series, rate_chart, series_style

    styles = [series_style(i) for i in range(8)]
    assert len({colour for colour, _ in styles}) == len({shape for _, shape in styles}) == 8
    # Eight guards with the same loop rate at T=0: eight markers at eight different places.
    svg = rate_chart("loop rate", [0.0], [Series(f"g{i}", [0.25], [None]) for i in range(8)])
    places = set()
    for i, (colour, _) in enumerate(styles):
        point = re.search(rf'<(\w+) ([^>]*)(?:fill|stroke)="{colour}"[^>]*><title>g{i} at 0:', svg)
        assert point is not None, i
        places.add(point.group(2))
    assert len(places) == 8
