"""Property-based fuzzing (hypothesis) of what reads hostile input: the plan parser, the worker reader, the
store's readers over a damaged database, and every renderer over hostile strings. Each may only raise its
declared error. `make test` runs a few thousand examples in all (derandomized, so a run is repeatable);
`make fuzz` runs BOARDLAB_FUZZ_EXAMPLES (default 100,000) per target with fresh random seeds. Both print
the number of examples per target; a failure prints hypothesis's falsifying example and the
`@reproduce_failure` line that replays it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
from html.parser import HTMLParser

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis not installed (the test extra)")
from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from boardlab.analysis import document as doc  # noqa: E402
from boardlab.errors import BoardlabError, InputError  # noqa: E402
from boardlab.model.worker_result import WorkerResultError, read_worker_result  # noqa: E402

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


# ---- strategies ----

HOSTILE = st.lists(
    st.one_of(
        st.sampled_from(list("<>&\"'`|\\[]()*_#!-=+@\n\r\t\x1b\x00\u202e\u200b\u2028") + ["](", "<script>"]),
        st.characters(),
    ),
    max_size=12,
).map("".join)
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=8,
)
WORKER_KEYS = ("schema", "tool", "workload", "params", "ok", "supported", "reason", "errors", "metrics",
               "iterations_ns", "warmup", "histograms", "counters", "kernel")  # fmt: skip


def _metric_like():
    return st.fixed_dictionaries(
        {},
        optional={
            "unit": JSON_LEAF,
            "higher_is_better": JSON_LEAF,
            "values": st.lists(JSON_LEAF, max_size=3),
            "median": JSON_LEAF,
            "min": JSON_LEAF,
            "p90": JSON_LEAF,
            "p99": JSON_LEAF,
            "counts": st.lists(JSON_LEAF, max_size=3),
            "bucket_width": JSON_LEAF,
            "overflow": JSON_LEAF,
            "total": JSON_LEAF,
            "iterations": JSON_LEAF,
            "capped": JSON_LEAF,
            "count": JSON_LEAF,
            "unsupported": JSON_LEAF,
        },
    )


WORKER_DOC = st.dictionaries(
    st.sampled_from(WORKER_KEYS),
    st.one_of(
        st.sampled_from([1, 2, True, None, "noop"]),
        JSON_VALUE,
        _metric_like(),
        st.dictionaries(st.text(max_size=8), _metric_like(), max_size=2),
    ),
    max_size=8,
)


# ---- the worker reader ----


@budget(1500)
@given(doc_=WORKER_DOC, mangle=st.sampled_from(["json", "cut", "deep"]))
def test_fuzz_worker_reader_raises_only_its_error(doc_, mangle):
    count("worker reader")
    text = json.dumps(doc_, allow_nan=True)
    if mangle == "cut":
        text = text[: len(text) // 2]
    elif mangle == "deep":
        text = text.replace("[", "[" * 50).replace("]", "]" * 50)
    try:
        result = read_worker_result(text)
    except WorkerResultError:
        return
    json.dumps(dict(result.document))  # what the runner stores serializes again
    assert all(isinstance(v, int) and v >= 0 for v in result.iterations_ns)
    assert result.warmup_iterations is None or isinstance(result.warmup_iterations, int)


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


TOML_LEAF = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["auto", "none", "16M", "interleave", "skip", "baseline", "noop", "cpu", "all"]),
)
TOML_VALUE = st.recursive(
    TOML_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
RUN_KEYS = ["repetitions", "iterations", "cpu", "order", "timeout_s", "max_reruns", "warmup_max_ms",
            "warmup_max_iterations", "warmup_cv", "precision", "cap", "pilot", "unsupported", "counters"]  # fmt: skip
KINDS = ["baseline", "stressor", "command", "ddgzip", "burstynet", "governor", "isolation", "workload",
         "governor-daemon", "netns", "dvfs", "devfreq-bus", "bogus"]  # fmt: skip
WORKLOADS = ["noop", "scimark.sor", "mem.latency", "compress.zstd", "rt.cyclictest", "bogus"]


@st.composite
def plans(draw) -> str:
    lines = [f"name = {_toml_value(draw(st.one_of(st.text(max_size=10), TOML_LEAF)))}"]
    if draw(st.booleans()):
        lines.append(f"seed = {_toml_value(draw(TOML_LEAF))}")
    lines.append("[runs]")
    for key in draw(st.lists(st.sampled_from(RUN_KEYS), max_size=5, unique=True)):
        lines.append(f"{key} = {_toml_value(draw(TOML_VALUE))}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[workloads]]")
        lines.append(f"name = {_toml_value(draw(st.sampled_from(WORKLOADS)))}")
        if draw(st.booleans()):
            lines.append(
                f"params = {_toml_value(draw(st.dictionaries(st.text(max_size=8), TOML_VALUE, max_size=3)))}"
            )
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[conditions]]")
        lines.append(f"name = {_toml_value(draw(st.text(max_size=8)))}")
        lines.append(f"kind = {_toml_value(draw(st.sampled_from(KINDS)))}")
        if draw(st.booleans()):
            lines.append(
                f"params = {_toml_value(draw(st.dictionaries(st.text(max_size=8), TOML_VALUE, max_size=3)))}"
            )
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):  # a byte-level mutation as well: a cut, a doubled or a dropped span
        i, j = sorted((draw(st.integers(0, len(text))), draw(st.integers(0, len(text)))))
        text = draw(
            st.sampled_from([text[:i] + text[j:], text[:j] + text[i:], text[:i] + text[i:j] * 2 + text[j:]])
        )
    return text


@pytest.fixture(scope="module")
def catalog():
    from boardlab.workloads import all_workloads

    return {w.name: w for w in all_workloads()}


@budget(400)
@given(text=plans())
def test_fuzz_plan_parser_raises_only_input_errors(catalog, text):
    from boardlab.campaign.plan import parse_plan

    count("plan parser")
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
    return bytes(image), versions, tables, keys


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


STORE_VALUE = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    HOSTILE,
    st.binary(max_size=8),
    JSON_VALUE.map(lambda v: json.dumps(v, allow_nan=True)),
)


@budget(30)
@given(data=st.data())
def test_fuzz_store_readers_over_a_damaged_database(pristine, tmp_path_factory, data):
    from boardlab.analysis import analyze, latest_campaign_id
    from boardlab.report.markdown import render_markdown
    from boardlab.report.terminal import render_text
    from boardlab.store import Store

    image, versions, cols, keys = pristine
    db = tmp_path_factory.getbasetemp() / "fuzz-damaged.db"
    table = data.draw(st.sampled_from(sorted(cols)))
    column = data.draw(st.sampled_from(cols[table]))
    key = data.draw(st.sampled_from(keys[table]))
    value = data.draw(STORE_VALUE)
    where = " AND ".join(f"{c}=?" for c in NO_ROWID[table]) if table in NO_ROWID else "rowid=?"
    try:
        damaged_copy(image, versions, f'UPDATE {table} SET "{column}"=? WHERE {where}', (value, *key), db)
    except sqlite3.IntegrityError:  # NOT NULL, UNIQUE: SQLite itself refuses that damage
        reject()
    count("store reader (damaged database)")
    try:  # what `boardlab report` does with the file
        with Store.open(db, create=False) as store:
            cid = latest_campaign_id(store)
            analysis = analyze(store, cid)
        render_markdown(analysis)
        render_text(analysis)
    except BoardlabError as exc:
        assert exc.exit_code == 2 or isinstance(exc, InputError), exc


# ---- every renderer over hostile strings ----

HTML_TAGS = {"h1", "h2", "h3", "h4", "p", "table", "thead", "tbody", "tr", "td", "th", "ul", "li", "pre",
             "details", "summary", "div", "span", "strong", "b", "em", "code", "small", "section", "a",
             "svg", "g", "rect", "line", "text", "path", "circle", "polyline", "title", "dl", "dt", "dd", "br",
             "caption", "figure", "figcaption", "tspan", "polygon", "defs", "style"}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.handlers += [k for k, _ in attrs if k.lower().startswith("on")]


@st.composite
def documents(draw) -> doc.Document:
    s = draw
    n = s(st.integers(1, 4))
    columns = tuple(
        doc.Column(s(HOSTILE), s(st.one_of(st.none(), HOSTILE)), s(st.booleans())) for _ in range(n)
    )
    rows = tuple(tuple(s(HOSTILE) for _ in range(n)) for _ in range(s(st.integers(0, 3))))
    blocks = [
        doc.Prose(s(HOSTILE), strong=s(st.booleans()), bold=tuple(s(st.lists(HOSTILE, max_size=2)))),
        doc.Items(tuple(s(st.lists(HOSTILE, max_size=3)))),
        doc.Facts(tuple((s(HOSTILE), s(HOSTILE)) for _ in range(s(st.integers(0, 3))))),
        doc.Preformatted(s(HOSTILE), summary=s(st.one_of(st.none(), HOSTILE))),
        doc.Table(columns, rows, title=s(st.one_of(st.none(), HOSTILE))),
    ]
    if s(st.integers(0, 9)) == 0:  # drawing SVG is the slow part: one document in ten has a figure
        blocks.append(
            doc.Figure(
                "boxplot",
                {
                    "boxes": [doc.Box(s(HOSTILE), [1.0, 2.0, 3.0], note=s(HOSTILE)) for _ in range(2)],
                    "title": s(HOSTILE),
                    "unit": s(HOSTILE),
                },
            )
        )
    return doc.Document(s(HOSTILE), (doc.Section(s(HOSTILE), tuple(blocks), anchor=s(HOSTILE)),))


_TAG_START = re.compile(r"<[A-Za-z/!?]")


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
@given(document=documents())
def test_fuzz_renderers_escape_hostile_strings(document):
    from boardlab.report.render import render_document

    count("renderers (HTML, Markdown, text)")
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
