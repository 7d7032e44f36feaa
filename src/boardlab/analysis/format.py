"""The one home of number formatting for every report format and `boardlab compare`; the percentile levels
they show are stats.histogram's.

Numbers keep 3-4 significant digits; a row is shown in a unit scaled to its median (ns -> µs -> ms -> s,
bytes -> KiB -> MiB), named in the row's unit column.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from fractions import Fraction

from boardlab.governor.store_io import sweep_frequencies
from boardlab.governor.sweep import cell_name
from boardlab.model.facts import ConditionPart
from boardlab.model.units import fmt_duration as fmt_duration

# the levels reports show, defined once beside the percentile method
from boardlab.stats.histogram import PERCENTILE_LEVELS as PERCENTILE_LEVELS

VERDICT_MARKS = {
    "slowdown": "▲",
    "speedup": "▼",
    "no_change": "=",
    "inconclusive": "?",
    "insufficient": "–",
}
CONFOUNDED_MARK = "⚠"
VERDICT_RANK = {"slowdown": 0, "speedup": 1, "inconclusive": 2, "no_change": 3, "insufficient": 4}


def fmt_num(x: float | None, sig: int = 3) -> str:
    """`x` with `sig` significant digits and never an exponent (tables, tick labels, progress): from a
    million on, digits grouped by thousands (12,345,678: a unit the caller did not scale, such as a count);
    below one, as many decimals as the digits need (0.000012). A table picks its column's unit
    (`display_unit`) so that its numbers have 1-3 integer digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6:
        return f"{x:,.0f}"
    if a >= 10 ** (sig - 1):
        return f"{x:.0f}"
    decimals = sig - 1 - math.floor(math.log10(a))
    return f"{x:.{decimals}f}"


# SI prefixes, largest first; `si_scale` picks the one that leaves 1-3 integer digits.
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def si_scale(v: float) -> tuple[float, str]:
    """(factor, prefix) of the SI prefix that shows `v` with 1-3 integer digits (none below 1000)."""
    a = abs(v)
    return next(((f, p) for f, p in _SI if a >= f), (1.0, ""))


def fmt_si(v: float | None, unit: str = "", sig: int = 3) -> str:
    """`sig` significant digits with an SI prefix and the unit: 11.0 Gbit/s, 4.87 MB/s, 456 kbit/s; without
    a unit, a tick label: 1k, 10M. The one SI formatter of reports, tables and plot axes."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    f, p = si_scale(v)
    digits = fmt_num(v / f, sig)
    if "." in digits and "e" not in digits and not unit:  # a tick: 1.5k, not 1.50k
        digits = digits.rstrip("0").rstrip(".")
    return f"{digits} {p}{unit}".rstrip() if unit else f"{digits}{p}"


def fmt_size(n: int) -> str:
    """A binary size as a plan states it: 32 KiB, 4 MiB, 1000 B."""
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


# Units that have larger siblings: (factor to the base unit, label), ascending.
_TIME_NS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))
_BYTES = ((1.0, "B"), (1024.0, "KiB"), (1024.0**2, "MiB"), (1024.0**3, "GiB"))
_UNIT_LADDERS = {
    "ns": (1.0, _TIME_NS),
    "us": (1e3, _TIME_NS),
    "µs": (1e3, _TIME_NS),
    "ms": (1e6, _TIME_NS),
    "s": (1e9, _TIME_NS),
    "b": (1.0, _BYTES),
    "bytes": (1.0, _BYTES),
    "kib": (1024.0, _BYTES),
    "mib": (1024.0**2, _BYTES),
}


# Units shown with an SI prefix (rates and counts per second): 1.101e10 bit/s reads 11.0 Gbit/s. A unit that
# already carries a prefix (MB/s, kHz) is scaled from its base: 4870 kB/s -> 4.87 MB/s.
_SI_UNITS = ("bit/s", "B/s", "Hz", "ops/s", "op/s", "iter/s", "frames/s", "fps", "msg/s", "req/s", "pkt/s",
             "flop/s", "FLOPS", "J", "W", "bytes/s")  # fmt: skip
_PREFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _si_base(unit: str) -> tuple[float, str] | None:
    """(factor to the base unit, base unit) of a unit shown with SI prefixes, else None: the listed units
    and any rate per second (samples/s, paths/s, lookups/s, inserts/s)."""
    if unit in _SI_UNITS or (unit.endswith("/s") and unit[:1].islower() and unit[:1] not in _PREFIX):
        return 1.0, unit
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:] in _SI_UNITS:
        return _PREFIX[unit[0]], unit[1:]
    if unit in ("MFLOPS", "Mflops"):
        return 1e6, "FLOPS"
    return None


def display_unit(unit: str, reference: float | None) -> tuple[float, str]:
    """(divisor, label) that shows `reference` (in `unit`) with 1-3 integer digits where the unit allows."""
    if reference is None or not math.isfinite(reference) or reference == 0:
        return 1.0, unit or ""
    si = _si_base(unit or "")
    if si is not None:
        base_f, base = si
        f, p = si_scale(reference * base_f)
        if p == "" and abs(reference * base_f) < 1 and base_f == 1.0:
            return 1.0, unit
        return f / base_f, f"{p}{base}"
    ladder = _UNIT_LADDERS.get((unit or "").lower())
    if ladder is None:
        return 1.0, unit or ""
    ladder_base, steps = ladder
    in_base = abs(reference) * ladder_base
    factor, label = steps[0]
    for f, lab in steps:
        if in_base >= f:
            factor, label = f, lab
    return factor / ladder_base, label


def common_unit(unit: str, values) -> tuple[float, str]:
    """(divisor, label) of the one unit values shown together are written in (a workload's cells in a table,
    a column): the unit that gives the smallest of them 1-3 integer digits, so no row of the group switches
    unit (1563 µs beside 70 µs, never 1.563 ms); the median's when the largest would then need more than six
    integer digits."""
    vals = sorted(abs(v) for v in values if v is not None and math.isfinite(v) and v != 0)
    if not vals:
        return display_unit(unit, None)
    div, label = display_unit(unit, vals[0])
    if vals[-1] / div >= 1e6:
        div, label = display_unit(unit, vals[len(vals) // 2])
    return div, label


def fmt_in(value: float | None, div: float, sig: int = 4) -> str:
    """`value` in a unit of divisor `div`; a whole number in its own unit (cyclictest's integer µs, a count)
    as an integer: 70, not 70.00."""
    if value is not None and div == 1.0 and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value)}"
    return fmt_num(None if value is None else value / div, sig)


def fmt_scaled(value: float | None, unit: str, sig: int = 4) -> str:
    """One value in the unit that gives it 1-3 integer digits: 14.23 Msamples/s, 4.311 ms, 64 MiB."""
    if value is None:
        return "no value"
    div, label = display_unit(unit, value)
    return f"{fmt_num(value / div, sig)} {unit_label(label)}".rstrip()


def unit_label(unit: str) -> str:
    return "µs" if unit == "us" else unit


# A field name in words (`cpu_pct_one_cpu` -> "CPU [% of one CPU]", `rss_MiB` -> "RSS [MiB]",
# `build_p50_us` -> "build p50 [µs]"): its unit is the end of the name, as for parameters; these words are set
# in capitals.
_NAME_UNITS = (("_bit_s", "bit/s"), ("_mb_s", "MB/s"), ("_b_s", "B/s"), ("_j_s", "J·s"), ("_bytes", "B"),
               ("_kib", "KiB"), ("_mib", "MiB"), ("_mb", "MB"), ("_khz", "kHz"), ("_hz", "Hz"), ("_ns", "ns"),
               ("_us", "µs"), ("_ms", "ms"), ("_s", "s"), ("_pct", "%"), ("_percent", "%"), ("_js2", "J·s²"),
               ("_js", "J·s"), ("_mj", "mJ"), ("_uj", "µJ"), ("_j", "J"), ("_mw", "mW"), ("_w", "W"),
               ("_mc", "m°C"))  # fmt: skip
_CAPITALS = {"cpu": "CPU", "cpus": "CPUs", "rss": "RSS", "pss": "PSS", "udp": "UDP", "tcp": "TCP",
             "ddr": "DDR", "edp": "EDP", "ed2p": "ED²P", "io": "I/O", "tidl": "TIDL", "mflops": "MFLOPS",
             "gflops": "GFLOPS", "iops": "IOPS", "fps": "FPS", "dma": "DMA", "mb": "MB", "ai": "AI",
             "cv": "CV"}  # fmt: skip
FIELD_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[A-Za-z0-9]+)+")


def _words(tokens) -> str:
    return " ".join(_CAPITALS.get(t.lower(), t) for t in tokens if t)


def field_unit(name: str) -> tuple[str, str | None]:
    """(the name without its unit, the unit its end declares or None): ("rss", "MiB") of `rss_MiB`."""
    low = name.lower()
    for suffix, unit in _NAME_UNITS:
        if low.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], unit
    return name, None


def field_words(name: str) -> str:
    """A field name as a reader reads it, its unit in brackets: "RSS [MiB]", "CPU [% of one CPU]",
    "lookups per s"; a name that is no field name (has no underscore) as it is, a one-word one in capitals
    where it is an abbreviation."""
    if not FIELD_NAME.fullmatch(name):
        head, space, rest = name.partition(" ")
        if space and FIELD_NAME.fullmatch(head):  # a field name with words after it: "power_delta_w (median)"
            return f"{field_words(head)} {rest}"
        return _CAPITALS.get(name, name)
    whole = next((u for suffix, u in _NAME_UNITS if name.lower() == suffix[1:]), None)
    if whole is not None:  # a name that is its unit: mb_s
        return whole
    rest, unit = field_unit(name)
    tokens = rest.split("_")
    if unit == "s" and tokens[-1] == "per":  # a rate: lookups_per_s, reader_cpu_ms_per_s
        time_unit = {"ns": "ns", "us": "µs", "ms": "ms"}.get(tokens[-2]) if len(tokens) > 2 else None
        if time_unit:
            return f"{_words(tokens[:-2])} [{time_unit}/s]"
        return f"{_words(tokens)} second"
    if unit == "s" and tokens[-1].endswith("s") and tokens[-1] not in ("ns", "us", "ms"):
        return f"{_words(tokens)} per second"  # a count per second: transactions_s, not a time in seconds
    for mark in ("pct", "percent"):  # a share in the middle of a name: cpu_pct_one_cpu
        if mark in tokens[1:-1] or (unit is None and mark in tokens[1:]):
            at = tokens.index(mark)
            share = _words(tokens[at + 1 :])
            of = "of " if tokens[at + 1 : at + 2] in (["one"], ["all"]) else ""
            return f"{_words(tokens[:at])} [% {of}{share}]".replace(" ]", "]")
    words = _words(tokens)
    return f"{words} [{unit}]" if unit else words


def metric_words(name: str, unit: str = "") -> str:
    """A metric's name in words without its unit (the figure beside it carries the unit); "" for a name that
    only repeats its unit (`mflops` in MFLOPS, `mb_s` in MB/s): the figure says it."""
    squash = name.lower().replace("_", "")
    if unit and squash == unit.lower().replace("/", "").replace(" ", ""):
        return ""
    words, _, unit_part = field_words(name).partition(" [")
    return f"{words} ({unit_part[:-1]})" if unit_part.startswith("% ") else words  # a share says of what


def fmt_p(p: float | None) -> str:
    """A p-value as every report writes it (`stats.text.p_text`: "0.042", "0.0007", "< 0.0001")."""
    from boardlab.stats.text import p_text

    return p_text(p)


def fmt_ratio(r: float | None) -> str:
    return "–" if r is None else fmt_num(r, 4 if 0.1 <= r < 10 else 3)


def fmt_interval(lo: float, hi: float, divisor: float = 1.0, sig: int = 4, whole: bool = False) -> str:
    """`[lo, hi]` in a unit of `divisor`; `whole`: measured values, whole numbers as integers (`fmt_in`)."""
    if whole:
        return f"[{fmt_in(lo, divisor, sig)}, {fmt_in(hi, divisor, sig)}]"
    return f"[{fmt_num(lo / divisor, sig)}, {fmt_num(hi / divisor, sig)}]"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x * 100:.{digits}f}"


def fmt_time(unix_s: float | None) -> str:
    if unix_s is None:
        return "–"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_s))


def fmt_spec(x: float | None, spec: str = ".4g") -> str:
    """`x` in a Python format spec, "-" when missing: the governor study's tables and the simulator's page."""
    return "-" if x is None else format(x, spec)


def fmt_value(x: float | None) -> str:
    """A measured value: whole numbers as they are (cyclictest's integer microseconds), others with 4
    digits."""
    if x is None:
        return "–"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    text = fmt_num(x, 4)
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


# each test a comparison can be decided by: its name in a report, in a table cell, and what its ratio is of
TESTS = {
    "yuen-welch-log": ("Yuen's trimmed t on log runs", "Yuen", "20%-trimmed geometric means of the runs"),
    "trimmed-t-log-paired": (
        "trimmed t on per-block log ratios",
        "paired trimmed t",
        "medians of the blocks' runs (trimmed geometric mean of the block ratios)",
    ),
    "mann-whitney-u": ("Mann-Whitney U rank test", "rank test", "medians of the runs"),
    "wilcoxon-signed-rank": (
        "Wilcoxon signed-rank test on per-block log ratios",
        "signed-rank",
        "medians of the runs",
    ),
    "pooled-quantile-permutation": (
        "pooled p99 over whole runs",
        "pooled p99",
        "pooled p99s of all runs' samples",
    ),
}
P_FROM = {
    "student-t": "from Student's t",
    "permutation": "by permutation",
    "exact": "exact",
    "asymptotic": "by normal approximation",
    "bootstrap": "by bootstrap",
}


def test_words(c, short: bool = False) -> str:
    """The test that decided a comparison and where its p came from ("Yuen's trimmed t on log runs, p by
    permutation over 14,000 splits"), or in `short` form for a table cell ("Yuen, p by permutation")."""
    long, brief, _ = TESTS.get(c.test.name, (c.test.name, c.test.name, ""))
    how = P_FROM.get(c.test.method, c.test.method)
    if short:
        return f"{brief}, p {how}"
    drawn = ""
    if c.test.method == "permutation" and c.permutations:
        drawn = f" over {c.permutations:,} {'sign flips' if c.n_blocks is not None else 'splits'}"
    return f"{long}, p {how}{drawn}"


def estimator_words(c) -> str:
    """What a comparison's ratio is the ratio of (the medians shown beside it are the runs' medians)."""
    return TESTS.get(c.test.name, ("", "", "the arms' estimates"))[2]


def verdict_text(kind: str | None, confounded: bool = False) -> str:
    if kind is None:
        return "no verdict"
    text = f"{VERDICT_MARKS.get(kind, '')} {kind.replace('_', ' ')}".strip()
    return f"{text} {CONFOUNDED_MARK} confounded" if confounded else text


def pct_name(q: float) -> str:
    """99.9 -> 'p99.9': a level as reports print it."""
    return f"p{q:g}"


def samples_needed(q: float) -> int:
    """The sample count from which the nearest-rank q-th percentile is no longer the largest sample."""
    rest = 100 - Fraction(repr(float(q)))
    return -(-100 // rest) if rest > 0 else 1  # ceil(100 / rest)


# A parameter's unit is the end of its name (docs/architecture.md: units in names): size_bytes, link_bit_s,
# msg_rate_hz, freq_khz, duration_s. Longest first: "_bit_s" before "_s", "_khz" before "_hz".
_PARAM_UNITS = (("_bit_s", "bit/s"), ("_bytes", "B"), ("_khz", "kHz"), ("_hz", "Hz"), ("_ms", "ms"),
                ("_us", "µs"), ("_ns", "ns"), ("_s", "s"), ("_percent", "%"), ("_pct", "%"))  # fmt: skip


def _plain(x: float) -> str:
    """A set value as written, without a float's ".0" or an exponent: 12, 0.5, 1500."""
    return fmt_value(x).replace(",", "")


def _quantity(v: float, unit: str) -> str:
    """A parameter's value in its unit: binary sizes as a plan states them, rates and frequencies with an SI
    prefix (digits kept that the value has: 1.5 Gbit/s, 1.4 GHz), times and percents as set."""
    if unit == "B":
        return fmt_size(int(v)) if float(v).is_integer() and v >= 0 else f"{_plain(v)} B"
    if unit in ("bit/s", "Hz", "kHz"):
        hz = v * 1e3 if unit == "kHz" else v
        f, p = si_scale(hz)
        base = "Hz" if unit == "kHz" else unit
        return f"{_plain(round(hz / f, 6))} {p}{base}"
    return f"{_plain(v)}%" if unit == "%" else f"{_plain(v)} {unit}"


def param_text(name: str, value) -> str:
    """One parameter as a reader reads it: a quantity as its name's words and its value in the unit the name
    declares ("size 4 KiB", "link 1 Gbit/s", "duration 12 s"); any other as `name=value`, a whole number
    without ".0"."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    for suffix, unit in _PARAM_UNITS:
        if number and name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} {_quantity(value, unit)}"
    return f"{name}={_plain(value) if number else value}"


def params_text(params: dict) -> str:
    """The parameters that are set, each as `param_text` writes it: a parameter a cell does not use (None)
    is left out."""
    return ", ".join(param_text(k, v) for k, v in params.items() if v is not None)


# a condition's name as a reader reads it: `CampaignAnalysis.condition_text`, handed to what renders names
Said = Callable[[str], str]


def condition_text(name: str, parts: Sequence[ConditionPart]) -> str:
    """A condition as a reader reads it: a governor sweep's cell, named by the sweep from the frequencies its
    parts fix (`governor.sweep.cell_name`), as those frequencies in their unit ("policy0 1.4 GHz + policy4
    200 MHz"); any other condition by its name, as the plan gave it. Read from the parts the plan declared
    (a cell's `facts.condition`), not out of the name."""
    swept = sweep_frequencies(parts)
    if swept is None or name != cell_name(*swept):
        return name
    this, khz, other, other_khz = swept
    text = f"{this} {_quantity(khz, 'kHz')}"
    return text if other is None or other_khz is None else f"{text} + {other} {_quantity(other_khz, 'kHz')}"


def param_sort_key(value) -> tuple:
    """Sorts a parameter's values as numbers where they are numbers (4 KiB before 16 KiB before 1 MiB), the
    rest after them as text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(?: ?(Ki|Mi|Gi|Ti|k|K|M|G|T)(?=[A-Za-z]))?")
_LABEL_PREFIX = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4, **_PREFIX}


def label_sort_key(label: str) -> tuple:
    """Sorts labels as a reader counts: the numbers in them as quantities with their prefix ("policy4 200
    MHz" before "policy4 1.1 GHz", "64 KiB" before "1 MiB", "cpu2" before "cpu10"), the rest as text."""
    key: list[tuple[int, float, str]] = []
    end = 0
    for m in _QUANTITY.finditer(label):
        key.append((0, 0.0, label[end : m.start()]))
        key.append((1, float(m.group(1)) * _LABEL_PREFIX.get(m.group(2) or "", 1.0), ""))
        end = m.end()
    key.append((0, 0.0, label[end:]))
    return tuple(key)


def cell_label(workload: str, params: dict, varying=None) -> str:
    """A cell's label: the workload and its parameters, never one that is unset (None); with `varying`, only
    those that vary where the label is shown (a table, a figure), so a label tells its rows apart and no
    more."""
    shown = params if varying is None else {k: params.get(k) for k in varying if k in params}
    text = params_text(shown)
    return f"{workload} ({text})" if text else workload


def first_seen(items) -> list:
    out: list = []
    for it in items:
        if it not in out:
            out.append(it)
    return out


def varying_keys(param_sets) -> list[str]:
    """Parameter names whose values differ between the given parameter dicts, in first-seen order."""
    sets = list(param_sets)
    keys = first_seen(k for p in sets for k in p)
    return [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in sets}) > 1]


def short_label(workload: str, params: dict, varying) -> str:
    """A cell's label within a section: the workload and only the parameters that vary in that section."""
    return cell_label(workload, params, varying)


def section_labels(items) -> list[str]:
    """Labels of (workload, params) items within one table: each workload with only the parameters that vary
    among that workload's items, so a long label shows what tells its rows apart."""
    items = list(items)
    by_workload: dict[str, list[dict]] = {}
    for workload, params in items:
        by_workload.setdefault(workload, []).append(params)
    varying = {w: varying_keys(ps) for w, ps in by_workload.items()}
    return [short_label(w, p, varying[w]) for w, p in items]
