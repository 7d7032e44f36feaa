"""What a reader sees in the HTML reports of the three studies, in a real browser (headless Chromium driven
through the DevTools protocol on a pipe): the page loads without page errors, the verdict table and each
study's section are there, each section's figures are drawn (pixels that are not background inside the
figure's box on the screenshot), and the screenshot is written to the test's directory for a human to see.

The campaigns go through the real store (tests/helpers.py). The assertions name what a user reads
(headings, verdict words, figures), not the report's internal markup, so they hold when the report is
rebuilt.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import subprocess
import time
import zlib
from pathlib import Path

import pytest

from helpers import (
    FLAGS,
    MIBENCH,
    SERVICES,
    chromium,
    make_ai_db,
    make_campaign_db,
    make_rt_db,
    make_satellite_db,
    make_services_db,
    make_stream_db,
    run_cli,
)

WIDTH = 1280
VERDICT_WORDS = ("slowdown", "speedup", "no change", "inconclusive", "insufficient")


class Browser:
    """Headless Chromium with the DevTools protocol on fds 3 (its input) and 4 (its output): NUL-terminated
    JSON messages, stdlib only."""

    def __init__(self, profile: Path):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        fds = {3: to_chrome_r, 4: from_chrome_w}

        def wire():  # in the child: put the two pipe ends at fds 3 and 4, where Chromium looks for them
            high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for target, fd in fds.items()}  # no clash
            for target, fd in high.items():
                os.dup2(fd, target)  # inheritable; kept because 3 and 4 are in pass_fds

        self.proc = subprocess.Popen(
            [chromium(), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            pass_fds=(3, 4),
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout_s=10)
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError(f"the browser exited ({self.proc.poll()})")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, *, session: bool = False, timeout_s=60) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout_s: float = 60) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            for e in self.events:
                if e.get("method") == method:
                    self.events.remove(e)
                    return e
            self.events.append(self._read(deadline))

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                  session=True)  # fmt: skip
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"]["value"]

    def screenshot(self, clip: dict) -> bytes:
        shot = self.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
            session=True,
        )
        return base64.b64decode(shot["data"])

    def page_errors(self) -> list[str]:
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"{p['entry'].get('source')}: {p['entry'].get('text')}")
        return out


# Every heading, and every top-level figure (svg or img) and table with the heading it sits under.
LAYOUT_JS = r"""
(() => {
  const out = {headings: [], figures: [], tables: [], height: document.documentElement.scrollHeight};
  let section = "";
  for (const el of document.querySelectorAll("h1, h2, h3, svg, img, table")) {
    const tag = el.tagName.toLowerCase();
    const box = el.getBoundingClientRect();
    const rect = {x: box.left + scrollX, y: box.top + scrollY, width: box.width, height: box.height};
    if (tag === "h1" || tag === "h2" || tag === "h3") {
      out.headings.push({level: tag, text: el.innerText.trim()});
      if (tag !== "h3") section = el.innerText.trim();
    } else if (tag === "table") {
      out.tables.push({section, text: el.innerText, rect});
    } else if (!el.parentElement.closest("svg")) {
      out.figures.push({section, kind: tag, label: el.getAttribute("aria-label") || "", rect});
    }
  }
  return out;
})()
"""


def _unfilter(width: int, height: int, raw: bytes, bpp: int) -> list[bytearray]:
    """PNG scanlines with their filters undone (PNG spec 9.2: None, Sub, Up, Average, Paeth)."""
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        prev = line
    return rows


def pixel_counts(png: bytes) -> dict[bytes, int]:
    """How many pixels of each RGB colour a PNG has."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height, depth, color = png[16:20], png[20:24], png[24], png[25]
    width, height = int.from_bytes(width, "big"), int.from_bytes(height, "big")
    assert depth == 8 and color in (2, 6), (depth, color)  # 8-bit RGB or RGBA, as Chromium writes
    bpp = 3 if color == 2 else 4
    pos, idat = 8, b""
    while pos < len(png):
        length, kind = int.from_bytes(png[pos : pos + 4], "big"), png[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    counts: dict[bytes, int] = {}
    for line in _unfilter(width, height, zlib.decompress(idat), bpp):
        for i in range(0, len(line), bpp):
            px = bytes(line[i : i + 3])
            counts[px] = counts.get(px, 0) + 1
    return counts


def drawn_fraction(png: bytes) -> float:
    """The share of pixels of a PNG that differ from its most common colour (the background)."""
    counts = pixel_counts(png)
    total = sum(counts.values())
    return 1 - max(counts.values()) / total if total else 0.0


def near(counts: dict[bytes, int], rgb: str, tolerance: int = 40) -> int:
    """Pixels within `tolerance` of the colour #RRGGBB on every channel (anti-aliased edges included)."""
    want = bytes.fromhex(rgb.lstrip("#"))
    return sum(
        n for px, n in counts.items() if all(abs(a - b) <= tolerance for a, b in zip(px, want, strict=True))
    )


def look_at(report: Path, tmp_path: Path, name: str) -> tuple[dict, Browser]:
    """Opens the report, writes the whole page's screenshot to tmp_path/NAME.png, returns its layout."""
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(report.as_uri())
        layout = browser.evaluate(LAYOUT_JS)
        page = browser.screenshot({"x": 0, "y": 0, "width": WIDTH, "height": min(layout["height"], 16000)})
        (tmp_path / f"{name}.png").write_bytes(page)
        layout["page_png"] = tmp_path / f"{name}.png"
    except BaseException:
        browser.close()
        raise
    return layout, browser


def section_figures(layout: dict, heading: str) -> list[dict]:
    return [f for f in layout["figures"] if re.search(heading, f["section"], re.I)]


def assert_drawn(browser: Browser, figures: list[dict], what: str) -> None:
    """Each figure has a box on the page and something drawn in it (not one background colour)."""
    assert figures, f"no figure under {what}"
    for fig in figures:
        r = fig["rect"]
        assert r["width"] >= 40 and r["height"] >= 40, (what, fig)
        clip = {k: max(0, int(v)) for k, v in r.items()}
        assert drawn_fraction(browser.screenshot(clip)) > 0.01, f"{what}: figure {fig['label']!r} is blank"


def verdict_table(layout: dict) -> str:
    tables = [t["text"] for t in layout["tables"] if re.search(r"verdict", t["section"], re.I)]
    assert tables, f"no verdict table; sections: {[h['text'] for h in layout['headings']]}"
    return "\n".join(tables).lower()


def html_report(db: Path, out: Path) -> Path:
    proc = run_cli("report", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def look(tmp_path):
    browsers = []

    def _look(db: Path, name: str) -> tuple[dict, Browser]:
        layout, browser = look_at(html_report(db, tmp_path / f"{name}.html"), tmp_path, name)
        browsers.append(browser)
        return layout, browser

    yield _look
    for b in browsers:
        b.close()


def _common(layout: dict, browser: Browser) -> None:
    assert browser.page_errors() == []
    png = layout["page_png"]
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(h["level"] == "h1" and "boardlab report" in h["text"] for h in layout["headings"])


def test_the_interference_report_shows_verdicts_and_a_drawn_slowdown_figure(look, tmp_path):
    # scimark.fft is 25% slower under cpu-stress (a slowdown); crc32 is 20% faster under memcpy
    db = make_campaign_db(tmp_path / "interference.db", name="interference", n=12, with_latency=False)
    layout, browser = look(db, "interference")
    _common(layout, browser)
    table = verdict_table(layout)
    assert "slowdown" in table and "cpu-stress" in table and "scimark.fft" in table
    assert "speedup" in table and "memcpy" in table
    heatmap = section_figures(layout, r"heatmap|slowdown|interference")
    assert_drawn(browser, heatmap, "the interference (slowdown) section")
    # the run values of each workload are drawn too (a box per condition)
    assert_drawn(browser, section_figures(layout, r"run values|per workload"), "the run values")


def test_the_ai_report_shows_its_section_with_drawn_latency_figures(look, tmp_path):
    layout, browser = look(make_ai_db(tmp_path / "ai.db"), "ai")
    _common(layout, browser)
    table = verdict_table(layout)
    assert "ai.inference" in table and "slowdown" in table  # resnet18 is 30% slower under cpu
    assert "p99" in table  # the frame-latency tail has its own verdict
    figures = section_figures(layout, r"\bAI\b|inference")
    assert len(figures) >= 2, figures  # one panel per model (mobilenet_v1, resnet18)
    assert_drawn(browser, figures, "the AI inference section")


def test_the_rt_report_shows_its_section_with_drawn_histograms(look, tmp_path):
    layout, browser = look(make_rt_db(tmp_path / "rt.db"), "rt")
    _common(layout, browser)
    table = verdict_table(layout)
    assert "rt.cyclictest" in table and any(w in table for w in VERDICT_WORDS)
    figures = section_figures(layout, r"real-time|latency")
    assert len(figures) >= 5, figures  # the maxima per run and a histogram per condition (4)
    assert_drawn(browser, figures, "the real-time latency section")
    page_text = " ".join(h["text"] for h in layout["headings"]).lower()
    assert "histogram" in page_text or any("histogram" in f["label"].lower() for f in figures)


# Every label a reader reads as one: plot text, table cells and headers, summary cards, headings.
LABELS_JS = r"""
(() => Array.from(document.querySelectorAll(
  "svg text, td, th, .card-label, .card-value, .card-group, h1, h2, h3, h4"
)).map(el => el.textContent.trim()).filter(t => t))()
"""
CUT = re.compile(r"(…|\.\.\.)$")


def assert_labels_readable(browser: Browser) -> list[str]:
    """No label shows an unset parameter (None) or ends cut (… or ...): the report only abbreviates with a
    legend entry, and these reports have none."""
    labels = browser.evaluate(LABELS_JS)
    assert labels
    assert [t for t in labels if re.search(r"\bNone\b", t)] == []
    assert [t for t in labels if CUT.search(t)] == []
    return labels


def test_the_services_report_reads_at_a_glance_and_draws_cpu_over_time(look, tmp_path):
    layout, browser = look(make_services_db(tmp_path / "services.db"), "services")
    _common(layout, browser)
    labels = assert_labels_readable(browser)
    # The two cells differ in source and read_mode only: the card and the verdicts name just those
    assert "Vehicle services" in labels  # the summary card's group is the study
    cards = [t for t in labels if t.startswith("svc.scenario")]
    assert "svc.scenario (source=synthetic): CPU (% of one CPU)" in cards, cards
    assert "svc.scenario (read_mode=canonical, source=nmea): CPU (% of one CPU)" in cards, cards
    table = verdict_table(layout)
    assert "slowdown" in table and "svc.scenario (read_mode=canonical, source=nmea)" in table
    # CPU over time: one figure per cell, one line per service, with the PSS figure beside the RSS one
    cpu = [f for f in section_figures(layout, r"per-second") if "cpu_pct_one_cpu per second" in f["label"]]
    assert len(cpu) == 4, [
        f["label"] for f in section_figures(layout, r"per-second")
    ]  # 2 cells x 2 conditions
    assert_drawn(browser, cpu, "the CPU-over-time figure")
    r = cpu[0]["rect"]
    counts = pixel_counts(browser.screenshot({k: max(0, int(v)) for k, v in r.items()}))
    for color in ("#0072B2", "#D55E00", "#009E73"):  # the three services' lines (the palette's first three)
        assert near(counts, color) > 150, (color, near(counts, color))
    assert all(t in labels for t in SERVICES)  # the legend names each service
    memory = [f for f in section_figures(layout, r"per-second") if "pss_bytes" in f["label"]]
    rss = [f for f in section_figures(layout, r"per-second") if "rss_bytes" in f["label"]]
    assert memory and rss and abs(memory[0]["rect"]["y"] - rss[0]["rect"]["y"]) < 2  # side by side
    assert_drawn(browser, memory[:1] + rss[:1], "the RSS and PSS figures")


def test_the_stream_report_shows_rates_with_si_prefixes(look, tmp_path):
    layout, browser = look(make_stream_db(tmp_path / "stream.db"), "stream")
    _common(layout, browser)
    labels = assert_labels_readable(browser)
    text = "\n".join(labels)
    assert "Gbit/s" in text and not re.search(r"\d\.\d+e\d+ ?bit/s", text)
    assert re.search(r"\b11\.0\d* Gbit/s", text), [t for t in labels if "Gbit/s" in t][:8]
    table = verdict_table(layout)
    assert "io.net (msg 64 kib)" in table and "slowdown" in table  # the table text is lowercased
    assert_drawn(browser, section_figures(layout, r"run values|per workload"), "the run values")


def test_the_satellite_report_shows_times_per_run_beside_throughput(look, tmp_path):
    layout, browser = look(make_satellite_db(tmp_path / "satellite.db"), "satellite")
    _common(layout, browser)
    labels = assert_labels_readable(browser)
    assert "mibench workloads" in labels  # the summary card groups the kernels by their family
    cells = "\n".join(t["text"] for t in layout["tables"] if re.search(r"^cells", t["section"], re.I))
    assert "user / system / wall per run [s]" in cells
    for w in MIBENCH:
        row = next(line for line in cells.splitlines() if line.startswith(w))
        # the runs' rusage: 0.9 and 0.05 of a wall time of about 0.52 s
        assert re.search(r"0\.4[6-9]\d? / 0\.02\d* / 0\.5[0-5]\d?", row), row
    # blowfish's 4.87 MB/s reads in MB/s on its card (3-4 significant digits, no exponent)
    assert any(re.match(r"4\.8\d* MB/s \[", t) for t in labels), [t for t in labels if "MB/s" in t]
    table = verdict_table(layout)
    assert table.count("slowdown") >= len(MIBENCH)  # the 2x slowdown of every kernel is a verdict
    assert_drawn(browser, section_figures(layout, r"run values|per workload"), "the run values")
