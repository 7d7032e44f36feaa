"""Every report and every page of `boardlab serve`, laid out by a real browser (headless Chromium over the
DevTools pipe of test_report_screenshots) at 1280 and at 800 px wide, measured the way a reader would find
faults: no text runs out of its figure (an SVG's box) or out of the box that holds it (a clipping box, or
the page itself: a table that does not fit scrolls inside its own box), and no two texts print over each other
(by more than 1 px). DOM geometry, not a pixel diff: each HTML text's line boxes (a Range's client rects),
each SVG <text>'s box turned by its transform (getBBox through getScreenCTM, so rotated labels are measured as
drawn). The whole page's screenshot is kept under the test's directory; its path is printed.

The pages are those of test_report_lint (every study's fixture campaign, the demo's, the simulated sweeps, the
history store under `boardlab serve`)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from e2e.test_report_lint import SERVE_PAGES, STUDIES, build_stores
from e2e.test_report_screenshots import Browser
from helpers import chromium, full_sweep_report, run_cli

WIDTHS = (1280, 800)

# Returns {texts, overflows, overlaps}: each fault named by the texts involved and where they are.
GEOMETRY_JS = r"""
(() => {
  const TOL = 1;
  const sx = scrollX, sy = scrollY;
  const items = [], overflows = [];
  const box = (r) => ({l: r.left + sx, t: r.top + sy, r: r.right + sx, b: r.bottom + sy});
  const quadOf = (b) => [[b.l, b.t], [b.r, b.t], [b.r, b.b], [b.l, b.b]];
  const where = (el) => {
    const fig = el.closest("svg");
    const sec = el.closest("section, details, table, body");
    const head = fig ? (fig.getAttribute("aria-label") || "figure") : (sec ? sec.tagName.toLowerCase() : "");
    return head.slice(0, 70);
  };
  const outside = (b, c) => b.l < c.l - TOL || b.r > c.r + TOL;
  // HTML text: every text node's line boxes
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.data.trim() || !el || el.closest("svg, script, style, title, noscript")) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden" || cs.display === "none") continue;
    const folded = el.closest("details:not([open])");  // laid out but not shown until opened
    if (folded && !el.closest("summary")) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 0.5 || r.height < 0.5) continue;
      const b = box(r);
      items.push({text: n.data.trim().slice(0, 50), where: where(el), b, q: quadOf(b)});
      // the box that clips it: a scrolling box lets the reader reach it, a hidden one cuts it, none: the page
      let clip = el.parentElement, kind = "visible";
      for (; clip && clip !== document.body; clip = clip.parentElement) {
        kind = getComputedStyle(clip).overflowX;
        if (kind !== "visible") break;
      }
      if (kind === "auto" || kind === "scroll") continue;
      const c = clip && clip !== document.body ? box(clip.getBoundingClientRect())
              : {l: 0, r: document.documentElement.clientWidth};
      if (outside(b, c)) overflows.push(`${JSON.stringify(n.data.trim().slice(0, 50))} (${where(el)}) `
                                        + `runs from x=${b.l.toFixed(0)} to ${b.r.toFixed(0)}, out of `
                                        + `[${c.l.toFixed(0)}, ${c.r.toFixed(0)}]`);
    }
  }
  // SVG text: its box as drawn (rotations included), which must stay inside its figure
  for (const t of document.querySelectorAll("svg text")) {
    if (t.closest("details:not([open])")) continue;
    const label = (t.firstChild && t.firstChild.nodeType === 3 ? t.firstChild.data : t.textContent).trim();
    if (!label) continue;
    const bb = t.getBBox(), m = t.getScreenCTM();
    if (!m || bb.width < 0.5) continue;
    const q = [[bb.x, bb.y], [bb.x + bb.width, bb.y], [bb.x + bb.width, bb.y + bb.height],
               [bb.x, bb.y + bb.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e + sx, m.b * x + m.d * y + m.f + sy]);
    const b = {l: Math.min(...q.map(p => p[0])), r: Math.max(...q.map(p => p[0])),
               t: Math.min(...q.map(p => p[1])), b: Math.max(...q.map(p => p[1]))};
    items.push({text: label.slice(0, 50), where: where(t), b, q});
    const f = box(t.ownerSVGElement.getBoundingClientRect());
    if (outside(b, f)) overflows.push(`${JSON.stringify(label.slice(0, 50))} (${where(t)}) runs from `
                                      + `x=${b.l.toFixed(0)} to ${b.r.toFixed(0)}, out of its figure `
                                      + `[${f.l.toFixed(0)}, ${f.r.toFixed(0)}]`);
  }
  // two texts over each other: separating axes of the two (possibly turned) boxes, 1 px allowed
  const apart = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
      const len = Math.hypot(x2 - x1, y2 - y1) || 1, ax = -(y2 - y1) / len, ay = (x2 - x1) / len;
      const pp = p.map(([x, y]) => x * ax + y * ay), qq = q.map(([x, y]) => x * ax + y * ay);
      if (Math.min(Math.max(...pp), Math.max(...qq)) - Math.max(Math.min(...pp), Math.min(...qq)) <= TOL)
        return true;
    }
    return false;
  };
  items.sort((a, b) => a.b.t - b.b.t);
  const overlaps = [];
  for (let i = 0; i < items.length; i++) {
    const a = items[i];
    for (let j = i + 1; j < items.length && items[j].b.t < a.b.b - TOL; j++) {
      const c = items[j];
      if (Math.min(a.b.r, c.b.r) - Math.max(a.b.l, c.b.l) <= TOL) continue;
      if (!apart(a.q, c.q))
        overlaps.push(`${JSON.stringify(a.text)} (${a.where}) over `
                      + `${JSON.stringify(c.text)} (${c.where}) at y=${a.b.t.toFixed(0)}`);
    }
  }
  return {texts: items.length, overflows, overlaps, viewport: innerWidth,
          height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth};
})()
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium()  # skips, saying why, when there is no browser and none can be installed
    b = Browser(tmp_path_factory.mktemp("geometry-profile"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    return build_stores(tmp_path_factory.mktemp("geometry-stores"))


def measure(browser: Browser, url: str, width: int, shot: Path, timeout_s: float = 60) -> dict:
    """The page at `url` in a fresh tab `width` px wide: its geometry, and its whole screenshot in `shot`."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    try:
        _load(browser, target, url, width, timeout_s)
        return _geometry(browser, width, shot, timeout_s)
    finally:
        browser.call("Target.closeTarget", {"targetId": target})
        browser.events.clear()


def _load(browser: Browser, target: str, url: str, width: int, timeout_s: float) -> None:
    browser.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    browser.call("Page.enable", session=True)
    _set_width(browser, width)
    browser.call("Page.navigate", {"url": url}, session=True)
    browser.wait_event("Page.loadEventFired", timeout_s=timeout_s)


def _set_width(browser: Browser, width: int, height: int = 900) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    browser.call("Emulation.setDeviceMetricsOverride", metrics, session=True)


def _geometry(browser: Browser, width: int, shot: Path, timeout_s: float) -> dict:
    """The loaded page's geometry at `width`, and its whole screenshot in `shot`."""
    found = browser.call("Runtime.evaluate", {"expression": GEOMETRY_JS, "returnByValue": True},
                         session=True, timeout_s=timeout_s)["result"]["value"]  # fmt: skip
    # The shot, after the measure: the viewport made as tall as the shot (at most 16,000 px) and the shot
    # taken in it. captureBeyondViewport made the same resize itself, then put the 900 px viewport back: a
    # layout of the page each way, 11 s of the 6 MB sweep page's 1280 px shot. (Its shot of a page taller
    # than the shot was also laid out without the scrollbar the measure saw; this one keeps it.)
    height = min(found["height"], 16000)
    _set_width(browser, width, height)
    clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    png = browser.call("Page.captureScreenshot", {"format": "png", "clip": clip}, session=True,
                       timeout_s=timeout_s)["data"]  # fmt: skip
    shot.write_bytes(base64.b64decode(png))
    return found


def check(found: dict, what: str, shot: Path, capsys) -> None:
    with capsys.disabled():
        print(f"\n{what}: {found['texts']} texts measured; screenshot {shot}")
    assert found["texts"] > 0, f"{what}: no text measured"
    faults = found["overflows"][:15] + found["overlaps"][:15]
    assert not faults, f"{what} ({shot}):\n" + "\n".join(faults)


@pytest.fixture(scope="module")
def reports(stores, tmp_path_factory):
    """study -> its HTML report, made by `boardlab report` when a test first asks for it and read at every
    width: the file does not depend on the width it is read at (one CLI run per study, not one per width)."""
    d = tmp_path_factory.mktemp("geometry-reports")
    made: dict[str, Path] = {}

    def report(study: str) -> Path:
        if study not in made:
            out = d / f"{study.replace(' ', '-')}.html"
            proc = run_cli("report", "--db", str(stores[study]), "-o", str(out))
            assert proc.returncode == 0, proc.stderr
            made[study] = out
        return made[study]

    return report


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("study", STUDIES)
def test_no_text_of_a_report_overflows_or_overprints(browser, reports, study, width, tmp_path, capsys):
    shot = tmp_path / f"{study.replace(' ', '-')}-{width}.png"
    check(
        measure(browser, reports(study).as_uri(), width, shot),
        f"report of {study} at {width} px",
        shot,
        capsys,
    )


@pytest.fixture(scope="module")
def served(stores):
    pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
    pytest.importorskip("uvicorn", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
    from serve_helpers import Served

    with Served(stores["history"]) as s:
        yield s


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", SERVE_PAGES)
def test_no_text_of_a_serve_page_overflows_or_overprints(browser, served, page, width, tmp_path, capsys):
    name = page.strip("/").replace("/", "-").replace("?", "-").replace("&", "-").replace(":", "") or "root"
    shot = tmp_path / f"serve-{name}-{width}.png"
    check(measure(browser, served.url + page, width, shot), f"serve {page} at {width} px", shot, capsys)


@pytest.fixture(scope="module")
def full_sweep(tmp_path_factory) -> Path:
    """The report of the issue's 6,696-cell sweep: every OPP pair of the simulated Exynos 5422, the same
    page test_report_lint reads, made once for both (helpers.full_sweep_report)."""
    page, said = full_sweep_report(tmp_path_factory)
    assert "6696 cells" in said  # the full sweep, not a part of it
    return page


@pytest.fixture(scope="module")
def full_sweep_measured(browser, full_sweep, tmp_path_factory) -> dict[int, tuple[dict, Path]]:
    """width -> (geometry, screenshot) of the sweep's report, measured at every width in one tab: the 6 MB
    page (28 figures, 140,000 texts) is loaded once, at the first width, then laid out again at each next
    one. A load was most of a measure (10 s alone, a minute beside the rest of the suite) and the page has no
    script: its layout at a width is the same after the resize as after a load there (the same page height
    and text count at 1280 and 800 px as two loads gave)."""
    d = tmp_path_factory.mktemp("full-sweep-shots")
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    try:
        _load(browser, target, full_sweep.as_uri(), WIDTHS[0], timeout_s=600)
        out = {}
        for width in WIDTHS:
            _set_width(browser, width)
            shot = d / f"full-sweep-{width}.png"
            out[width] = (_geometry(browser, width, shot, timeout_s=600), shot)
        return out
    finally:
        browser.call("Target.closeTarget", {"targetId": target})
        browser.events.clear()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_full_sweep_reads_as_heatmaps_without_overprint(full_sweep_measured, width, capsys):
    found, shot = full_sweep_measured[width]
    assert found["viewport"] == width  # laid out at this width
    check(found, f"report of the 6,696-cell sweep at {width} px", shot, capsys)
    assert found["width"] <= width  # nothing makes the page itself scroll sideways


def test_the_measure_sees_each_fault(browser, tmp_path, capsys):
    """The checks themselves: a text over another, a label out of its figure, a turned label over a
    neighbour, and a wide table cut by a box that hides it are found; a table that scrolls in its box is
    not."""
    page = tmp_path / "faults.html"
    page.write_text(
        '<!doctype html><html><body style="margin:0;font:14px sans-serif">'
        '<p style="position:absolute;top:0;left:0;margin:0">first text</p>'
        '<p style="position:absolute;top:4px;left:10px;margin:0">second text</p>'
        '<svg width="200" height="100" style="position:absolute;top:100px;left:0">'
        '<text x="150" y="50" font-size="14">runs off the right edge</text>'
        '<text x="20" y="90" font-size="12" transform="rotate(-35 20 90)">turned one</text>'
        '<text x="30" y="90" font-size="12" transform="rotate(-35 30 90)">turned two</text></svg>'
        '<div style="position:absolute;top:300px;width:100px;overflow:hidden"><table><tr>'
        "<td>a&nbsp;cell&nbsp;far&nbsp;wider&nbsp;than&nbsp;its&nbsp;box</td></tr></table></div>"
        '<div style="position:absolute;top:400px;width:100px;overflow-x:auto"><table><tr>'
        "<td>scrolls&nbsp;inside&nbsp;its&nbsp;own&nbsp;box&nbsp;instead</td></tr></table></div>"
        "</body></html>"
    )
    found = measure(browser, page.as_uri(), 800, tmp_path / "faults.png")
    assert len(found["overlaps"]) == 2, found["overlaps"]  # the two paragraphs, the two turned labels
    assert '"first text"' in found["overlaps"][0] and '"turned one"' in " ".join(found["overlaps"])
    cut = sorted(o.split(" (")[0].replace("\xa0", " ") for o in found["overflows"])
    assert cut == ['"a cell far wider than its box"', '"runs off the right edge"'], found["overflows"]


@pytest.fixture(scope="module")
def simulate_page(tmp_path_factory) -> Path:
    """`governor simulate --html` of two traces, made once for both widths."""
    page = tmp_path_factory.mktemp("simulate") / "simulate.html"
    proc = run_cli("governor", "simulate", "--trace", "memory-bound", "--trace", "mixed", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_the_governor_simulator_page_keeps_every_policy_whole(
    browser, simulate_page, width, tmp_path, capsys
):
    """`governor simulate --html`: its heatmaps' policy columns (`daemon:anti-snoop`) stay inside the
    figure."""
    page = simulate_page
    shot = tmp_path / f"simulate-{width}.png"
    check(
        measure(browser, page.as_uri(), width, shot), f"governor simulate --html at {width} px", shot, capsys
    )
