"""The HTML report in a real browser (headless Chromium): it renders, logs no page error, and a hostile
campaign name stays text."""

from __future__ import annotations

import html
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers import EVIL, FLAGS, chromium, make_campaign_db, run_cli

WIDTH, HEIGHT = 1200, 3000


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("browser")
    db = make_campaign_db(d / "r.db", name=EVIL, status="running")
    out = d / "report.html"
    proc = run_cli("report", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def run_browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def png_info(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, decompressed image data) from the PNG's own chunks."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_the_report_renders_to_a_non_trivial_screenshot_without_page_errors(report, tmp_path):
    shot = tmp_path / "report.png"
    proc = run_browser(
        tmp_path,
        f"--screenshot={shot}",
        f"--window-size={WIDTH},{HEIGHT}",
        "--enable-logging=stderr",
        "--v=0",
        report.as_uri(),
    )
    assert shot.is_file(), proc.stderr[-2000:]
    data = shot.read_bytes()
    width, height, pixels = png_info(data)
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(data) > 50_000  # a blank page compresses to a few kB
    assert (
        len(set(pixels[:: max(1, len(pixels) // 200_000)])) > 50
    )  # many distinct bytes: not one uniform color
    page_errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert page_errors == []


class ElementCounter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: dict[str, int] = {}
        self.h1 = ""
        self._in_h1 = False

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self._in_h1 = self._in_h1 or tag == "h1"

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data


def test_a_hostile_campaign_name_is_text_in_the_dom_not_a_script(report, tmp_path):
    proc = run_browser(tmp_path, "--dump-dom", report.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    parser = ElementCounter()
    parser.feed(dom)
    assert parser.tags.get("script", 0) == 0
    assert parser.h1 == f"boardlab report: {EVIL}"  # the browser shows the name as typed
    assert html.escape(EVIL, quote=False) in dom
    assert parser.tags.get("svg", 0) >= 6
