"""Tiny, dependency-free SVG plots for reports: boxplots, a ratio heatmap and line plots.

Standard library only, so that a report can be made on the board itself. Each function returns one
`<svg>` element as a string, with width/height in px and a viewBox (it scales down with CSS), every text
escaped, and colors that survive printing in gray (Okabe-Ito qualitative palette, ColorBrewer RdBu for the
diverging scale). Output is deterministic: jitter comes from a seeded generator.
"""

from __future__ import annotations

import html
import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# Okabe & Ito (2008): distinguishable with color-vision deficiencies and in gray print; yellow left out.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")
INK = "#222222"
GRID = "#e3e3e3"
AXIS = "#666666"
CHAR_W = 0.62  # average glyph width as a fraction of the font size, to size label margins
VERDICT_MARKS = {
    "slowdown": "▲",
    "speedup": "▼",
    "no_change": "=",
    "inconclusive": "?",
    "insufficient": "–",
}
CONFOUNDED_MARK = "⚠"


# --- numbers -----------------------------------------------------------------------------------------------


def fmt_num(x: float | None, sig: int = 3) -> str:
    """`x` with `sig` significant digits, no exponent between 1e-3 and 1e6 (tables and tick labels)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6 or a < 1e-3:
        mantissa, exp = f"{x:.{sig - 1}e}".split("e")
        return f"{mantissa}e{int(exp)}"
    if a >= 10 ** (sig - 1):
        return f"{x:.0f}"
    decimals = sig - 1 - math.floor(math.log10(a))
    return f"{x:.{decimals}f}"


def fmt_tick(x: float, sig: int = 3) -> str:
    """A tick label: like fmt_num, without trailing zeros (1.4, not 1.40)."""
    text = fmt_num(x, sig)
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_si(x: float, sig: int = 3) -> str:
    """Tick labels on a log axis: 1, 10, 100, 1k, 10k, 1M, 1G (and 0.1, 0.01 below 1)."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return fmt_tick(x / factor, sig) + suffix
    return fmt_tick(x, sig)


def fmt_bytes(n: float, sig: int = 3) -> str:
    """Binary sizes as on a memory hierarchy axis: 512 B, 32 KiB, 1.5 MiB, 2 GiB."""
    for factor, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(n) >= factor:
            return f"{fmt_tick(n / factor, sig)} {suffix}"
    return f"{fmt_tick(n, sig)} B"


def tick_labels(ticks: Sequence[float], fmt: Callable[..., str]) -> list[str]:
    """Labels with as many significant digits as it takes to tell neighbouring ticks apart."""
    labels = [fmt(t) for t in ticks]
    for sig in range(4, 9):
        if len(set(labels)) == len(labels):
            break
        try:
            labels = [fmt(t, sig) for t in ticks]
        except TypeError:  # a caller's formatter without a precision argument
            break
    return labels


def _nice_step(span: float, target: int) -> float:
    """Heckbert's nice numbers (Graphics Gems, 1990): a step of 1, 2 or 5 x 10^k giving ~`target` ticks."""
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] on a linear axis."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    step = _nice_step(hi - lo, target)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= hi + step * 1e-9 and k < 100:
        v = first + k * step
        ticks.append(0.0 if abs(v) < step * 1e-9 else v)
        k += 1
    return ticks


def log_ticks(lo: float, hi: float, base: int = 10) -> list[float]:
    """Tick values on a log axis: powers of `base`, with 2x and 5x when fewer than 3 decades are shown."""
    if lo <= 0 or hi <= 0 or hi < lo:
        return []
    if base == 2:
        ticks = [2.0**k for k in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)]
        ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        stride = max(1, math.ceil(len(ticks) / 10))  # at most ~10 labels at 800 px
        return ticks[::stride]
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if math.log10(hi / lo) < 2.5 else (1,)
    ticks = [m * 10.0**k for k in range(k0, k1 + 1) for m in mults]
    ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
    if len(ticks) < 2:  # less than one decade: fall back to linear nice ticks
        ticks = [t for t in nice_ticks(lo, hi, 4) if t > 0]
    return ticks


class Scale:
    """Maps data values in [lo, hi] to pixels in [px0, px1] on a linear, log10 or log2 axis."""

    def __init__(self, lo: float, hi: float, px0: float, px1: float, kind: str = "linear"):
        if kind not in ("linear", "log10", "log2"):
            raise ValueError(f"unknown scale kind {kind!r}")
        self.kind = kind
        if kind != "linear" and lo <= 0:
            raise ValueError("a log scale needs positive values")
        if hi <= lo:  # a single value: open a window around it
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = (lo / 2, hi * 2) if kind != "linear" else (lo - pad, hi + pad)
        self.lo, self.hi, self.px0, self.px1 = lo, hi, px0, px1
        self._a, self._b = self._t(lo), self._t(hi)

    def _t(self, v: float) -> float:
        if self.kind == "linear":
            return v
        return math.log2(v) if self.kind == "log2" else math.log10(v)

    def __call__(self, v: float) -> float:
        return self.px0 + (self._t(v) - self._a) / (self._b - self._a) * (self.px1 - self.px0)

    def ticks(self, target: int = 5) -> list[float]:
        if self.kind == "linear":
            return nice_ticks(self.lo, self.hi, target)
        return log_ticks(self.lo, self.hi, 2 if self.kind == "log2" else 10)


def padded_domain(values: Sequence[float], kind: str, pad: float = 0.05) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if kind != "linear":
        f = (hi / lo) ** pad if hi > lo else 1.25
        return lo / f, hi * f
    span = (hi - lo) or (abs(hi) * 0.1) or 1.0
    return lo - span * pad, hi + span * pad


def wants_log(values: Sequence[float], spread: float = 20.0) -> bool:
    """A log axis when positive values span more than `spread` times: otherwise the small ones vanish."""
    vs = [v for v in values if v is not None]
    return bool(vs) and min(vs) > 0 and max(vs) / min(vs) > spread


# --- SVG building blocks -------------------------------------------------------------------------------------


def esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


def _text(
    x, y, s, *, anchor="start", size=12, fill=INK, weight=None, rotate=None, cls=None, title=None
) -> str:
    attrs = f'x="{_f(x)}" y="{_f(y)}" font-size="{size}" fill="{fill}"'
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    if weight:
        attrs += f' font-weight="{weight}"'
    if rotate is not None:
        attrs += f' transform="rotate({_f(rotate)} {_f(x)} {_f(y)})"'
    if cls:
        attrs += f' class="{cls}"'
    inner = esc(s) + (f"<title>{esc(title)}</title>" if title else "")
    return f"<text {attrs}>{inner}</text>"


def _line(x1, y1, x2, y2, *, stroke=AXIS, width=1.0, dash=None) -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{_f(x1)}" y1="{_f(y1)}" x2="{_f(x2)}" y2="{_f(y2)}" stroke="{stroke}" '
        f'stroke-width="{_f(width)}"{d}/>'
    )


def _rect(x, y, w, h, *, fill="none", stroke=None, width=1.0, opacity=None, title=None, rx=None) -> str:
    attrs = f'x="{_f(x)}" y="{_f(y)}" width="{_f(max(w, 0))}" height="{_f(max(h, 0))}" fill="{fill}"'
    if stroke:
        attrs += f' stroke="{stroke}" stroke-width="{_f(width)}"'
    if opacity is not None:
        attrs += f' fill-opacity="{opacity}"'
    if rx:
        attrs += f' rx="{_f(rx)}"'
    if title:
        return f"<rect {attrs}><title>{esc(title)}</title></rect>"
    return f"<rect {attrs}/>"


def _circle(x, y, r, *, fill, stroke=None, opacity=None, title=None) -> str:
    attrs = f'cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="{fill}"'
    if stroke:
        attrs += f' stroke="{stroke}" stroke-width="1"'
    if opacity is not None:
        attrs += f' fill-opacity="{opacity}"'
    return f"<circle {attrs}><title>{esc(title)}</title></circle>" if title else f"<circle {attrs}/>"


def _svg(width: float, height: float, title: str, body: list[str], *, cls: str = "plot") -> str:
    w, h = _f(width), _f(math.ceil(height))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{esc(title)}" font-family="{FONT}">'
        f"<title>{esc(title)}</title>" + "".join(body) + "</svg>"
    )


def truncate(s: str, max_chars: int) -> str:
    return s if len(s) <= max_chars else s[: max(1, max_chars - 1)] + "…"


def _text_width(s: str, size: float) -> float:
    return len(s) * size * CHAR_W


def _value_axis(scale: Scale, y_axis: float, top: float, fmt: Callable[[float], str], *, horizontal: bool):
    """Grid lines and tick labels along a value axis (x when `horizontal`, else y)."""
    out = []
    ticks = scale.ticks()
    for t, label in zip(ticks, tick_labels(ticks, fmt), strict=True):
        p = scale(t)
        if horizontal:
            out.append(_line(p, top, p, y_axis, stroke=GRID))
            out.append(_line(p, y_axis, p, y_axis + 4))
            out.append(_text(p, y_axis + 16, label, anchor="middle", size=11, fill=AXIS))
        else:
            out.append(_line(y_axis, p, top, p, stroke=GRID))
            out.append(_line(y_axis - 4, p, y_axis, p))
            out.append(_text(y_axis - 7, p + 4, label, anchor="end", size=11, fill=AXIS))
    return out


def _tick_formatter(kind: str) -> Callable[[float], str]:
    return fmt_si if kind == "log10" else fmt_tick


# --- boxplots --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    """One box of a boxplot group: the valid runs' values, and runs that did not count (shown hollow)."""

    label: str
    values: Sequence[float]
    excluded: Sequence[float] = ()
    note: str = ""  # shown right of the box, e.g. "n=10"


def box_stats(values: Sequence[float]) -> tuple[float, float, float, float, float]:
    """(whisker low, q1, median, q3, whisker high): quartiles by linear interpolation (as boardlab.stats),
    whiskers at the most extreme values within 1.5 IQR of the quartiles (Tukey)."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    iqr = q3 - q1
    lo = min(x for x in xs if x >= q1 - 1.5 * iqr)
    hi = max(x for x in xs if x <= q3 + 1.5 * iqr)
    return lo, q1, med, q3, hi


def boxplot(
    boxes: Sequence[Box],
    *,
    title: str,
    unit: str,
    log: bool | None = None,
    width: int = 800,
    seed: int = 0,
) -> str:
    """Horizontal boxplots, one row per box, sharing a value axis; every run drawn as a jittered dot.

    `log` None picks a log axis when the values span more than 20x. Hollow dots are runs that did not
    count (invalid): shown so nothing is hidden, left out of the box.
    """
    everything = [v for b in boxes for v in (*b.values, *b.excluded) if v is not None and math.isfinite(v)]
    if log is None:
        log = wants_log(everything)
    if log and any(v <= 0 for v in everything):
        log = False
    kind = "log10" if log else "linear"
    row_h, top = 30, 34
    label_chars = min(max((len(b.label) for b in boxes), default=4), 44)
    left = 16 + _text_width("M" * label_chars, 12)
    right = 64
    bottom_axis = top + row_h * max(len(boxes), 1) + 6
    height = bottom_axis + 40
    body = [_text(10, 20, title, size=14, weight="bold")]
    if not everything:
        body.append(_text(left, top + 16, "no run values to plot", fill=AXIS))
        return _svg(width, height, title, body)
    scale = Scale(*padded_domain(everything, kind), left, width - right, kind)
    body += _value_axis(scale, bottom_axis, top - 4, _tick_formatter(kind), horizontal=True)
    body.append(_line(left, bottom_axis, width - right, bottom_axis))
    axis_label = f"{unit} (log scale)" if log else unit
    body.append(_text((left + width - right) / 2, bottom_axis + 33, axis_label, anchor="middle", size=12))
    rng = random.Random(seed)
    for i, b in enumerate(boxes):
        color = PALETTE[i % len(PALETTE)]
        cy = top + row_h * i + row_h / 2
        shown = truncate(b.label, 44)
        body.append(
            _text(
                left - 10, cy + 4, shown, anchor="end", size=12, title=b.label if shown != b.label else None
            )
        )
        vals = [v for v in b.values if v is not None and math.isfinite(v)]
        if vals:
            lo, q1, med, q3, hi = box_stats(vals)
            hh = row_h * 0.32
            body.append(_line(scale(lo), cy, scale(q1), cy, stroke=INK))
            body.append(_line(scale(q3), cy, scale(hi), cy, stroke=INK))
            for w in (lo, hi):
                body.append(_line(scale(w), cy - hh * 0.6, scale(w), cy + hh * 0.6, stroke=INK))
            tip = (
                f"{b.label}: median {fmt_num(med, 4)} {unit}, IQR {fmt_num(q1, 4)}–{fmt_num(q3, 4)}, "
                f"n={len(vals)}"
            )
            body.append(
                _rect(
                    scale(q1),
                    cy - hh,
                    scale(q3) - scale(q1),
                    2 * hh,
                    fill=color,
                    opacity=0.18,
                    stroke=color,
                    width=1.2,
                    title=tip,
                )
            )
            body.append(_line(scale(med), cy - hh, scale(med), cy + hh, stroke=INK, width=2.5))
        for v in vals:
            body.append(
                _circle(scale(v), cy + rng.uniform(-0.27, 0.27) * row_h, 2.6, fill=color, opacity=0.75)
            )
        for v in b.excluded:
            if v is not None and math.isfinite(v):
                jitter = rng.uniform(-0.27, 0.27) * row_h
                body.append(
                    _circle(scale(v), cy + jitter, 2.8, fill="white", stroke=color, title="invalid run")
                )
        body.append(_text(width - right + 8, cy + 4, b.note or f"n={len(vals)}", size=11, fill=AXIS))
    return _svg(width, height, title, body)


# --- heatmap ---------------------------------------------------------------------------------------------------

# ColorBrewer RdBu (Brewer 2003), diverging around 1.0: blue = faster (cheaper), red = slower.
_DIVERGING = (
    (-1.0, (33, 102, 172)),
    (-0.5, (146, 197, 222)),
    (0.0, (247, 247, 247)),
    (0.5, (244, 165, 130)),
    (1.0, (178, 24, 43)),
)


def diverging_color(ratio: float, limit: float = 2.0) -> str:
    """Color of a cost ratio on a log scale symmetric around 1: 1/limit full blue, limit full red."""
    if ratio is None or not ratio > 0 or not math.isfinite(ratio):
        return "#dddddd"
    t = max(-1.0, min(1.0, math.log(ratio) / math.log(limit)))
    for (t0, c0), (t1, c1) in zip(_DIVERGING, _DIVERGING[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            rgb = tuple(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#{:02x}{:02x}{:02x}".format(*_DIVERGING[-1][1])


def _is_dark(hex_color: str) -> bool:
    r, g, b = (int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45


@dataclass(frozen=True)
class HeatCell:
    """One cell of the heatmap: the cost ratio (> 1 = worse), its printed text, verdict and tooltip."""

    ratio: float | None
    verdict: str | None  # a VerdictKind, or None when there is no comparison
    confounded: bool = False
    tooltip: str = ""


def verdict_mark(verdict: str | None, confounded: bool = False) -> str:
    mark = VERDICT_MARKS.get(verdict or "", "")
    return f"{mark}{CONFOUNDED_MARK}" if confounded else mark


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: dict[tuple[int, int], HeatCell],
    *,
    title: str,
    width: int = 800,
    limit: float = 2.0,
) -> str:
    """Rows (workloads) x columns (conditions), colored by the cost ratio on a diverging log scale around
    1.0 (saturating at `limit` and 1/`limit`); each cell shows the ratio and the verdict mark."""
    label_chars = min(max((len(r) for r in rows), default=4), 56)
    left = 16 + _text_width("M" * label_chars, 12)
    n_cols = max(len(cols), 1)
    cell_w = max(48.0, min(140.0, (width - left - 16) / n_cols))
    longest_col = max((_text_width(c, 11) for c in cols), default=0)
    rotate = longest_col > cell_w - 6
    head = 40 + (min(longest_col, 180) * 0.7 if rotate else 18)
    cell_h = 34
    grid_w = cell_w * n_cols
    width = max(width, int(left + grid_w + 16))
    height = head + cell_h * len(rows) + 84
    body = [_text(10, 20, title, size=14, weight="bold")]
    for j, c in enumerate(cols):
        cx = left + cell_w * j + cell_w / 2
        if rotate:
            body.append(
                _text(cx - 4, head - 8, truncate(c, 30), anchor="start", size=11, rotate=-35, title=c)
            )
        else:
            body.append(_text(cx, head - 8, c, anchor="middle", size=11))
    for i, r in enumerate(rows):
        cy = head + cell_h * i
        shown = truncate(r, 56)
        body.append(
            _text(
                left - 8, cy + cell_h / 2 + 4, shown, anchor="end", size=12, title=r if shown != r else None
            )
        )
        for j in range(len(cols)):
            x = left + cell_w * j
            cell = cells.get((i, j))
            if cell is None:
                body.append(_rect(x + 1, cy + 1, cell_w - 2, cell_h - 2, fill="#ffffff", stroke=GRID))
                continue
            fill = diverging_color(cell.ratio, limit)
            body.append(
                _rect(
                    x + 1,
                    cy + 1,
                    cell_w - 2,
                    cell_h - 2,
                    fill=fill,
                    stroke="#ffffff",
                    title=cell.tooltip or None,
                )
            )
            ink = "#ffffff" if _is_dark(fill) else INK
            text = "n/a" if cell.ratio is None else f"{fmt_num(cell.ratio)}×"
            mark = verdict_mark(cell.verdict, cell.confounded)
            label = f"{text} {mark}".strip()
            body.append(
                _text(
                    x + cell_w / 2,
                    cy + cell_h / 2 + 4,
                    truncate(label, int(cell_w / 7)),
                    anchor="middle",
                    size=12,
                    fill=ink,
                    weight="bold",
                    title=cell.tooltip or None,
                )
            )
    # Legend: the color scale (discrete steps: no gradient ids to clash between SVGs) and the marks.
    ly = head + cell_h * len(rows) + 22
    lx, lw, steps = left, min(320.0, width - left - 20), 40
    for k in range(steps):
        t = -1 + 2 * (k + 0.5) / steps
        body.append(
            _rect(lx + lw * k / steps, ly, lw / steps + 0.5, 12, fill=diverging_color(limit**t, limit))
        )
    body.append(_rect(lx, ly, lw, 12, stroke=AXIS, width=0.8))
    for v in (1 / limit, 0.8, 1.0, 1.25, limit) if limit > 1.3 else (1 / limit, 1.0, limit):
        x = lx + lw * (math.log(v) / math.log(limit) + 1) / 2
        body.append(_line(x, ly + 12, x, ly + 16))
        body.append(_text(x, ly + 28, f"{fmt_tick(v)}×", anchor="middle", size=10, fill=AXIS))
    body.append(_text(lx, ly - 6, "cost ratio (condition / baseline; > 1 = worse)", size=10, fill=AXIS))
    key = (
        "   ".join(f"{m} {k.replace('_', ' ')}" for k, m in VERDICT_MARKS.items())
        + f"   {CONFOUNDED_MARK} confounded"
    )
    body.append(_text(10, ly + 50, key, size=11))
    return _svg(width, height, title, body)


# --- line plots ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """A line of (x, y) points; a y of None breaks it (e.g. between runs). `errors` are optional (low, high)
    bars per point, in y units."""

    label: str
    points: Sequence[tuple[float, float | None]]
    errors: Sequence[tuple[float, float] | None] | None = None
    markers: bool = True
    color: str | None = None


def downsample(
    points: Sequence[tuple[float, float | None]], max_points: int
) -> list[tuple[float, float | None]]:
    """Mean per equal-width x bucket, keeping breaks (None): a long series stays a small SVG."""
    if len(points) <= max_points:
        return list(points)
    xs = [x for x, _ in points]
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    buckets: dict[int, list[float]] = {}
    xsum: dict[int, list[float]] = {}
    breaks: set[int] = set()
    for x, y in points:
        k = min(int((x - lo) / span * max_points), max_points - 1)
        if y is None:
            breaks.add(k)
            continue
        buckets.setdefault(k, []).append(y)
        xsum.setdefault(k, []).append(x)
    out: list[tuple[float, float | None]] = []
    for k in sorted(set(buckets) | breaks):
        if k in buckets:
            out.append((statistics.fmean(xsum[k]), statistics.fmean(buckets[k])))
        if k in breaks:
            out.append((lo + span * (k + 1) / max_points, None))
    return out


def line_plot(
    lines: Sequence[Line],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_kind: str = "linear",
    y_kind: str = "linear",
    x_format: Callable[[float], str] | None = None,
    y_format: Callable[[float], str] | None = None,
    y_zero: bool = False,
    width: int = 800,
    height: int = 300,
    legend: bool = True,
    frame: str | None = None,
    title_size: int = 14,
    subtitle: str | None = None,
) -> str:
    """Lines (with optional markers and error bars) on linear, log10 or log2 axes, and a legend below.
    A `subtitle` line under the title is never truncated away (it carries e.g. a test's result)."""
    small = width < 400
    pts = [(x, y) for ln in lines for x, y in ln.points if y is not None]
    ys = [y for _, y in pts] + [e for ln in lines for pair in (ln.errors or ()) if pair for e in pair]
    left = 50 if small else 66
    right = 12 if small else 20
    top = (30 if small else 36) + (14 if subtitle else 0)
    legend_rows = 0
    legend_items: list[tuple[str, str, float, int]] = []  # label, color, x, row
    if legend and len(lines) > 0:
        x, row = left, 0
        for i, ln in enumerate(lines):
            w = 26 + _text_width(truncate(ln.label, 40), 11) + 14
            if x + w > width - right and x > left:
                x, row = left, row + 1
            legend_items.append((ln.label, ln.color or PALETTE[i % len(PALETTE)], x, row))
            x += w
        legend_rows = row + 1
    plot_bottom = height - (34 if small else 46) - legend_rows * 18
    body = []
    if frame:
        body.append(_rect(0.5, 0.5, width - 1, height - 1, stroke=frame, width=2))
    body.append(
        _text(
            8 if small else 10,
            18 if small else 20,
            truncate(title, int((width - 16) / (title_size * 0.68))),
            size=title_size,
            weight="bold",
            title=title,
        )
    )
    if subtitle:
        shown = truncate(subtitle, int((width - 16) / (11 * 0.55)))  # digits and spaces are narrow
        body.append(
            _text(8 if small else 10, (18 if small else 20) + 15, shown, size=11, fill=INK, title=subtitle)
        )
    if not pts:
        body.append(_text(left, top + 30, "no data", fill=AXIS))
        return _svg(width, height, title, body)
    xs = [x for x, _ in pts]
    if x_kind != "linear" and min(xs) <= 0:
        x_kind = "linear"
    if y_kind != "linear" and min(ys) <= 0:
        y_kind = "linear"
    xlo, xhi = padded_domain(xs, x_kind, 0.03)
    ylo, yhi = padded_domain(ys, y_kind, 0.06)
    if y_zero and y_kind == "linear":
        ylo = min(0.0, ylo) if min(ys) >= 0 else ylo
    sx = Scale(xlo, xhi, left, width - right, x_kind)
    sy = Scale(ylo, yhi, plot_bottom, top, y_kind)
    xfmt = x_format or _tick_formatter(x_kind)
    yfmt = y_format or _tick_formatter(y_kind)
    xticks = sx.ticks(4 if small else 7)
    for t, label in zip(xticks, tick_labels(xticks, xfmt), strict=True):
        p = sx(t)
        body.append(_line(p, top, p, plot_bottom, stroke=GRID))
        body.append(_text(p, plot_bottom + 14, label, anchor="middle", size=10 if small else 11, fill=AXIS))
    yticks = sy.ticks(4 if small else 5)
    for t, label in zip(yticks, tick_labels(yticks, yfmt), strict=True):
        p = sy(t)
        body.append(_line(left, p, width - right, p, stroke=GRID))
        body.append(_text(left - 6, p + 4, label, anchor="end", size=10 if small else 11, fill=AXIS))
    body.append(_line(left, plot_bottom, width - right, plot_bottom))
    body.append(_line(left, top, left, plot_bottom))
    body.append(
        _text(
            (left + width - right) / 2,
            plot_bottom + (28 if small else 32),
            x_label,
            anchor="middle",
            size=10 if small else 12,
        )
    )
    ymid = (top + plot_bottom) / 2
    body.append(
        _text(12 if small else 14, ymid, y_label, anchor="middle", size=10 if small else 12, rotate=-90)
    )
    for i, ln in enumerate(lines):
        color = ln.color or PALETTE[i % len(PALETTE)]
        segments: list[list[tuple[float, float]]] = [[]]
        for x, y in ln.points:
            if y is None:
                segments.append([])
            else:
                segments[-1].append((sx(x), sy(y)))
        for seg in segments:
            if len(seg) > 1:
                d = " ".join(f"{_f(x)},{_f(y)}" for x, y in seg)
                body.append(
                    f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.6" '
                    'stroke-linejoin="round"/>'
                )
        for k, (x, y) in enumerate(ln.points):
            if y is None:
                continue
            err = ln.errors[k] if ln.errors and k < len(ln.errors) else None
            if err:
                body.append(_line(sx(x), sy(err[0]), sx(x), sy(err[1]), stroke=color, width=1.2))
            if ln.markers:
                body.append(
                    _circle(
                        sx(x),
                        sy(y),
                        2.6 if small else 3.2,
                        fill=color,
                        title=f"{ln.label}: {xfmt(x)}, {fmt_num(y, 4)}",
                    )
                )
    ly0 = plot_bottom + (34 if small else 44)
    for label, color, x, row in legend_items:
        y = ly0 + row * 18
        body.append(_line(x, y - 4, x + 20, y - 4, stroke=color, width=2.5))
        body.append(_text(x + 26, y, truncate(label, 40), size=11, title=label))
    return _svg(width, height, title, body)


# --- grouped (vertical) boxplots ---------------------------------------------------------------------------------


def grouped_boxplot(
    groups: Sequence[tuple[str, Sequence[Box | None]]],
    *,
    series: Sequence[str],
    title: str,
    unit: str,
    x_label: str = "",
    log: bool | None = None,
    width: int = 800,
    height: int = 340,
    seed: int = 0,
) -> str:
    """Vertical boxplots: one category per group on the x axis (a load, a condition), one box per series in
    each group (an isolation mode), colored by series with a legend; with a single series each group gets its
    own color. A None slot is a combination without data. Every run is a jittered dot, hollow when it did
    not count; box = quartiles, thick line = median, whiskers = 1.5 IQR (as `boxplot`)."""
    boxes = [b for _, slots in groups for b in slots if b is not None]
    everything = [v for b in boxes for v in (*b.values, *b.excluded) if v is not None and math.isfinite(v)]
    if log is None:
        log = wants_log(everything)
    if log and any(v <= 0 for v in everything):
        log = False
    kind = "log10" if log else "linear"
    n_series = max(len(series), 1)
    legend = n_series > 1 or bool(series and series[0])
    left, right = 70, 14
    top = 36 + (20 if legend else 0)
    n_groups = max(len(groups), 1)
    slot_w = (width - left - right) / n_groups
    longest = max((_text_width(g, 11) for g, _ in groups), default=0)
    rotate = longest > slot_w - 4
    label_h = min(longest, 150) * 0.6 + 14 if rotate else 18
    plot_bottom = height - label_h - (26 if x_label else 8)
    body = [
        _text(10, 20, truncate(title, int((width - 16) / (14 * 0.62))), size=14, weight="bold", title=title)
    ]
    if legend:
        x = left
        for k, name in enumerate(series):
            body.append(
                _rect(
                    x,
                    29,
                    12,
                    12,
                    fill=PALETTE[k % len(PALETTE)],
                    opacity=0.35,
                    stroke=PALETTE[k % len(PALETTE)],
                )
            )
            body.append(_text(x + 17, 39, name or "–", size=11))
            x += 30 + _text_width(name or "–", 11)
    if not everything:
        body.append(_text(left, top + 30, "no run values to plot", fill=AXIS))
        return _svg(width, height, title, body)
    scale = Scale(*padded_domain(everything, kind), plot_bottom, top, kind)
    body += _value_axis(scale, left, width - right, _tick_formatter(kind), horizontal=False)
    body.append(_line(left, plot_bottom, width - right, plot_bottom))
    body.append(_line(left, top, left, plot_bottom))
    axis_label = f"{unit} (log scale)" if log else unit
    shown = truncate(axis_label, int((plot_bottom - top) / (12 * CHAR_W)))
    body.append(
        _text(14, (top + plot_bottom) / 2, shown, anchor="middle", size=12, rotate=-90, title=axis_label)
    )
    if x_label:
        body.append(_text((left + width - right) / 2, height - 8, x_label, anchor="middle", size=12))
    rng = random.Random(seed)
    box_w = min(44.0, slot_w * 0.8 / n_series)
    for gi, (name, slots) in enumerate(groups):
        x0 = left + slot_w * gi
        if gi:
            body.append(_line(x0, top, x0, plot_bottom, stroke=GRID))
        cx_label = x0 + slot_w / 2
        if rotate:
            shown = truncate(name, 24)
            body.append(
                _text(cx_label + 4, plot_bottom + 14, shown, anchor="end", size=11, rotate=-35, title=name)
            )
        else:
            body.append(_text(cx_label, plot_bottom + 15, name, anchor="middle", size=11))
        for si, b in enumerate(slots):
            if b is None:
                continue
            color = PALETTE[(si if n_series > 1 else gi) % len(PALETTE)]
            cx = x0 + slot_w / 2 + (si - (n_series - 1) / 2) * box_w
            half = box_w * 0.36
            vals = [v for v in b.values if v is not None and math.isfinite(v)]
            if vals:
                lo, q1, med, q3, hi = box_stats(vals)
                body.append(_line(cx, scale(lo), cx, scale(q1), stroke=INK))
                body.append(_line(cx, scale(q3), cx, scale(hi), stroke=INK))
                for w in (lo, hi):
                    body.append(_line(cx - half * 0.6, scale(w), cx + half * 0.6, scale(w), stroke=INK))
                tip = (
                    f"{b.label}: median {fmt_num(med, 4)} {unit}, IQR {fmt_num(q1, 4)}–{fmt_num(q3, 4)}, "
                    f"n={len(vals)}"
                )
                body.append(
                    _rect(
                        cx - half,
                        scale(q3),
                        2 * half,
                        scale(q1) - scale(q3),
                        fill=color,
                        opacity=0.18,
                        stroke=color,
                        width=1.2,
                        title=tip,
                    )
                )
                body.append(_line(cx - half, scale(med), cx + half, scale(med), stroke=INK, width=2.5))
            for v in vals:
                body.append(
                    _circle(cx + rng.uniform(-0.3, 0.3) * box_w, scale(v), 2.3, fill=color, opacity=0.7)
                )
            for v in b.excluded:
                if v is not None and math.isfinite(v):
                    jitter = rng.uniform(-0.3, 0.3) * box_w
                    body.append(
                        _circle(cx + jitter, scale(v), 2.5, fill="white", stroke=color, title="invalid run")
                    )
    return _svg(width, height, title, body)


# --- histograms ----------------------------------------------------------------------------------------------


def bin_factor(n_buckets: int, max_bars: int) -> int:
    """Buckets per drawn bar: 1, 2, 5, 10, 20, 50, ... so that at most `max_bars` bars cover `n_buckets`."""
    k = 0
    while True:
        f = (1, 2, 5)[k % 3] * 10 ** (k // 3)
        if math.ceil(n_buckets / f) <= max_bars:
            return f
        k += 1


LOG_BARS_PER_DECADE = 30


def histogram_bars(
    counts: Sequence[int], n_buckets: int, *, x_log: bool, max_bars: int = 160
) -> list[tuple[int, int, int]]:
    """The non-empty bars of the first `n_buckets` buckets: (first bucket, end bucket, summed count).

    Linear: every bar `bin_factor` buckets wide. Log: one bar per bucket while buckets are wider than
    1/LOG_BARS_PER_DECADE of a decade, then bars of equal width on the log axis (edges at 10^(j/30), rounded
    up to whole buckets)."""
    if x_log:
        edges = {0, n_buckets}
        j = 0
        while (e := math.ceil(10 ** (j / LOG_BARS_PER_DECADE) - 1e-9)) < n_buckets:
            edges.add(e)
            j += 1
        bounds = sorted(edges)
    else:
        f = bin_factor(n_buckets, max_bars)
        bounds = [*range(0, n_buckets, f), n_buckets]
    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        total = sum(counts[a:b])
        if total:
            out.append((a, b, total))
    return out


def histogram_plot(
    counts: Sequence[int],
    bucket_width: float,
    overflow: int,
    *,
    title: str,
    unit: str,
    subtitle: str | None = None,
    x_max: float | None = None,
    x_min: float | None = None,
    x_log: bool | None = None,
    y_max: float | None = None,
    show_overflow: bool | None = None,
    markers: Sequence[tuple[str, float]] = (),
    width: int = 440,
    height: int = 250,
    max_bars: int = 160,
    color: str = PALETTE[0],
    title_size: int = 12,
) -> str:
    """A latency histogram: x = value from 0 to `x_max` (default: the last non-empty bucket), y = samples on a
    log scale, so a single late sample stays visible beside millions of ordinary ones. x is linear with one
    bar per bucket when at most `max_bars` buckets are shown; beyond that (`x_log` None) a log axis keeps the
    bulk of fast samples readable beside a tail decades longer, with bars of equal width on that axis
    (`histogram_bars`); the y label says what a bar holds. The overflow (samples at or beyond the histogram's
    limit) is a last bar of its own, labelled ">= limit": its values are unknown. `markers` are dashed
    vertical lines (label, value), e.g. the p99. Shared `x_min`, `x_max`, `x_log` and `y_max` make panels
    comparable."""
    limit = len(counts) * bucket_width
    last = max((i for i, c in enumerate(counts) if c), default=-1)
    x_hi = x_max if x_max is not None else (last + 1) * bucket_width
    x_hi = max(min(x_hi, limit), bucket_width)
    n_buckets = max(1, math.ceil(x_hi / bucket_width - 1e-9))
    if x_log is None:
        x_log = n_buckets > max_bars
    bars = histogram_bars(counts, n_buckets, x_log=x_log, max_bars=max_bars)
    if show_overflow is None:
        show_overflow = overflow > 0
    top_count = max([c for _, _, c in bars] + ([overflow] if show_overflow else []) + [1])
    small = width < 500
    left, right = (54 if small else 66), 12
    top = 30 + (14 if subtitle else 0)
    plot_bottom = height - 40
    over_w = 46 if show_overflow else 0
    plot_right = width - right - over_w - (8 if show_overflow else 0)
    body = [
        _text(
            8,
            18,
            truncate(title, int((width - 16) / (title_size * 0.62))),
            size=title_size,
            weight="bold",
            title=title,
        )
    ]
    if subtitle:
        body.append(
            _text(8, 33, truncate(subtitle, int((width - 16) / (11 * 0.55))), size=11, title=subtitle)
        )
    x_end = n_buckets * bucket_width
    # a log axis starts a little below `x_min` (the smallest latency to show), bucket 0 ([0, w)) at w/2
    x_lo = max(bucket_width / 2, (x_min or 0) / 1.25)
    sx = Scale(x_lo, x_end, left, plot_right, "log10") if x_log else Scale(0.0, x_end, left, plot_right)

    def at(v: float) -> float:
        return sx(max(v, x_lo)) if x_log else sx(v)

    sy = Scale(0.5, max(y_max or 0, top_count) * 1.6, plot_bottom, top, "log10")
    if x_log:
        xticks = [t for t in log_ticks(x_lo, x_end) if t <= x_end]
        xlabels = tick_labels(xticks, fmt_si)
    else:
        xticks = [t for t in nice_ticks(0.0, x_end, 4 if small else 6) if t >= 0]
        xlabels = tick_labels(xticks, fmt_tick)
    for t, label in zip(xticks, xlabels, strict=True):
        p = at(t)
        body.append(_line(p, top, p, plot_bottom, stroke=GRID))
        body.append(_text(p, plot_bottom + 14, label, anchor="middle", size=10, fill=AXIS))
    yticks = [t for t in log_ticks(1.0, sy.hi) if t >= 1 and float(t).is_integer()]
    for t, label in zip(yticks, tick_labels(yticks, fmt_si), strict=True):
        p = sy(t)
        body.append(_line(left, p, plot_right, p, stroke=GRID))
        body.append(_text(left - 6, p + 4, label, anchor="end", size=10, fill=AXIS))
    body.append(_line(left, plot_bottom, plot_right, plot_bottom))
    body.append(_line(left, top, left, plot_bottom))
    widths = {b - a for a, b, _ in bars}
    if x_log:
        per_bar = "samples per bar"
    elif widths and max(widths) * bucket_width != 1:
        per_bar = f"samples per {fmt_tick(max(widths) * bucket_width)} {unit}"
    else:
        per_bar = "samples"
    body.append(_text(12, (top + plot_bottom) / 2, f"{per_bar} (log)", anchor="middle", size=10, rotate=-90))
    x_label = f"latency [{unit}]" + (" (log scale)" if x_log else "")
    body.append(_text((left + plot_right) / 2, plot_bottom + 30, x_label, anchor="middle", size=11))
    if not bars and not overflow:
        body.append(_text(left + 10, top + 30, "no samples", fill=AXIS))
    for a, b, total in bars:
        lo_v, hi_v = a * bucket_width, b * bucket_width
        x0, x1 = at(lo_v), at(hi_v)
        y = sy(total)
        body.append(
            _rect(
                x0,
                y,
                max(x1 - x0 - (0.4 if x1 - x0 > 2 else 0), 0.8),
                plot_bottom - y,
                fill=color,
                opacity=0.85,
                title=f"[{fmt_tick(lo_v)}, {fmt_tick(hi_v)}) {unit}: {total} samples",
            )
        )
    for k, (label, v) in enumerate(markers):
        if v is None or not 0 <= v <= x_end:
            continue
        p = at(v)
        mark = PALETTE[1 + k % 3]
        body.append(_line(p, top, p, plot_bottom, stroke=mark, width=1.2, dash="4 3"))
        near_end = p > plot_right - _text_width(label, 10) - 4
        body.append(
            _text(
                p - 3 if near_end else p + 3,
                top + 10 + 11 * k,
                label,
                size=10,
                fill=mark,
                anchor="end" if near_end else "start",
            )
        )
    if show_overflow:
        ox = width - right - over_w
        body.append(_line(ox - 4, top, ox - 4, plot_bottom, stroke=AXIS, dash="2 3"))
        text = f">= {fmt_tick(limit)}"
        if overflow:
            y = sy(overflow)
            body.append(
                _rect(
                    ox + 6,
                    y,
                    over_w - 12,
                    plot_bottom - y,
                    fill=PALETTE[1],
                    opacity=0.85,
                    title=f"overflow: {overflow} samples at or beyond {fmt_tick(limit)} {unit} (values unknown)",
                )
            )
            body.append(_text(ox + over_w / 2, y - 4, str(overflow), anchor="middle", size=10, fill=INK))
        else:
            body.append(_text(ox + over_w / 2, plot_bottom - 4, "0", anchor="middle", size=10, fill=AXIS))
        body.append(_text(ox + over_w / 2, plot_bottom + 14, text, anchor="middle", size=10, fill=INK))
    return _svg(width, height, title, body)
