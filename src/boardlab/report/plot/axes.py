"""Shared pieces of every plot: palette, number and tick formatting, scales and SVG building blocks.

Standard library only, so that a report can be made on the board itself. Each plot returns one `<svg>`
element as a string, with width/height in px and a viewBox (it scales down with CSS), every text escaped, and
colors that survive printing in gray (Okabe-Ito qualitative palette, ColorBrewer RdBu for the diverging
scale). Output is deterministic: jitter comes from a seeded generator.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

# fmt_si: the one SI formatter of reports; without a unit it makes the tick labels of a log axis
# (1, 10, 100, 1k, 10k, 1M, 1G, and 0.1, 0.01 below 1)
from boardlab.analysis.format import CONFOUNDED_MARK, VERDICT_MARKS, fmt_num, fmt_si
from boardlab.report.escape import visible

__all__ = ["CONFOUNDED_MARK", "VERDICT_MARKS", "fmt_num", "fmt_si"]

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# Okabe & Ito (2008): distinguishable with color-vision deficiencies and in gray print; yellow left out.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")
INK = "#222222"
GRID = "#e3e3e3"
AXIS = "#666666"
CHAR_W = 0.62  # average glyph width as a fraction of the font size, to size label margins
# the line pitch of a 12 px label that wraps: DejaVu's ascent and descent are 1.16 em, so 14 px lines never
# touch (at 13 px a wrapped label's two lines overlapped by a pixel in the browser)
LABEL_LINE_H = 14


# --- numbers -----------------------------------------------------------------------------------------------


def fmt_tick(x: float, sig: int = 3) -> str:
    """A tick label: like fmt_num, without trailing zeros (1.4, not 1.40)."""
    text = fmt_num(x, sig)
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return text


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
            labels = [fmt(t, sig=sig) for t in ticks]
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
        t = v if self.kind == "linear" else self._t(v)  # the same arithmetic, without a call per point
        return self.px0 + (t - self._a) / (self._b - self._a) * (self.px1 - self.px0)

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


# --- SVG building blocks ------------------------------------------------------------------------------------


def esc(s: object) -> str:
    return html.escape(visible(s), quote=True)  # as report.render.esc: a label is a stored name


def _f(v: float) -> str:
    # one decimal, ".0" dropped (rstrip("0").rstrip(".") of the one digit, in a third less time: every
    # coordinate of every plot passes here)
    if not math.isfinite(v):
        return "0"
    s = f"{v:.1f}"
    return s[:-2] if s[-1] == "0" else s


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


def wrap(s: str, max_chars: int) -> list[str]:
    """`s` in lines of at most `max_chars` (broken after ", " or a space, a long word on its own line): a
    label is wrapped, never cut."""
    max_chars = max(max_chars, 8)
    lines: list[str] = []
    line = ""
    for word in s.replace(" ", " \0").split("\0"):
        if line and len(line) + len(word.rstrip()) > max_chars:
            lines.append(line.rstrip())
            line = ""
        while len(word.rstrip()) > max_chars:  # a word longer than a line: split it where it must
            lines.append(word[:max_chars])
            word = word[max_chars:]
        line += word
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def text_lines(x: float, y: float, lines: Sequence[str], line_h: float, **kw) -> list[str]:
    """Lines of text, the first at y (each a <text>, so every renderer shows them the same)."""
    return [_text(x, y + i * line_h, ln, **kw) for i, ln in enumerate(lines)]


def title_block(title: str, width: int, size: int, x: float = 10, y: float = 20) -> tuple[list[str], float]:
    """A plot's title wrapped to its width: (the elements, the extra height its further lines take)."""
    lines = wrap(title, int((width - 16) / (size * 0.62)))
    return text_lines(x, y, lines, size + 3, size=size, weight="bold"), (len(lines) - 1) * (size + 3)


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
