"""Property-based fuzzing (hypothesis) of what reads hostile input: the plan parser, the worker reader, the
store's readers over a damaged database, every renderer over hostile strings, and `boardlab serve`'s routes
over hostile requests. Each may only raise its
declared error. `make test` runs a few thousand examples in all (derandomized, so a run is repeatable);
`make fuzz` runs BOARDLAB_FUZZ_EXAMPLES (default 100,000) per target with fresh random seeds. Both print
the number of examples per target; a failure prints the input it failed on and the `@reproduce_failure`
line that replays it. Each target's docstring says what it explores; its input is built from one drawn
seed (see `Gen`), which keeps hypothesis's own cost per example far below the code's under test."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import sqlite3
import struct
import tempfile
import time
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis not installed (the test extra)")
from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from boardlab.analysis import document as doc  # noqa: E402
from boardlab.errors import BoardlabError, InputError  # noqa: E402
from boardlab.model.worker_result import MAX_MAGNITUDE, WorkerResultError, read_worker_result  # noqa: E402

from helpers import make_campaign_db  # noqa: E402

FUZZ = os.environ.get("BOARDLAB_FUZZ") == "1"
FUZZ_EXAMPLES = int(os.environ.get("BOARDLAB_FUZZ_EXAMPLES", "100000"))
COUNTS: dict[str, int] = {}
STARTED: dict[str, float] = {}  # target -> when its first example ran (time.monotonic)
LATEST: dict[str, float] = {}  # target -> when its latest example ran


def budget(suite_examples: int):
    """The suite's examples per target, or make fuzz's; no example database is written anywhere."""
    return settings(
        max_examples=FUZZ_EXAMPLES if FUZZ else suite_examples,
        deadline=None,
        database=None,
        derandomize=not FUZZ,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


PROGRESS_EVERY = int(os.environ.get("BOARDLAB_FUZZ_PROGRESS", "5000"))  # make fuzz: how far each target is
_SAY: list = []  # the session's terminal writer, set by report_counts


def say(line: str) -> None:
    """A line on the terminal now, even under pytest's output capture."""
    if _SAY:
        reporter, capture = _SAY
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(line)
    else:
        print(line)


def _rate(target: str) -> str:
    n, took_s = COUNTS[target], LATEST[target] - STARTED[target]
    return f"{n} examples in {took_s:.0f} s ({n / max(took_s, 1e-9):.1f}/s)"


def count(target: str) -> None:
    LATEST[target] = time.monotonic()
    STARTED.setdefault(target, LATEST[target])
    COUNTS[target] = COUNTS.get(target, 0) + 1
    if FUZZ and COUNTS[target] % PROGRESS_EVERY == 0:
        say(f"fuzz: {target}: {_rate(target)} so far")


@pytest.fixture(scope="module", autouse=True)
def report_counts(request):
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        _SAY[:] = [reporter, capture]
    failed_before = request.session.testsfailed  # the suite's failures so far are other files'
    yield
    failed = request.session.testsfailed > failed_before
    outcome = "a failure among the targets: see above" if failed else "0 undeclared exceptions"
    for target in sorted(COUNTS):
        say(f"fuzz: {target}: {_rate(target)}, {outcome}")
    _SAY.clear()


# ---- the inputs ----
#
# Each example is one seed that hypothesis draws (derandomized in `make test`, fresh in `make fuzz`); the
# input is built from it by `Gen`, which spans the space hypothesis strategies would (the same characters,
# bounds, special floats, sizes and nesting) at a fraction of the cost: drawn by strategies, an input of
# 100-600 choices cost hypothesis's engine 5-15 ms, which held `make fuzz` to tens of examples a second.
# What is lost is shrinking to a minimal input; a failure instead prints the whole input it ran on (a note
# on the exception) and the `@reproduce_failure` line that replays its seed.

SPECIALS = list("<>&\"'`|\\[]()*_#!-=+@\n\r\t\x1b\x00\u202e\u200b\u2028") + ["](", "<script>"]
FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1.5, 2.0**53, 2.0**63, 2.0**64, 1e16, 1e-300, 5e-324,
               2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308)  # fmt: skip
WORKER_KEYS = ("schema", "tool", "workload", "params", "ok", "supported", "reason", "errors", "metrics",
               "iterations_ns", "warmup", "histograms", "counters", "kernel")  # fmt: skip
METRIC_KEYS = ("unit", "higher_is_better", "values", "median", "min", "p90", "p99", "counts", "bucket_width",
               "overflow", "total", "iterations", "capped", "count", "unsupported")  # fmt: skip
SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
# what the readers look up inside the store's JSON columns (store/verify.py JSON_MEMBERS and the readers'
# own checks), and words their values are compared with
READER_KEYS = ("kernel", "release", "version", "cmdline", "preempt_model", "cpufreq_policies", "max_khz",
               "governor", "name", "compatible", "online_cpus", "clusters", "caches", "level", "type",
               "size_kib", "virtualization", "virtualized", "hypervisor", "model", "machine", "checks",
               "status", "simulated", "note", "soc", "capabilities", "supported", "reason",
               "skipped_workloads", "skipped_conditions", "skipped_cells", "energy", "kern_build", "compiler",
               "flags", "interval_s", "cost_pct_of_core", "reruns", "power_sensors", "powercap", "hostname",
               "threads", "link_bit_s", "kind", "scope", "unit", "label", "resolution", "resolution_unit",
               "update_interval_s", "measured")  # fmt: skip
READER_WORDS = ("Data", "Unified", "OK", "WARN", "FAIL", "performance", "")


class Gen(random.Random):
    """Hostile values from one seed, each kind spanning what the named hypothesis strategy would."""

    def char(self) -> str:
        """st.characters(): any code point but a surrogate, ASCII and the BMP drawn more often."""
        k = self.random()
        c = (
            self.randrange(0x80)
            if k < 0.4
            else self.randrange(0x10000)
            if k < 0.7
            else self.randrange(0x110000)
        )
        return chr(c if not 0xD800 <= c < 0xE000 else self.randrange(0xE000, 0x110000))

    def text(self, max_size: int, min_size: int = 0) -> str:
        return "".join(self.char() for _ in range(self.randint(min_size, max_size)))

    def hostile(self) -> str:
        """Up to 12 pieces, each a markup or control character (or `](`, `<script>`) or any character."""
        return "".join(
            self.choice(SPECIALS) if self.random() < 0.5 else self.char() for _ in range(self.randint(0, 12))
        )

    def integer(self, lo: int, hi: int) -> int:
        """st.integers(lo, hi): the bounds and their neighbours, small numbers, any bit width, any value."""
        k = self.random()
        if k < 0.2:
            v = self.choice((lo, hi, lo + 1, hi - 1, 0, 1, -1))
        elif k < 0.5:
            v = self.randint(-300, 300)
        elif k < 0.8:
            v = self.getrandbits(self.randint(1, max(hi.bit_length(), (-lo).bit_length()))) * self.choice(
                (1, -1)
            )
        else:
            v = self.randint(lo, hi)
        return min(max(v, lo), hi)

    def real(self, nan: bool = True) -> float:
        """st.floats(allow_nan=nan): edge values, infinities, NaN, ordinary numbers and any bit pattern."""
        k = self.random()
        if k < 0.3:
            v = self.choice(FLOAT_EDGES) * self.choice((1, -1))
        elif k < 0.4:
            v = self.choice((math.inf, -math.inf, math.nan))
        elif k < 0.7:
            v = self.uniform(-1e3, 1e3) if self.random() < 0.5 else float(self.randint(-1000, 1000))
        else:
            v = struct.unpack("<d", self.getrandbits(64).to_bytes(8, "little"))[0]
        return v if nan or not math.isnan(v) else self.choice((math.inf, -math.inf))

    def tree(self, leaf, key, max_len: int, max_leaves: int = 8):
        """st.recursive(leaf, lists and dictionaries of up to max_len items, max_leaves=8)."""
        left = [self.randint(1, max_leaves)]

        def go(depth: int):
            if left[0] <= 1 or depth > 8 or self.random() < 0.4:
                left[0] -= 1
                return leaf()
            n = self.randint(0, max_len)
            if self.random() < 0.5:
                return [go(depth + 1) for _ in range(n) if left[0] > 0]
            return {key(): go(depth + 1) for _ in range(n) if left[0] > 0}

        return go(0)

    def json_leaf(self):
        k = self.randrange(5)
        if k == 0:
            return None
        if k == 1:
            return self.random() < 0.5
        if k == 2:
            return self.integer(-(2**70), 2**70)
        return self.real() if k == 3 else self.text(20)

    def json_value(self):
        return self.tree(self.json_leaf, lambda: self.text(12), 5)

    def shaped_json(self):
        """A JSON object of the keys the store's readers look up inside a JSON column (READER_KEYS), nested
        as they nest, with any leaf (or a word such as "Data") at each: random keys would seldom be one."""

        def leaf():
            return self.choice(READER_WORDS) if self.random() < 0.3 else self.json_leaf()

        return {self.choice(READER_KEYS): self.tree(leaf, lambda: self.choice(READER_KEYS), 3)
                for _ in range(self.randint(1, 4))}  # fmt: skip

    def metric_like(self) -> dict:
        """Any subset of a metric's keys, each with any JSON leaf (a list of up to 3 for the lists)."""
        keys = self.sample(METRIC_KEYS, self.randint(0, len(METRIC_KEYS)))
        lists = ("values", "counts")
        return {
            k: [self.json_leaf() for _ in range(self.randint(0, 3))] if k in lists else self.json_leaf()
            for k in keys
        }

    def worker_doc(self) -> dict:
        """Up to 8 of the worker result's keys, each with a plausible constant, any JSON value, a metric
        or a table of up to 2 metrics."""
        out = {}
        for key in self.sample(WORKER_KEYS, self.randint(0, 8)):
            k = self.randrange(4)
            if k == 0:
                out[key] = self.choice([1, 2, True, None, "noop"])
            elif k == 1:
                out[key] = self.json_value()
            elif k == 2:
                out[key] = self.metric_like()
            else:
                out[key] = {self.text(8): self.metric_like() for _ in range(self.randint(0, 2))}
        return out


# ---- the worker reader ----


@contextlib.contextmanager
def shown(what: str, value):
    """A failure names the input it ran on (hypothesis prints the exception's notes)."""
    try:
        yield
    except BaseException as exc:
        exc.add_note(f"the {what}: {value!r}")
        raise


@pytest.mark.slow
@budget(1500)
@given(seed=SEEDS)
def test_fuzz_worker_reader_raises_only_its_error(seed):
    """A worker's JSON result: up to 8 of its keys with constants, any JSON (nested, NaN, 2**70, any
    character), metrics with any subset of their fields, then serialized as it is, cut in half, with
    every bracket repeated 50 times (past the depth limit) or with a number made 10**400 times larger.
    What is read fits the store's 64-bit integers and keeps every statistic finite."""
    count("worker reader")
    gen = Gen(seed)
    text = json.dumps(gen.worker_doc(), allow_nan=True)
    mangle = gen.choice(["json", "cut", "deep", "huge"])
    if mangle == "cut":
        text = text[: len(text) // 2]
    elif mangle == "deep":
        text = text.replace("[", "[" * 50).replace("]", "]" * 50)
    elif mangle == "huge":
        text = re.sub(r"(?<![\w.\-])(\d+)(?![\w.])", lambda m: m.group(1) + "0" * 400, text, count=1)
    with shown("worker result", text):
        try:
            result = read_worker_result(text)
        except WorkerResultError:
            return
        json.dumps(dict(result.document))  # what the runner stores serializes again
        counts = [*result.iterations_ns, result.warmup_iterations or 0, result.wall_ns or 0]
        assert all(isinstance(v, int) and 0 <= v < 2**63 for v in counts)
        for m in result.metrics:
            assert all(abs(v) <= MAX_MAGNITUDE for v in (*m.values, m.median or 0, m.min or 0))
        result.series  # noqa: B018 - read as a study reads it: no exception


# ---- the plan parser ----


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v).replace("inf", "inf").replace("nan", "nan")
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string is a JSON string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"


def toml_leaf(gen: Gen):
    """A boolean, a 64-bit integer, a float (infinities, no NaN: TOML writes none), text or a word a plan
    uses."""
    k = gen.randrange(5)
    if k == 0:
        return gen.random() < 0.5
    if k == 1:
        return gen.integer(-(2**63), 2**63 - 1)
    if k == 2:
        return gen.real(nan=False)
    if k == 3:
        return gen.text(12)
    return gen.choice(["auto", "none", "16M", "interleave", "skip", "baseline", "noop", "cpu", "all"])


def toml_value(gen: Gen):
    """Leaves, arrays and inline tables of up to 3 items, 8 leaves in all."""
    return gen.tree(lambda: toml_leaf(gen), lambda: gen.text(8, min_size=1), 3)


RUN_KEYS = ["repetitions", "iterations", "cpu", "order", "timeout_s", "max_reruns", "warmup_max_ms",
            "warmup_max_iterations", "warmup_cv", "precision", "cap", "pilot", "unsupported",
            "counters"]  # fmt: skip
KINDS = ["baseline", "stressor", "command", "ddgzip", "burstynet", "governor", "isolation", "workload",
         "governor-daemon", "netns", "dvfs", "devfreq-bus", "bogus"]  # fmt: skip
WORKLOADS = ["noop", "scimark.sor", "mem.latency", "compress.zstd", "rt.cyclictest", "bogus"]


def plan_text(gen: Gen) -> str:
    """A plan: a name and maybe a seed of any TOML value, up to 5 [runs] settings of any value, up to 2
    workloads (a known or unknown name, maybe params) and 2 conditions (any name, a known or unknown kind,
    maybe params); in one plan of two, a byte-level mutation as well: a span cut, moved or doubled."""

    def params() -> str:
        return f"params = {_toml_value({gen.text(8): toml_value(gen) for _ in range(gen.randint(0, 3))})}"

    name = gen.text(10) if gen.random() < 0.5 else toml_leaf(gen)
    lines = [f"name = {_toml_value(name)}"]
    if gen.random() < 0.5:
        lines.append(f"seed = {_toml_value(toml_leaf(gen))}")
    lines.append("[runs]")
    for key in gen.sample(RUN_KEYS, gen.randint(0, 5)):
        lines.append(f"{key} = {_toml_value(toml_value(gen))}")
    for _ in range(gen.randint(0, 2)):
        lines += ["[[workloads]]", f"name = {_toml_value(gen.choice(WORKLOADS))}"]
        if gen.random() < 0.5:
            lines.append(params())
    for _ in range(gen.randint(0, 2)):
        lines += [
            "[[conditions]]",
            f"name = {_toml_value(gen.text(8))}",
            f"kind = {_toml_value(gen.choice(KINDS))}",
        ]
        if gen.random() < 0.5:
            lines.append(params())
    text = "\n".join(lines) + "\n"
    if gen.random() < 0.5:
        i, j = sorted((gen.randint(0, len(text)), gen.randint(0, len(text))))
        text = gen.choice([text[:i] + text[j:], text[:j] + text[i:], text[:i] + text[i:j] * 2 + text[j:]])
    return text


@pytest.fixture(scope="module")
def catalog():
    from boardlab.workloads import all_workloads

    return {w.name: w for w in all_workloads()}


@budget(400)
@given(seed=SEEDS)
def test_fuzz_plan_parser_raises_only_input_errors(catalog, seed):
    """A TOML plan as plan_text builds it; only a BoardlabError (InputError, PlanUnsupported) may come out."""
    from boardlab.campaign.plan import parse_plan

    count("plan parser")
    text = plan_text(Gen(seed))
    with shown("plan", text):
        try:
            parse_plan(text, "fuzz.toml", catalog)
        except BoardlabError:  # InputError naming the place, or PlanUnsupported
            pass


# ---- the store's readers over a damaged database ----


# tables without a rowid, and the primary key a damaged row is found by
NO_ROWID = {"run_values": ("run_id", "metric", "iteration"), "run_series": ("run_id", "source")}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The board's database as bytes, its damageable columns and row ids. Each example damages a copy in
    memory (sqlite3's deserialize) and writes it to a fresh file the readers then open as `report` does:
    building or copying a database through SQLite's journal per example cost 20x the readers' own time."""
    path = make_campaign_db(tmp_path_factory.mktemp("fuzz store") / "board.db", board="fuzz", n=3)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
            " VALUES (1, 'latency', 1.0, 'us', '[3, 4]', 0, 7)"
        )
        # the campaign's own inventory (history's and serve's), the energy rows and a summary-less monitor
        # row, so that each of those columns is there to damage
        conn.execute("UPDATE campaigns SET inventory_json = (SELECT inventory_json FROM boards)")
        conn.execute(
            "INSERT INTO energy_sources(campaign_id, name, spec_json, supported, reason, is_primary)"
            " VALUES (1, 'rapl', '{}', 1, NULL, 1)"
        )
        conn.execute(
            "INSERT INTO run_energy(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w,"
            " power_peak_w, quantization_j, samples, update_interval_s, warnings_json)"
            " VALUES (1, 'rapl', 'counter', 0, 10, 1.0, 1.0, 1.0, 0.1, 2, 0.1, '[]')"
        )
        conn.execute(
            "INSERT INTO energy_idle(campaign_id, source, block, started_unix_s, duration_s, energy_j, "
            "power_w, quantization_j, samples, gate_detail) VALUES (1, 'rapl', 1, 1.7e9, 1.0, 1.0, 1.0, "
            "0.1, 2, 'idle')"
        )
        cols = {
            t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})") if not r[5] or t in NO_ROWID]
            for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name <> 'meta'")
        }
        # run_values and run_series have no rowid (WITHOUT ROWID): their rows are found by their primary key
        keys = {
            t: [(r[0],) for r in conn.execute(f"SELECT rowid FROM {t}")] for t in cols if t not in NO_ROWID
        }
        for t, pk in NO_ROWID.items():
            keys[t] = [tuple(r) for r in conn.execute(f"SELECT {', '.join(pk)} FROM {t}")]
    conn.close()
    image = bytearray(path.read_bytes())
    # A board's database is in WAL mode (header bytes 18-19 are 2), which SQLite cannot deserialize: the
    # copy in memory is marked as a rollback-journal file, and each damaged file is marked WAL again.
    versions = bytes(image[18:20])
    image[18:20] = b"\x01\x01"
    tables = {t: c for t, c in cols.items() if keys.get(t)}
    return Pristine((bytes(image), versions, tables, keys))


class Pristine(tuple):
    """(image, versions, tables, keys): a failure's report shows this, not the megabyte of the image."""

    def __repr__(self) -> str:
        return f"<the board's database, {len(self[0])} bytes, {len(self[2])} tables>"


def damaged_copy(image: bytes, versions: bytes, sql: str, args: tuple, dest) -> None:
    """Writes `image` with `sql` applied to `dest`, a new file (no -wal or -shm of an earlier one beside
    it). Raises sqlite3.IntegrityError when SQLite refuses that damage itself."""
    mem = sqlite3.connect(":memory:")
    try:
        mem.deserialize(image)
        mem.execute(sql, args)
        mem.commit()
        data = bytearray(mem.serialize())
    finally:
        mem.close()
    data[18:20] = versions
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{dest}{suffix}")
    with open(dest, "xb") as f:  # a new file: rewriting one in place makes ext4 flush it at each close
        f.write(data)


def store_value(gen: Gen):
    """What lands in the damaged cell: a 64-bit integer, any float, a hostile string, up to 8 bytes, or
    any JSON value serialized (NaN and 2**70 included), half of them objects of the keys readers look up."""
    k = gen.randrange(5)
    if k == 0:
        return gen.integer(-(2**63), 2**63 - 1)
    if k == 1:
        return gen.real()
    if k == 2:
        return gen.hostile()
    if k == 3:
        return gen.randbytes(gen.randint(0, 8))
    value = gen.shaped_json() if gen.random() < 0.5 else gen.json_value()
    return json.dumps(value, allow_nan=True)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """Where each damaged copy is written: memory (/dev/shm) where there is one, as a disk's write-back of
    one file per example made the target wait on I/O four times as long as it computed."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        with tempfile.TemporaryDirectory(prefix="boardlab-fuzz-", dir=shm) as where:
            yield Path(where)
    else:
        yield tmp_path_factory.mktemp("fuzz damaged")


@pytest.mark.slow
@budget(30)
@given(seed=SEEDS)
def test_fuzz_store_readers_over_a_damaged_database(pristine, scratch, seed):
    """A board's database with one cell of any table (run_values and run_series by their primary key)
    set to a store_value; opening it, analyzing its latest campaign and rendering the Markdown and text
    reports as `boardlab report` does, its monitor series, what history reads of each campaign (the
    environment facts) and serve's boards page may raise only an input error (exit 2)."""
    from boardlab.analysis import analyze, latest_campaign_id
    from boardlab.analysis.history import environment_facts, load_history
    from boardlab.analysis.monitor import monitor_series
    from boardlab.report.markdown import render_markdown
    from boardlab.report.terminal import render_text
    from boardlab.store import Store
    from boardlab.web.pages import boards

    image, versions, cols, keys = pristine
    db = scratch / "fuzz-damaged.db"
    gen = Gen(seed)
    table = gen.choice(sorted(cols))
    column = gen.choice(cols[table])
    key = gen.choice(keys[table])
    value = store_value(gen)
    where = " AND ".join(f"{c}=?" for c in NO_ROWID[table]) if table in NO_ROWID else "rowid=?"
    try:
        damaged_copy(image, versions, f'UPDATE {table} SET "{column}"=? WHERE {where}', (value, *key), db)
    except sqlite3.IntegrityError:  # NOT NULL, UNIQUE: SQLite itself refuses that damage
        reject()
    count("store reader (damaged database)")
    with shown("damage", (table, column, key, value)):
        try:  # what `boardlab report` does with the file
            with Store.open(db, create=False) as store:
                cid = latest_campaign_id(store)
                analysis = analyze(store, cid)
                monitor_series(store, cid)
                # the rows as history reads them (load_history adds each campaign's commit identity)
                for rows in load_history(store, analysis.name, None, last=10):
                    for row in rows:
                        environment_facts(row)
                boards(store)
            render_markdown(analysis)
            render_text(analysis)
        except BoardlabError as exc:
            assert exc.exit_code == 2 or isinstance(exc, InputError), exc


# ---- every renderer over hostile strings ----

HTML_TAGS = {"h1", "h2", "h3", "h4", "p", "table", "thead", "tbody", "tr", "td", "th", "ul", "li", "pre",
             "details", "summary", "div", "span", "strong", "b", "em", "code", "small", "section", "a", "svg",
             "g", "rect", "line", "text", "path", "circle", "polyline", "title", "dl", "dt", "dd", "br",
             "caption", "figure", "figcaption", "tspan", "polygon", "defs", "style"}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.handlers += [k for k, _ in attrs if k.lower().startswith("on")]


def document(gen: Gen) -> doc.Document:
    """A section of every block kind (prose, items, facts, preformatted text, a table of 1-4 columns and
    up to 3 rows) and, in one document of ten, a box-plot figure (drawing SVG is the slow part), every
    string in it hostile."""
    h = gen.hostile

    def maybe():
        return None if gen.random() < 0.5 else h()

    n = gen.randint(1, 4)
    columns = tuple(doc.Column(h(), maybe(), gen.random() < 0.5) for _ in range(n))
    rows = tuple(tuple(h() for _ in range(n)) for _ in range(gen.randint(0, 3)))
    blocks = [
        doc.Prose(h(), strong=gen.random() < 0.5, bold=tuple(h() for _ in range(gen.randint(0, 2)))),
        doc.Items(tuple(h() for _ in range(gen.randint(0, 3)))),
        doc.Facts(tuple((h(), h()) for _ in range(gen.randint(0, 3)))),
        doc.Preformatted(h(), summary=maybe()),
        doc.Table(columns, rows, title=maybe()),
    ]
    if gen.randrange(10) == 0:
        boxes = [doc.Box(h(), [1.0, 2.0, 3.0], note=h()) for _ in range(2)]
        blocks.append(doc.Figure(doc.BoxplotSpec(boxes=boxes, title=h(), unit=h())))
    return doc.Document(h(), (doc.Section(h(), tuple(blocks), anchor=h()),))


# a tag, comment or autolink that starts: a "<" not taken by a backslash escape (after an even run of
# backslashes, each pair one literal backslash)
_TAG_START = re.compile(r"(?<!\\)(?:\\\\)*<[A-Za-z/!?]")


def _outside_fences(md: str) -> str:
    """The Markdown outside fenced code blocks (where `<` is literal text); a line inside a block that
    could close it fails the test."""
    out, fence = [], None
    for line in md.splitlines():
        if fence is None:
            m = re.fullmatch(r"(`{3,})", line)
            if m:
                fence = m[1]
            else:
                out.append(line)
        elif line == fence:
            fence = None
        else:
            assert not re.match(rf"`{{{len(fence)},}}\s*$", line), f"a line closes the fence early: {line!r}"
    assert fence is None, "an unclosed code fence"
    return "\n".join(out)


def _md_tables_consistent(md: str) -> bool:
    """Every block of consecutive table lines has the same number of cell separators (a hostile `|` or
    newline cannot add a cell or end a row)."""
    widths: list[int] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            widths.append(len(re.findall(r"(?<!\\)\|", line)))
        elif widths:
            if len(set(widths)) != 1:
                return False
            widths = []
    return True


@budget(300)
@given(seed=SEEDS)
def test_fuzz_renderers_escape_hostile_strings(seed):
    """A hostile document (see document) rendered as HTML, Markdown and text: no tag or event handler
    outside the renderers' own, no raw HTML or early-closed fence in the Markdown, no extra table cell,
    no control character in the text."""
    count("renderers (HTML, Markdown, text)")
    document_ = document(Gen(seed))
    with shown("document", document_):
        check_rendered(document_)


def check_rendered(document):
    from boardlab.report.render import render_document

    html_out = render_document(document, "html")
    parser = _Tags()
    parser.feed(html_out)
    assert parser.tags <= HTML_TAGS, parser.tags - HTML_TAGS
    assert not parser.handlers, parser.handlers
    md = render_document(document, "md")
    assert not _TAG_START.search(_outside_fences(md)), md
    assert _md_tables_consistent(md), md
    text = render_document(document, "text")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), text


# ---- what the fuzzing found, kept as regular tests ----


def _analysis_with_run_value(pristine, db, rowid: int, value: float):
    """The analysis of the fuzz campaign with one run's value set (a falsifying example, replayed)."""
    from boardlab.analysis import analyze, latest_campaign_id
    from boardlab.store import Store

    image, versions, _, keys = pristine
    assert (rowid,) in keys["runs"]
    damaged_copy(image, versions, "UPDATE runs SET value=? WHERE rowid=?", (value, rowid), db)
    with Store.open(db, create=False) as store:
        return analyze(store, latest_campaign_id(store))


def test_a_tiny_run_value_gives_an_unbounded_ratio_not_an_overflow(pristine, scratch):
    """make fuzz's store target: one run's value set to 3.7e-204 made the ratio interval's exp() overflow
    (OverflowError: math range error from `report`); the interval's bound is +inf now."""
    from boardlab.report.terminal import render_text

    analysis = _analysis_with_run_value(pristine, scratch / "tiny-value.db", 77, 3.698147804238801e-204)
    assert render_text(analysis)
    bounds = [
        b
        for c in analysis.comparisons
        if c.comparison is not None and c.comparison.ratio_ci is not None
        for b in (c.comparison.ratio_ci.low, c.comparison.ratio_ci.high)
    ]
    assert math.inf in bounds or 0.0 in bounds  # the tiny value's comparison: an unbounded ratio


def test_exp_or_inf_saturates():
    from boardlab.stats._special import exp_or_inf

    assert exp_or_inf(800.0) == math.inf and exp_or_inf(1.0) == math.e and exp_or_inf(-800.0) == 0.0


def test_an_infinite_run_value_is_a_damaged_store(pristine, scratch):
    """make fuzz's store target: runs.value = -inf (SQLite keeps an infinity) reached the statistics and
    raised "ValueError: values must be finite" out of `report`; the store's check names the cell now."""
    from boardlab.store import Store

    image, versions, _, keys = pristine
    for table, column, key in (("runs", "value", (60,)), ("run_metrics", "p99", None)):
        key = key or keys[table][0]
        assert key in keys[table]
        where = "rowid=?"
        db = scratch / f"infinite-{column}.db"
        damaged_copy(image, versions, f"UPDATE {table} SET {column}=? WHERE {where}", (-math.inf, *key), db)
        with pytest.raises(
            InputError, match=rf"damaged results database \({table}\.{column}, row id .*finite"
        ):
            with Store.open(db, create=False):
                pass


def test_a_ratio_interval_from_zero_to_infinity_is_turned_into_a_cost_interval(pristine, scratch):
    """make fuzz's store target: runs.value = 1e-300 under a higher-is-better metric gave a ratio interval
    of [0, inf] (exp under- and overflowing), and turning it into the cost ratio's divided by zero."""
    from boardlab.report.markdown import render_markdown

    analysis = _analysis_with_run_value(pristine, scratch / "zero-to-inf.db", 51, 1e-300)
    assert render_markdown(analysis)
    cost = [
        (c.comparison.cost_ratio_ci.low, c.comparison.cost_ratio_ci.high)
        for c in analysis.comparisons
        if c.comparison is not None and c.comparison.cost_ratio_ci is not None
    ]
    assert (0.0, math.inf) in cost


# ---- boardlab serve's routes ----

ROUTES = ("/", "/boards", "/campaigns", "/campaign/{id}", "/compare", "/history", "/running", "/check",
          "/backfill", "/static/live.js", "/favicon.ico", "/{text}", "/campaign/{text}", "//{text}",
          "/\\{text}")  # fmt: skip
QUERY_KEYS = ("page", "board", "a", "b", "plan", "token", "x")
UNICODE_DIGITS = ("²", "٣", "۴", "५", "১", "๑", "１", "𝟘", "Ⅻ", "½")
# what a page may answer: found, redirected, the request's fault, no token, not allowed; never 500, and
# never 503 over a store that is whole
ANSWERS = {200, 204, 303, 400, 401, 404, 405}


def _id_text(gen: Gen) -> str:
    """An id as an address may carry it: any 64/70-bit integer, Unicode digits, a sign, hostile text."""
    k = gen.randrange(4)
    if k == 0:
        return str(gen.integer(-(2**70), 2**70))
    if k == 1:
        return "".join(gen.choice(UNICODE_DIGITS + tuple("0123456789")) for _ in range(gen.randint(1, 4)))
    if k == 2:
        return gen.choice(("c:", "b:", "")) + str(gen.integer(0, 2**64))
    return gen.hostile()


def _request(gen: Gen, token: str) -> tuple[str, str, bytes, list]:
    """(method, path as uvicorn gives it, the raw query string, headers) of one hostile request."""
    path = gen.choice(ROUTES).replace("{id}", _id_text(gen)).replace("{text}", gen.hostile())
    if gen.random() < 0.4:
        path += ".json"
    params = [(gen.choice(QUERY_KEYS), _id_text(gen) if gen.random() < 0.6 else gen.hostile())
              for _ in range(gen.randint(0, 4))]  # fmt: skip
    raw = "&".join(f"{k}={v}" for k, v in params)
    query = urllib.parse.urlencode(params).encode() if gen.random() < 0.7 else raw.encode("utf-8", "replace")
    headers = []
    if gen.random() < 0.5:
        scheme = "".join(c.upper() if gen.random() < 0.5 else c for c in gen.choice(("bearer", "basic", "")))
        given = token if gen.random() < 0.5 else gen.hostile()
        headers.append((b"authorization", f"{scheme} {given}".encode("utf-8", "replace")))
    if gen.random() < 0.3:
        headers.append((b"cookie", f"boardlab_token={token if gen.random() < 0.5 else gen.hostile()}".encode(
            "utf-8", "replace")))  # fmt: skip
    if gen.random() < 0.2:
        headers.append(
            (gen.hostile().encode("utf-8", "replace").lower(), gen.hostile().encode("utf-8", "replace"))
        )
    method = gen.choice(("GET", "GET", "GET", "HEAD", "POST", "OPTIONS"))
    return method, path, query, headers


def _asgi(app, method: str, path: str, query: bytes, headers: list) -> tuple[int, dict, bytes]:
    """One request through the ASGI application, as uvicorn hands it over: (status, headers, body)."""
    import asyncio

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode("utf-8", "replace"),
             "query_string": query, "root_path": "", "headers": headers, "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8080)}  # fmt: skip
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode("latin-1"): v.decode("latin-1") for k, v in start["headers"]}, body


@pytest.fixture(scope="module")
def served_apps(tmp_path_factory):
    """The serve application over a store of two campaigns with hostile names, without a token (loopback)
    and with one, as `boardlab serve` makes it."""
    pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
    from boardlab.web.app import create_app

    db = tmp_path_factory.mktemp("fuzz serve") / "lab.db"
    make_campaign_db(db, name="nightly", board="board-a", n=2, with_latency=False, conditions=("baseline",))
    make_campaign_db(db, name="nightly\u202e<b>", board="board-b", n=2, with_latency=False,
                     conditions=("baseline",), status="running")  # fmt: skip
    token = "fuzz-token-0123456789"
    return {None: create_app(str(db), verify=False), token: create_app(str(db), token=token, verify=False)}


@pytest.mark.slow
@budget(300)
@given(seed=SEEDS)
def test_fuzz_serve_routes_answer_only_declared_statuses(served_apps, seed):
    """A request to any route (or none) of `boardlab serve`: ids of any size or digits (Unicode, signed,
    past int64), hostile query values and keys, Authorization of any scheme and case, a cookie, an odd
    header, any method; with and without the token. Every answer is one of ANSWERS, never a traceback, and
    a redirect goes to a path of this server."""
    count("serve routes")
    gen = Gen(seed)
    token = gen.choice(sorted(served_apps, key=str))
    request = _request(gen, token or "no-token-needed")
    with shown("request", request):
        status, headers, body = _asgi(served_apps[token], *request)
        assert status in ANSWERS, (status, body[:300])
        assert b"Traceback" not in body and b"internal error" not in body, body[:300]
        if status == 303:
            where = headers["location"]
            assert where.startswith("/") and where[1:2] not in ("/", "\\"), where
            assert urllib.parse.urlsplit(where).netloc == "" and "token=" not in where, where
