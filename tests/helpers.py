"""Shared test helpers: the installed boardlab CLI and boardlab-kern, run as a user runs them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from functools import cache, lru_cache, wraps
from pathlib import Path

from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import GateResult, Histogram, MetricResult, RunColumns, RunResult
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec
from boardlab.store import Store
from boardlab.store.migrations import RUN_COLUMNS as _RUN_COLUMNS

FIXTURES = Path(__file__).parent / "fixtures"
SYSFS = FIXTURES / "sysfs"


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie waits for init or its killer's wait)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@lru_cache(maxsize=2)
def netns_unavailable(how: str = "ip") -> str | None:
    """Why network namespaces cannot be used on this machine, or None; probed once per session by doing what
    the tests do. how="ip": the netns condition's own probe (`ip netns add`, loopback up, delete), the one its
    check() uses; how="unshare": `unshare -n` with loopback up (a namespace held only by a process)."""
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "unshare") if how == "unshare" else ("ip",):
        if not shutil.which(tool):
            return f"needs {tool} (iproute2, util-linux) for network namespaces"
    if how == "ip":
        from boardlab.conditions.netns import netns_reason  # the product's own probe, which its check uses

        why = netns_reason()
        return f"network namespaces do not work here: {why}" if why else None
    argv = ["unshare", "-n", "ip", "link", "set", "lo", "up"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if out.returncode:
        why = " / ".join((out.stderr or out.stdout).strip().splitlines())
        return f"network namespaces do not work here: `{' '.join(argv)}` failed: {why}"
    return None


class LatenessProbe:
    """How late this machine wakes a sleeper while a timing test runs: a thread sleeps 1 ms again and again
    and records by how much each wake-up overshot. A timing assertion that fails while the probe saw the
    machine itself late by more than the test's tolerance is skipped with the measured figure as the reason
    (issue: the suite passes on loaded machines); on a machine that wakes sleepers on time it fails as
    before."""

    PERIOD_S = 0.001

    def __init__(self) -> None:
        import threading

        self.late_ms: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lateness-probe", daemon=True)

    def _run(self) -> None:
        import time

        while not self._stop.is_set():
            t = time.monotonic()
            time.sleep(self.PERIOD_S)
            self.late_ms.append((time.monotonic() - t - self.PERIOD_S) * 1e3)

    def __enter__(self) -> LatenessProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def quantile_ms(self, q: float) -> float:
        s = sorted(self.late_ms)
        return s[min(len(s) - 1, int(q * len(s)))] if s else float("inf")

    def check(self, holds: bool, what: str, *, tolerance_ms: float) -> None:
        """Assert a timing property; when it does not hold but the machine's p99 lateness exceeded
        tolerance_ms, skip and say so: the code cannot keep a schedule the kernel does not give it."""
        import pytest

        if holds:
            return
        p99 = self.quantile_ms(0.99)
        if p99 > tolerance_ms:
            pytest.skip(
                f"{what} did not hold, but the machine was late itself: 1 ms sleeps woke up to {p99:.1f} ms "
                f"late (p99 of {len(self.late_ms)}, load average {os.getloadavg()[0]:.1f}), over the "
                f"{tolerance_ms:g} ms this check tolerates"
            )
        raise AssertionError(
            f"{what} did not hold (the machine woke sleepers at most {p99:.1f} ms late, p99)"
        )


def copy_board(name: str, dest: Path) -> Path:
    """A writable copy of the fixture tree of board `name` (tests/fixtures/sysfs/NAME) at dest/NAME."""
    root = dest / name
    shutil.copytree(SYSFS / name, root, symlinks=True)
    return root


def rows(db: Path, sql: str) -> list[tuple]:
    """The rows of one query on a results database, read as a user's sqlite3 would."""
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Runs `boardlab ARGS` in a fresh interpreter, exactly as the console script does."""
    return subprocess.run(
        [sys.executable, "-m", "boardlab", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


QEMU_HANG_FACTOR = 5  # a hang guard, not a timing check: translated code beside a loaded machine's other jobs


def run_kern(kern: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`timeout` only stops a hung binary. Under qemu-user it is QEMU_HANG_FACTOR times longer: scimark.lu at
    size large took over 120 s there beside `stress-ng --cpu 2` on a loaded two-core machine, and ran
    right."""
    if under_qemu_user():
        timeout *= QEMU_HANG_FACTOR
    return subprocess.run([str(kern), *args], capture_output=True, text=True, timeout=timeout)


_BUILDS: dict[str, dict] = {}


def kern_build(kern: Path) -> dict:
    """How the binary under test was built (`--list --json` "build"): its architecture and pointer width,
    which need not be this interpreter's when BOARDLAB_KERN points at a cross-built binary under qemu."""
    if str(kern) not in _BUILDS:
        _BUILDS[str(kern)] = json.loads(run_kern(kern, "--list", "--json").stdout)["build"]
    return _BUILDS[str(kern)]


def under_qemu_user() -> bool:
    """True when the kernel tests run a cross-built boardlab-kern through qemu-user (make test-arm-kern):
    qemu-user translates the instructions and most system calls, but not perf_event_open nor the multicast
    and timestamping socket options, so the tests of those run natively only."""
    return os.environ.get("BOARDLAB_KERN", "").endswith("-qemu")


def assert_plausible(values, low: float, high: float) -> None:
    """Each measured rate or latency inside what any CPU of the last 20 years does natively. Under qemu-user
    the figure is the translator's, slowed without bound by a loaded machine: there only that it is a
    positive finite number (gemm under qemu beside stress-ng measured below 10 MFLOPS)."""
    values = list(values)
    assert values
    if under_qemu_user():
        assert all(0 < v < math.inf for v in values), values
    else:
        assert all(low < v < high for v in values), values


def kern_json(kern: Path, *args: str) -> tuple[int, dict]:
    proc = run_kern(kern, *args, "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def kern_ok_or_skip(rc: int, res: dict) -> None:
    """A kernel this machine cannot run skips with its reason; otherwise it must have run and verified."""
    import pytest

    if res.get("supported") is False:
        pytest.skip(f"unsupported here: {res['reason']}")
    assert rc == 0, res.get("errors")
    assert res["ok"] and res["verified"]


def as_nobody(fn):
    """Runs fn() in a forked child switched to the user nobody (the parent must be root) and returns its
    JSON-able result: how a check or a write behaves for a user without privileges."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def shared_tmp_dir() -> Path:
    """A directory under /tmp that other users can enter (pytest's tmp_path is private to its owner)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="boardlab-test-"))
    d.chmod(0o755)
    return d


def full_sweep_report(tmp_path_factory) -> tuple[Path, str]:
    """(the HTML report, what `governor sweep` said) of the issue's 6,696-cell sweep: every OPP pair of the
    simulated Exynos 5422 at 2 runs, made once per test session and shared by the tests that read it
    (test_report_lint's heatmap test, test_report_geometry's Chromium test). The sweep and its report took
    11 s of the suite's two CPUs, made once per module before. Under pytest-xdist the two modules may run in
    different workers: the files sit beside the workers' own temporary directories, under a lock, and the
    first worker to ask makes them while any other waits. Read-only once made; each test still asserts on
    them what it asserted."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # every worker's basetemp is a directory of this one
    d = base / "full-sweep-exynos5422"
    d.mkdir(exist_ok=True)
    said, page = d / "sweep.said", d / "report.html"
    with open(d / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not said.exists():
            db = d / "sweep.db"
            db.unlink(missing_ok=True)  # a run stopped halfway left it: made again
            proc = run_cli("governor", "sweep", "--sim", "exynos5422", "--db", str(db), "--runs", "2")
            assert proc.returncode == 0, proc.stderr
            report = run_cli("report", "--db", str(db), "-o", str(page))
            assert report.returncode == 0, report.stderr
            said.write_text(proc.stdout + proc.stderr)  # last: its presence says both were made
    return page, said.read_text()


@contextmanager
def reaped(proc: subprocess.Popen):
    """`proc` for the block; still running when the block ends (a wait timed out, an assertion failed), it is
    killed and reaped: no test leaves the process it started running."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def tagged_env(tag: str, **extra: str) -> dict:
    """Every process boardlab starts inherits its environment, so a unique variable finds exactly ours."""
    return {**os.environ, "BOARDLAB_TEST_TAG": tag, **extra}


def sleeping(marker: str) -> list[str]:
    """The PIDs of the live processes running `sleep MARKER` (a marker no other process's argv has)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(pid)
        except OSError:
            pass
    return found


def tagged_processes(tag: str) -> dict[int, str]:
    """{pid: command name} of every live process carrying the tag (zombies have no environment left)."""
    needle = f"BOARDLAB_TEST_TAG={tag}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found[int(entry)] = Path(f"/proc/{entry}/comm").read_text().strip()
            except OSError:
                continue
    return found


def wait_until(done, timeout_s: float, step_s: float = 0.05) -> None:
    """Polls `done()` until it is true or `timeout_s` has passed; the caller then asserts what it checks.
    For a test allowing something up to `timeout_s` (processes ending after a Ctrl-C): a fixed sleep of
    `timeout_s` before the same assertion proved no more, and always waited all of it."""
    end = time.monotonic() + timeout_s
    while not done() and time.monotonic() < end:
        time.sleep(step_s)


def group_members(pgids) -> dict[int, str]:
    """{pid: command name} of every live (not zombie) process in the given process groups. A load's
    workers may overwrite their environment with a process title (stress-ng does), so the tag misses them;
    their process group, that of the tagged load they belong to, does not."""
    wanted = set(pgids)
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) in wanted:
                found[int(entry)] = stat[stat.index("(") + 1 : stat.rindex(")")]
    return found


# A synthetic campaign store shared by the report, compare and browser tests.
EVIL = "<script>alert(1)</script>"

# workload, params, metric, unit, higher_is_better, baseline value
WORKLOADS = [
    ("scimark.fft", {"size": "small"}, "mflops", "MFLOPS", True, 300.0),
    ("crc32", {}, "ns_per_byte", "ns", False, 1.6),
]
LATENCY_SIZES = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
LATENCY_NS = {
    "random": [1.5, 1.6, 5.0, 9.0, 30.0, 95.0, 110.0],
    "sequential": [1.4, 1.4, 1.6, 2.0, 2.6, 3.5, 3.8],
}
# condition -> cost factor per workload (> 1 = worse); frequency of the CPU under it
CONDITIONS = {
    "baseline": ({}, 1_200_000),
    "cpu-stress": ({"scimark.fft": 1.25, "crc32": 1.0, "mem.latency": 1.3}, 1_000_000),
    "memcpy": ({"scimark.fft": 1.0, "crc32": 0.8}, 1_200_000),
}


def _cells(conditions, with_latency):
    cells = []
    for cond in conditions:
        for w, params, metric, unit, hib, base in WORKLOADS:
            cells.append((Cell(w, tuple(sorted(params.items())), cond, metric), unit, hib, base))
        if with_latency and cond in ("baseline", "cpu-stress"):
            for pattern, values in LATENCY_NS.items():
                for size, ns in zip(LATENCY_SIZES, values, strict=True):
                    params = (("pattern", pattern), ("size_bytes", size))
                    cells.append((Cell("mem.latency", params, cond, "ns_per_access"), "ns", False, ns))
    return cells


def store_facts(store, campaign_id: int) -> None:
    """The workload facts a campaign stores when it starts (campaign/facts.py), here from this host's catalog,
    as the runner stores them: a synthetic campaign reports like a real one."""
    from boardlab.campaign import facts

    facts.save(store, campaign_id, facts.host_facts())


@cache
def host_workload_facts():
    """Analysis knows a workload only from the facts its campaign stored (analysis/specs.py); a test that
    calls a study on a stand-in store hands it this host's catalog's, as a campaign run here stores them."""
    from boardlab.campaign.facts import host_facts
    from boardlab.model.facts import read_facts_document

    return read_facts_document(json.loads(json.dumps(host_facts())))


def built_once(make):
    """`make(path, ...)` building a SQLite store that does not exist yet: built the first time into the test
    process's own directory (conftest's BOARDLAB_TESTS_BASE) and copied from there after, since a builder's
    store is a function of its arguments (numbers, names and tuples: their repr is the key) and of the schema
    the store module writes (a test that patches it builds an older store). Sixty builds of the unit tier
    were 4 s of it; a copy is a millisecond. A copy's campaigns get uids of their own, as a build's do (two
    builds are two campaigns to an ingest). A path that exists already (a second campaign into it, a
    resumed one) or a PostgreSQL URL is built on."""

    @wraps(make)
    def made(path: Path, *args, **kw):
        from boardlab.store import db as store_db

        base = os.environ.get("BOARDLAB_TESTS_BASE")
        if base is None or "://" in str(path) or Path(path).exists():
            return make(path, *args, **kw)
        schema = (store_db.STORE_SCHEMA, [number for number, _sql in store_db.MIGRATIONS])
        key = repr((make.__name__, schema, args, sorted(kw.items())))
        built = Path(base) / "built" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.db"
        if not built.exists():
            built.parent.mkdir(exist_ok=True)
            part = built.with_suffix(f".{os.getpid()}.part")  # a child process of the test may build it too
            make(part, *args, **kw)
            part.replace(built)  # a builder that fails leaves nothing to copy
        shutil.copyfile(built, path)
        _new_uids(Path(path))
        return path

    return made


def _new_uids(db: Path) -> None:
    """Gives each campaign of `db` a uid of its own (create_campaign's: a random uuid), where the store has
    them (store schema 5 and later)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # a test's scratch copy: no wait for the disk
        if any(row[1] == "uid" for row in conn.execute("PRAGMA table_info(campaigns)")):
            with conn:
                for (cid,) in conn.execute("SELECT id FROM campaigns").fetchall():
                    conn.execute("UPDATE campaigns SET uid = ? WHERE id = ?", (uuid.uuid4().hex, cid))
    finally:
        conn.close()


@built_once
def make_campaign_db(
    path: Path,
    *,
    name: str = "synthetic",
    board: str = "board-a",
    status: str = "complete",
    n: int = 12,
    speed: float = 1.0,
    conditions=tuple(CONDITIONS),
    with_latency: bool = True,
    extra_cells: tuple[tuple[str, float], ...] = (),
    seed: int = 1,
    first_rep: int = 1,
) -> Path:
    """A stored campaign with known effects: per workload and condition, values = baseline value x the
    condition's cost factor (inverted for higher-is-better metrics) x 1% noise; `speed` scales a whole board
    (2.0 = twice as fast). crc32 drifts with run order under the baseline; one run is invalid, one failed.
    `first_rep` > 1 resumes the campaign already in `path` (the same name, board and seed) with repetitions
    first_rep..n, as `boardlab run` resumes one."""
    rng = random.Random(seed)
    inventory = {
        "model": f"{EVIL} test board",
        "machine": "armv7l",
        "online_cpus": [0, 1],
        "kernel": {"release": "6.6.0-test"},
    }
    environment = {
        "checks": [
            {
                "name": "governor",
                "status": "WARN",
                "detail": f"governor ondemand {EVIL}",
                "fix": "use performance",
            },
            {
                "name": "thermal",
                "status": "FAIL",
                "detail": "85 C at start",
                "fix": "let the board cool down",
            },
            {"name": "aslr", "status": "OK", "detail": "ASLR on", "fix": None},
        ],
        "capabilities": {"perf": {"supported": False, "reason": "no PMU"}, "thermal": {"supported": True}},
    }
    specs = {
        c: ConditionSpec(
            c, "baseline" if c == "baseline" else "stressor", {}, None if c == "baseline" else "baseline"
        )
        for c in conditions
    }
    cells = _cells(conditions, with_latency)
    for key, value in extra_cells:
        cells.append((Cell(key, (), "baseline", "ops"), "ops/s", True, value))
    plan = f'name = "{name}"\n[runs]\nrepetitions = {n}\n'
    with Store.open(path) as store:
        board_id = store.upsert_board(f"fp-{board}", board, inventory)
        resumed = store.find_campaign(f"h-{name}-{seed}", board_id) if first_rep > 1 else None
        cid = (
            resumed["id"]
            if resumed
            else store.create_campaign(
                name=name,
                plan_hash=f"h-{name}-{seed}",
                plan_source="synthetic.toml",
                plan_text=plan,
                board_id=board_id,
                boardlab_version="0.1.0",
                kern_version="0.1.0",
                root="/",
                environment=environment,
            )
        )
        if not resumed:
            store_facts(store, cid)
        ids = store.ensure_cells(
            cid, [c for c, *_ in cells], specs, {c.key: (u, hib) for c, u, hib, _ in cells}
        )
        t0 = 1_700_000_000.0
        seq = (first_rep - 1) * len(cells)
        for _ in range(1, first_rep):  # the same noise as a campaign run in one go
            for _cell in cells:
                rng.gauss(0, 0.01)
                for _k in range(5):
                    rng.random()
        for rep in range(first_rep, n + 1):
            for cell, unit, hib, base in cells:
                cost = CONDITIONS.get(cell.condition, ({}, 0))[0].get(cell.workload, 1.0)
                value = base * (1 / cost if hib else cost) * (speed if hib else 1 / speed)
                if cell.workload == "crc32" and cell.condition == "baseline":
                    value *= 1 + 0.01 * rep  # drifts: the board warms up
                value *= 1 + rng.gauss(0, 0.01)
                freq = CONDITIONS.get(cell.condition, ({}, 1_200_000))[1]
                temp = 45_000 + 100 * rep
                failed = cell.workload == "crc32" and cell.condition == "memcpy" and rep == 2
                invalid = cell.workload == "scimark.fft" and cell.condition == "baseline" and rep == 3
                start = t0 + seq * 1.5
                series = tuple(
                    item
                    for k in range(5)
                    for item in (
                        ("cpu0.busy_pct", k * 100_000_000, 3.0 + rng.random()),
                        ("cpu1.busy_pct", k * 100_000_000, 99.0),
                        ("worker.cpu_pct", k * 100_000_000, 99.5),
                        ("worker.rss_kib", k * 100_000_000, 2048.0),
                        ("freq.policy0_khz", k * 100_000_000, float(freq)),
                        ("temp.thermal_zone0:cpu_thermal_mc", k * 100_000_000, float(temp + 50 * k)),
                    )
                )
                run = RunResult(
                    cell_key=cell.key,
                    repetition=rep,
                    attempt=1,
                    seq=seq,
                    started_unix_s=start,
                    wall_ns=500_000_000,
                    cpu=1,
                    exit_code=1 if failed else 0,
                    ok=not failed,
                    valid=not failed and not invalid,
                    invalid_reason="throttled" if invalid else None,
                    value=None if failed else value,
                    metrics=() if failed else (MetricResult(cell.metric, unit, hib, (value,), value),),
                    iterations_ns=(1_000_000,),
                    warmup_iterations=3,
                    warmup_capped=False,
                    rusage={"utime_us": 1},
                    gate=GateResult(0.0, False, "idle"),
                    condition_state={},
                    monitor={
                        "freq.policy0_khz_mean": float(freq),
                        "temp.thermal_zone0_mc_max": float(temp),
                        "throttled": invalid,
                        "worker.cpu_pct_mean": 99.5,
                    },
                    series=series,
                    error="worker crashed" if failed else None,
                )
                store.record_run(cid, ids[cell.key], run)
                seq += 1
        if status != "running":
            store.set_campaign_status(
                cid, status, monitor={"cost_pct_of_core": 0.4, "interval_s": 0.1}, notes={"reruns": 1}
            )
    return path


# --- the real-time latency and AI inference studies' campaigns (rt.cyclictest, ai.inference),
# as they store them

LIMIT_US = 1000  # histogram_us: buckets 0..999, the overflow beyond


def _ai_load(placement: str) -> tuple[str, dict]:
    return (
        "workload",
        {"workload": "ai.inference", "params": {"model": "mobilenet_v1"}, "placement": placement},
    )


RT_CONDITIONS = {  # name -> (kind, baseline, parts), as the rt-isolation preset declares them
    "none/shared": ("isolation", None, (("isolation", {"mode": "shared"}),)),
    "none/isolated": ("isolation", None, (("isolation", {"mode": "isolated"}),)),
    "mobilenet_v1/shared": (
        "isolation+workload",
        "none/shared",
        (("isolation", {"mode": "shared"}), _ai_load("all")),
    ),
    "mobilenet_v1/isolated": (
        "isolation+workload",
        "none/isolated",
        (("isolation", {"mode": "isolated"}), _ai_load("other")),
    ),
}
AI_MEMCPY = f"memcpy{EVIL}"
AI_CONDITIONS = {
    "baseline": ("baseline", None),
    "cpu": ("stressor", "baseline"),
    AI_MEMCPY: ("stressor", "baseline"),
}
# model -> (median ms, slowest frame ms); condition -> (factor on the median, factor on the slowest frame)
AI_MODELS = {"mobilenet_v1": (10.0, 14.0), "resnet18": (40.0, 52.0)}
AI_EFFECTS = {
    ("mobilenet_v1", "cpu"): (1.0, 1.2),  # the tail 20% slower, the median unchanged
    ("resnet18", "cpu"): (1.3, 1.3),  # everything 30% slower
}
AI_FRAMES = 89  # 90 frames per run, frame 0 kept apart: as the interference preset


def _study_monitor() -> dict:
    return {
        "freq.policy0_khz_mean": 1_200_000.0,
        "temp.thermal_zone0_mc_max": 45_000.0,
        "throttled": False,
    }


def _study_run(
    cell: Cell, rep: int, seq: int, value: float, metrics, histograms=(), iterations=(), valid: bool = True
) -> RunResult:
    return RunResult(
        cell_key=cell.key,
        repetition=rep,
        attempt=1,
        seq=seq,
        started_unix_s=1_700_000_000.0 + seq,
        wall_ns=1_000_000_000,
        cpu=1,
        exit_code=0,
        ok=True,
        valid=valid,
        invalid_reason=None if valid else "throttled",
        value=value,
        metrics=tuple(metrics),
        iterations_ns=tuple(iterations),
        warmup_iterations=None,
        warmup_capped=None,
        rusage={"utime_us": 1},
        gate=GateResult(0.0, False, "idle"),
        condition_state={},
        monitor=_study_monitor(),
        histograms=tuple(histograms),
    )


def _store_study_campaign(
    path: Path, name: str, conditions: dict, cells: list[tuple[Cell, str, bool]], runs
) -> None:
    specs = {c: ConditionSpec(c, kind, {}, base, *parts) for c, (kind, base, *parts) in conditions.items()}
    with Store.open(path) as store:
        board_id = store.upsert_board(
            "fp-study", "study-board", {"model": "test board", "online_cpus": [0, 1]}
        )
        cid = store.create_campaign(
            name=name,
            plan_hash=f"h-{name}",
            plan_source="study.toml",
            plan_text=f'name = "{name}"\n[runs]\nrepetitions = 10\n',
            board_id=board_id,
            boardlab_version="0.1.0",
            kern_version="0.1.0",
            root="/",
            environment={"checks": []},
        )
        store_facts(store, cid)
        ids = store.ensure_cells(cid, [c for c, *_ in cells], specs, {c.key: (u, hib) for c, u, hib in cells})
        for cell, run in runs:
            store.record_run(cid, ids[cell.key], run)
        store.set_campaign_status(cid, "complete", monitor={}, notes={})


# --- real-time latency --------------------------------------------------------------------------------------


def _rt_histogram(condition: str, rep: int, rng: random.Random) -> tuple[list[int], int, float]:
    """(counts, overflow, max) of one run. none/isolated is exact: per run 250 x 5 us, 200 x 6 us, 45 x 7 us
    and 5 x (18 + rep % 5) us, so that merged over 10 runs p50 = 5, p90 = 6, p99 = 7, p99.9 = p99.99 = 22
    from 5000 samples; mobilenet_v1/shared has 3 samples per run beyond the 1000-us limit."""
    counts = [0] * LIMIT_US
    if condition == "none/isolated":
        counts[5], counts[6], counts[7] = 250, 200, 45
        counts[18 + rep % 5] = 5
        return counts, 0, float(18 + rep % 5)
    load, _, mode = condition.partition("/")
    base = 8 if mode == "isolated" else 14
    spread = (2 if mode == "isolated" else 6) * (3 if load != "none" else 1)
    for _ in range(5000 - (3 if condition == "mobilenet_v1/shared" else 0)):
        counts[min(LIMIT_US - 1, base + int(rng.expovariate(1 / spread)))] += 1
    if condition == "mobilenet_v1/shared":
        return counts, 3, float(1000 + rng.randrange(200, 900))
    return counts, 0, float(max(i for i, n in enumerate(counts) if n))


def _nearest_rank(counts: list[int], overflow: int, q: float) -> float | None:
    n = sum(counts) + overflow
    rank, acc = max(1, math.ceil(q * n / 100 - 1e-9)), 0
    for i, c in enumerate(counts):
        acc += c
        if acc >= rank:
            return float(i)
    return None


@built_once
def make_rt_db(path: Path, n: int = 10, seed: int = 3, invalid: str | None = None) -> Path:
    """rt.cyclictest runs under RT_CONDITIONS; every run under the condition `invalid` is invalid."""
    rng = random.Random(seed)
    params = (("histogram_us", LIMIT_US), ("probe", "cyclictest"))
    cells = [(Cell("rt.cyclictest", params, c, "max_latency_us"), "us", False) for c in RT_CONDITIONS]
    runs, seq = [], 0
    for rep in range(1, n + 1):
        for cell, _, _ in cells:
            counts, overflow, top = _rt_histogram(cell.condition, rep, rng)
            samples = sum(counts) + overflow
            avg = (sum(i * c for i, c in enumerate(counts)) + top * overflow) / samples
            low = float(min(i for i, c in enumerate(counts) if c))
            metrics = [
                MetricResult("max_latency_us", "us", False, (), top),
                MetricResult("min_latency_us", "us", False, (), low),
                MetricResult("avg_latency_us", "us", False, (), round(avg, 2)),
                MetricResult("samples", "samples", True, (), float(samples)),
                MetricResult("overflow_samples", "samples", False, (), float(overflow)),
            ]
            for q, name in ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p99_9"), (99.99, "p99_99")):
                metrics.append(
                    MetricResult(f"{name}_latency_us", "us", False, (), _nearest_rank(counts, overflow, q))
                )
            hist = Histogram("latency_us", 1.0, "us", tuple(counts), overflow, samples)
            valid = cell.condition != invalid
            runs.append((cell, _study_run(cell, rep, seq, top, metrics, (hist,), valid=valid)))
            seq += 1
    _store_study_campaign(path, "rt-isolation", RT_CONDITIONS, cells, runs)
    return path


# --- AI inference -------------------------------------------------------------------------------------------


def _frame_summary(frames: list[float]) -> MetricResult:
    """As ai.inference stores latency_ms: every frame, the median, and p90/p99 by nearest rank."""
    s = sorted(frames)
    n = len(s)

    def rank(q: float) -> float:
        return s[max(0, min(n - 1, -(-q * n // 100) - 1))]

    return MetricResult(
        "latency_ms", "ms", False, tuple(frames), (s[(n - 1) // 2] + s[n // 2]) / 2, s[0], rank(90), rank(99)
    )


@built_once
def make_ai_db(path: Path, n: int = 12, seed: int = 3, delegates: tuple[str, ...] = ()) -> Path:
    """`delegates`: each model's cells once per delegate (`delegate = [...]` in a plan), else without one."""
    rng = random.Random(seed)
    cells = [
        (Cell("ai.inference", (("model", m), ("runtime", "litert"), *d), c, "latency_ms"), "ms", False)
        for m in AI_MODELS
        for d in ([(("delegate", name),) for name in delegates] or [()])
        for c in AI_CONDITIONS
    ]
    runs, seq = [], 0
    for rep in range(1, n + 1):
        for cell, _, _ in cells:
            model = dict(cell.params)["model"]
            median, slowest = AI_MODELS[model]
            f_med, f_tail = AI_EFFECTS.get((model, cell.condition), (1.0, 1.0))
            level = median * f_med * (1 + rng.gauss(0, 0.004))
            frames = [level * (1 + rng.gauss(0, 0.01)) for _ in range(AI_FRAMES - 1)]
            frames.append(slowest * f_tail * (1 + rng.gauss(0, 0.01)))  # the slowest frame: the p99 of 89
            m = _frame_summary(frames)
            fps = MetricResult("fps", "frames/s", True, (), 1000 / m.median)
            iterations = [int(v * 1e6) for v in [frames[0] * 3, *frames]]
            runs.append((cell, _study_run(cell, rep, seq, m.median, [m, fps], iterations=iterations)))
            seq += 1
    _store_study_campaign(path, "ai-interference", AI_CONDITIONS, cells, runs)
    return path


# --- headless Chromium, for the reports as a reader sees them

# --- the services, data-stream and satellite-computer studies' campaigns, as `boardlab run` stores them -----

STUDY_CONDITIONS = {"baseline": ("baseline", None), "cpu-stress": ("stressor", "baseline")}


def _worker_doc(workload: str, params: dict, metrics: dict, **extra) -> str:
    """A worker result as a worker prints it (schema 2), for the runs' worker_json."""
    body = {name: {"unit": unit, "higher_is_better": hib, "value": v, "median": v}
            for name, (unit, hib, v) in metrics.items()}  # fmt: skip
    return json.dumps({"schema": 2, "tool": "boardlab.pyrun", "workload": workload, "params": params,
                       "ok": True, "supported": True, "reason": None, "errors": [], "metrics": body,
                       **extra})  # fmt: skip


def _make_study_db(
    path: Path, name: str, cells, n: int, seed: int, *, plan=None, cell_facts=True, conditions=None
) -> Path:
    """`cells`: (workload, params, metric, unit, higher_is_better, value(condition, rep, rng) -> float,
    worker_doc(value, rep, rng) -> str or None), each under every condition of STUDY_CONDITIONS (or of
    `conditions`, ConditionSpecs by name, kept with each cell as the runner keeps them). Runs carry
    rusage (user and system time) and a wall time that scale with the value. A typed `plan` (its entries'
    thresholds) is stored as its text and, unless `cell_facts` is False (a campaign stored before cells
    carried their facts), as each cell's facts, as the runner stores them."""
    rng = random.Random(seed)
    specs = conditions or {
        c: ConditionSpec(c, kind, {}, base) for c, (kind, base) in STUDY_CONDITIONS.items()
    }
    keyed = [
        (Cell(w, tuple(sorted(p.items())), cond, m), w, p, u, hib, value, wdoc)
        for cond in specs
        for w, p, m, u, hib, value, wdoc in cells
    ]
    with Store.open(path) as store:
        board_id = store.upsert_board(
            "fp-study", "study-board", {"model": "test board", "online_cpus": [0, 1]}
        )
        cid = store.create_campaign(
            name=name, plan_hash=f"h-{name}", plan_source=f"{name}.toml",
            plan_text=plan.source if plan else f'name = "{name}"\n[runs]\nrepetitions = {n}\n',
            board_id=board_id, boardlab_version="0.1.0", kern_version="0.1.0", root="/",
            environment={"checks": []},
        )  # fmt: skip
        store_facts(store, cid)
        ids = store.ensure_cells(cid, [k[0] for k in keyed], specs, {k[0].key: (k[3], k[4]) for k in keyed})
        if plan is not None and cell_facts:
            from boardlab.campaign.facts import store_cell_facts

            store_cell_facts(store, cid, plan, [k[0] for k in keyed])
        seq = 0
        for rep in range(1, n + 1):
            for cell, _w, _p, unit, hib, value, wdoc in keyed:
                v = value(cell.condition, rep, rng)
                wall_s = 0.5 + rng.random() * 0.05
                run = RunResult(
                    cell_key=cell.key, repetition=rep, attempt=1, seq=seq,
                    started_unix_s=1_700_000_000.0 + seq * 2, wall_ns=int(wall_s * 1e9), cpu=1, exit_code=0,
                    ok=True, valid=True, invalid_reason=None, value=v,
                    metrics=(MetricResult(cell.metric, unit, hib, (v,), v),), iterations_ns=(),
                    warmup_iterations=None, warmup_capped=None,
                    rusage={"utime_us": int(wall_s * 0.9e6), "stime_us": int(wall_s * 0.05e6)},
                    gate=GateResult(0.0, False, "idle"), condition_state={}, monitor=_study_monitor(),
                    worker_json=wdoc(v, rep, rng) if wdoc else None,
                )  # fmt: skip
                store.record_run(cid, ids[cell.key], run)
                seq += 1
        store.set_campaign_status(cid, "complete", monitor={}, notes={})
    return path


SERVICES = ("position", "orientation", "dot")


def _services_doc(params: dict):
    """svc.scenario's worker result: the accounting per service and its per-second series (CPU, RSS, PSS)."""

    def doc(v: float, rep: int, rng: random.Random) -> str:
        series, per = [], {}
        for k, svc in enumerate(SERVICES):
            cpu = [v / 3 * (1 + 0.3 * math.sin(t / 2 + k)) + rng.random() * 0.2 for t in range(12)]
            rss = [(8 + 2 * k) * 2**20 + t * 4096 for t in range(12)]
            pss = [x * 0.6 for x in rss]
            for metric, unit, ys in (("cpu_pct_one_cpu", "%", cpu), ("rss_bytes", "bytes", rss),
                                     ("pss_bytes", "bytes", pss)):  # fmt: skip
                series.append({"metric": metric, "label": svc, "unit": unit,
                               "points": [[float(t + 1), y] for t, y in enumerate(ys)]})  # fmt: skip
            avg = lambda ys: {"avg": sum(ys) / len(ys), "min": min(ys), "max": max(ys)}  # noqa: E731
            per[svc] = {"cpu_pct_one_cpu": avg(cpu), "cpu_jiffies_pct_one_cpu": avg(cpu),
                        "rss_bytes": avg(rss), "pss_bytes": avg(pss)}  # fmt: skip
        metrics = {"cpu_pct_one_cpu": ("%", False, v), "rss_bytes": ("bytes", False, 3 * 10 * 2**20),
                   "pss_bytes": ("bytes", False, 3 * 6 * 2**20)}  # fmt: skip
        info = {"scenario": params["scenario"], "accounting": {"per_service": per}}
        return _worker_doc("svc.scenario", params, metrics, info=info, series=series)

    return doc


@built_once
def make_services_db(path: Path, n: int = 8, seed: int = 5) -> Path:
    """The vehicle-services study's cells: the position service from a synthetic source and from NMEA (its
    parameters differ: a cell has None where it does not use one, as `boardlab run` stores them), under the
    baseline and a CPU stressor that costs the services 40% more CPU."""
    cells = []
    base = {"scenario": "position", "source": "synthetic", "read_mode": None, "mode": None, "rate_hz": None,
            "keepalive": None, "duration_s": 12.0}  # fmt: skip
    for params, cpu in ((base, 1.2), ({**base, "source": "nmea", "read_mode": "canonical"}, 1.6)):

        def value(cond, rep, rng, cpu=cpu):
            return cpu * (1.4 if cond == "cpu-stress" else 1.0) * (1 + rng.gauss(0, 0.02))

        cells.append(("svc.scenario", params, "cpu_pct_one_cpu", "%", False, value, _services_doc(params)))
    return _make_study_db(path, "victory", cells, n, seed)


@built_once
def make_stream_db(path: Path, n: int = 8, seed: int = 6) -> Path:
    """The data-stream study's network and pipeline cells in bit/s (about 11 Gbit/s on loopback), 20% slower
    under the CPU stressor."""
    cells = []
    for w, params, bit_s in (
        ("io.net", {"mode": "tcp_stream", "msg_bytes": 65536, "rate_bit_s": None}, 1.101e10),
        ("io.net", {"mode": "tcp_stream", "msg_bytes": 1048576, "rate_bit_s": None}, 1.2e10),
        ("stream.pipeline", {"block_bytes": 4096, "source": None, "link_bit_s": None}, 3.9e9),
        ("stream.pipeline", {"block_bytes": 65536, "source": None, "link_bit_s": None}, 6.2e9),
    ):

        def value(cond, rep, rng, bit_s=bit_s):
            return bit_s / (1.25 if cond == "cpu-stress" else 1.0) * (1 + rng.gauss(0, 0.01))

        def wdoc(v, rep, rng, w=w, params=params):
            return _worker_doc(w, params, {"goodput_bit_s": ("bit/s", True, v)})

        cells.append((w, params, "goodput_bit_s", "bit/s", True, value, wdoc))
    return _make_study_db(path, "stream", cells, n, seed)


MIBENCH = {"mibench.sha1": 48.7, "mibench.blowfish": 4.87, "mibench.crc32": 210.0}  # MB/s


@built_once
def make_satellite_db(path: Path, n: int = 8, seed: int = 7) -> Path:
    """The satellite-computer study's MiBench kernels in MB/s (4.87 MB/s for blowfish), 2x slower under the
    CPU stressor; every run keeps its rusage, so the report shows user, system and wall time per run."""
    cells = []
    for w, mb_s in MIBENCH.items():

        def value(cond, rep, rng, mb_s=mb_s):
            return mb_s / (2.0 if cond == "cpu-stress" else 1.0) * (1 + rng.gauss(0, 0.01))

        cells.append((w, {}, "mb_s", "MB/s", True, value, None))
    return _make_study_db(path, "andesite", cells, n, seed)


# two entries of one workload, each with its own threshold: crc32 at size small judged at 2%, at size large
# at 10% (docs/method.md "Threshold delta")
CRC = WorkloadSpec(
    name="crc32",
    family="mibench",
    summary="a kernel for threshold tests",
    runner="kern",
    params=(ParamSpec("size", "enum", "small", choices=("small", "large")),),
    metrics=(MetricSpec("mb_s", "MB/s", True),),
)
ENTRIES = """\
name = "entries"
[runs]
repetitions = 10
[[workloads]]
name = "crc32"
params = { size = "small" }
threshold = 0.02
[[workloads]]
name = "crc32"
params = { size = "large" }
threshold = 0.10
[[conditions]]
name = "cpu-stress"
kind = "stressor"
params = { stressor = "cpu" }
"""


def entries_plan(text: str = ENTRIES):
    """The typed plan of ENTRIES (or a variant of its text), parsed as `boardlab run` parses a plan."""
    from boardlab.campaign.plan import parse_plan

    return parse_plan(text, "entries.toml", {"crc32": CRC})


def make_entries_db(path: Path, plan, *, slower: float = 1.05, cell_facts: bool = True, n: int = 10) -> Path:
    """crc32 at size small and at size large, two entries of one workload in `plan` (its thresholds), at
    100 MB/s with 0.3% noise and `slower` x slower under the CPU stressor."""

    def value(cond, rep, rng):
        return 100.0 / (slower if cond == "cpu-stress" else 1.0) * (1 + rng.gauss(0, 0.003))

    cells = [("crc32", {"size": size}, "mb_s", "MB/s", True, value, None) for size in ("small", "large")]
    return _make_study_db(path, "entries", cells, n, 8, plan=plan, cell_facts=cell_facts)


# Two entries of one workload that differ in `lanes`; only the second compares its `size` values. Whatever
# pairs by workload name alone also pairs the first entry's cells.
PAIRS_CRC = dataclasses.replace(CRC, params=CRC.params + (ParamSpec("lanes", "int", 1, min=1, max=8),))
PAIRS = """\
name = "pairs"
[runs]
repetitions = 10
[[workloads]]
name = "crc32"
params = { size = ["small", "large"], lanes = 1 }
[[workloads]]
name = "crc32"
params = { size = ["small", "large"], lanes = 2 }
compare = "size"
[[conditions]]
name = "cpu-stress"
kind = "stressor"
params = { stressor = "cpu" }
"""


def pairs_plan(text: str = PAIRS):
    """The typed plan of PAIRS (or a variant of its text)."""
    from boardlab.campaign.plan import parse_plan

    return parse_plan(text, "pairs.toml", {"crc32": PAIRS_CRC})


def make_pairs_db(path: Path, plan, *, cell_facts: bool = True, conditions=None) -> Path:
    """The cells of PAIRS: size large 5% slower than small (100 MB/s, 0.3% noise), the stressor changes
    nothing. `conditions`: as `_make_study_db`'s (the plan's own, for one that declares others)."""

    def value(size):
        return lambda cond, rep, rng: 100.0 / (1.05 if size == "large" else 1.0) * (1 + rng.gauss(0, 0.003))

    cells = [
        ("crc32", {"size": size, "lanes": lanes}, "mb_s", "MB/s", True, value(size), None)
        for lanes in (1, 2)
        for size in ("small", "large")
    ]
    return _make_study_db(
        path, "pairs", cells, 10, 9, plan=plan, cell_facts=cell_facts, conditions=conditions
    )


FLAGS = (  # headless, offline, no state beyond the profile directory given
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The browser, installed from Debian when missing and we may (root with apt-get, as `make setup`
    does)."""
    import pytest

    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            "chromium is not installed and cannot be installed here (not root): apt-get install chromium"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
        env=env,
        capture_output=True,
        timeout=900,
    )
    if path := shutil.which("chromium"):
        return path
    pytest.skip("chromium is missing and `apt-get install chromium` did not provide it")


IO_URING_SETUP = 425  # the same number on every architecture's table (new syscalls since 5.1 share one)


def seccomp_denying(nr: int):
    """A preexec_fn installing a seccomp filter under which system call `nr` fails with EPERM, as a
    container runtime's default profile makes io_uring_setup fail: the real denial, not a stand-in. Only the
    child gets it (with no_new_privs, as unprivileged seccomp requires); it survives exec."""
    import ctypes

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    eperm = 1
    prog = (SockFilter * 4)(
        SockFilter(0x20, 0, 0, 0),  # BPF_LD|BPF_W|BPF_ABS: seccomp_data.nr
        SockFilter(0x15, 0, 1, nr),  # BPF_JMP|BPF_JEQ|BPF_K
        SockFilter(0x06, 0, 0, 0x00050000 | eperm),  # BPF_RET: SECCOMP_RET_ERRNO | EPERM
        SockFilter(0x06, 0, 0, 0x7FFF0000),  # BPF_RET: SECCOMP_RET_ALLOW
    )
    fprog = SockFprog(len(prog), prog)
    libc = ctypes.CDLL(None, use_errno=True)

    def install():  # pragma: no cover - runs in the child
        pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
        if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")

    return install


def kern_json_denying(kern: Path, nr: int, *args: str) -> tuple[int, dict]:
    """kern_json under a seccomp filter that denies system call `nr` (see seccomp_denying)."""
    proc = subprocess.run(
        [str(kern), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=seccomp_denying(nr),
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def make_campaign_db_bulk(path: Path, runs: int, *, seed: int = 1, board: str = "board-a") -> Path:
    """A campaign of about `runs` runs shaped as make_campaign_db's (its 34 cells, effects, 30 monitor samples
    per run, one invalid and one failed cell-run), written in one transaction with batched inserts: 10^5
    runs in seconds, for the tests of scale (the store's rows are those `Store.record_run` writes)."""
    from boardlab.store import packed

    rng = random.Random(seed)
    cells = _cells(tuple(CONDITIONS), True)
    n = max(2, runs // len(cells))
    specs = {c: ConditionSpec(c, "baseline" if c == "baseline" else "stressor", {},
                              None if c == "baseline" else "baseline") for c in CONDITIONS}  # fmt: skip
    with Store.open(path) as store:
        board_id = store.upsert_board(
            f"fp-{board}", board, {"model": "bulk test board", "online_cpus": [0, 1]}
        )
        cid = store.create_campaign(name="bulk", plan_hash=f"h-bulk-{seed}", plan_source="bulk.toml",
                                    plan_text=f'name = "bulk"\n[runs]\nrepetitions = {n}\n',
                                    board_id=board_id, boardlab_version="0.1.0", kern_version="0.1.0",
                                    root="/", environment={})  # fmt: skip
        ids = store.ensure_cells(cid, [c for c, *_ in cells], specs, {c.key: (u, h) for c, u, h, _ in cells})
        conn = store.conn
        next_id = (conn.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0] or 0) + 1
        conn.execute("BEGIN IMMEDIATE")
        seq = 0
        for rep in range(1, n + 1):
            run_rows, metric_rows, value_rows, series_rows = [], [], [], []
            for cell, unit, hib, base in cells:
                cost = CONDITIONS[cell.condition][0].get(cell.workload, 1.0)
                value = base * (1 / cost if hib else cost) * (1 + rng.gauss(0, 0.01))
                freq, temp = CONDITIONS[cell.condition][1], 45_000 + rep % 1000
                failed = cell.workload == "crc32" and cell.condition == "memcpy" and rep == 2
                invalid = cell.workload == "scimark.fft" and cell.condition == "baseline" and rep == 3
                run_id, seq = next_id + seq, seq + 1
                monitor = {"freq.policy0_khz_mean": float(freq), "temp.thermal_zone0_mc_max": float(temp),
                           "throttled": invalid, "worker.cpu_pct_mean": 99.5}  # fmt: skip
                run_rows.append((run_id, cid, ids[cell.key], rep, 1, seq, 1_700_000_000.0 + seq * 1.5,
                                 500_000_000, 1, int(failed), int(not failed),
                                 int(not failed and not invalid), "throttled" if invalid else None,
                                 None if failed else value, 3, 0,
                                 '{"utime_us": 1}', 0.0, 0, "idle", "{}", json.dumps(monitor, sort_keys=True),
                                 "worker crashed" if failed else None))  # fmt: skip
                if not failed:
                    metric_rows.append((run_id, cell.metric, unit, int(hib), value, value, value, value))
                    value_rows += [(run_id, "iteration_ns", 0, 1e6), (run_id, cell.metric, 0, value)]
                samples = [(s, k * 100_000_000, v) for k in range(5) for s, v in (
                    ("cpu0.busy_pct", 3.0 + rng.random()), ("cpu1.busy_pct", 99.0), ("worker.cpu_pct", 99.5),
                    ("worker.rss_kib", 2048.0), ("freq.policy0_khz", float(freq)),
                    ("temp.thermal_zone0:cpu_thermal_mc", float(temp + 50 * k)))]  # fmt: skip
                series_rows += [(run_id, *row) for row in packed.pack_summarized(samples)]
            conn.executemany(
                "INSERT INTO runs(id, campaign_id, cell_id, repetition, attempt, seq, started_unix_s,"
                " wall_ns, cpu, exit_code, ok, valid, invalid_reason, value, warmup_iterations,"
                " warmup_capped, rusage_json, gate_waited_s, gate_timed_out, gate_detail,"
                " condition_state_json, monitor_json, error) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                run_rows,
            )
            conn.executemany("INSERT INTO run_metrics VALUES (?,?,?,?,?,?,?,?)", metric_rows)
            conn.executemany("INSERT INTO run_values VALUES (?,?,?,?)", value_rows)
            conn.executemany(
                "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value, t_first_ns, t_last_ns,"
                " t_sum_ns, value_sum) VALUES (?,?,?,?,?,?,?,?,?,?)",
                series_rows,
            )
        # the campaign's counts of its runs, which every writer of runs keeps (store schema 14)
        valid = conn.execute("SELECT sum(valid) FROM runs WHERE campaign_id=?", (cid,)).fetchone()[0]
        conn.execute("UPDATE campaigns SET runs_stored = ?, runs_valid = ? WHERE id=?", (seq, valid, cid))
        conn.execute("COMMIT")
        store.set_campaign_status(cid, "complete", monitor={"cost_pct_of_core": 0.4}, notes={})
    return path


# ---- a run's summary columns (store migration 9) ----

# monitor summaries and rusages a store may hold (boardlab's own, an older boardlab's, a hand-edited file's),
# with the columns each must give
RUN_COLUMN_CASES = [
    ({"freq.a_khz_mean": 1000, "freq.b_khz_mean": 2000.0, "temp.z_mc_max": 45000, "throttled": False},
     {"utime_us": 7, "stime_us": 3}, RunColumns(1500.0, 45000.0, False, None, 7, 3)),
    ({"throttled": 1, "worker.cpu_pct_mean": 12}, {}, RunColumns(None, None, True, 12.0, None, None)),
    ({"throttled": "yes", "temp.a_mc_max": 1.5, "temp.b_mc_max": -3}, {"utime_us": 2.5, "stime_us": True},
     RunColumns(None, 1.5, True, None, None, None)),  # a truthy non-bool throttles, as it did
    ({"throttled": 0, "freq.a_khz_mean": "fast", "worker.cpu_pct_mean": None}, {"utime_us": 2**70},
     RunColumns(None, None, False, None, None, None)),  # what is not a number is not recorded
    ({"throttled": None, "freq.a_khz_mean": 1e308, "freq.b_khz_mean": 1e308}, {},
     RunColumns(None, None, None, None, None, None)),  # the mean overflows: not a finite number
    ({"throttled": [], "freq.a_khz_mean": True}, {}, RunColumns(None, None, False, None, None, None)),
]  # fmt: skip


CAMPAIGN_COLUMNS_11 = (
    "commit_sha",
    "commit_describe",
    "branch",
)  # what store schema 11 added (`run --commit`)
CAMPAIGN_COLUMNS_14 = ("runs_stored", "runs_valid")  # what store schema 14 added (a campaign's counts)
CAMPAIGN_COLUMNS_15 = ("runs_series",)  # what store schema 15 added (its count of runs with series)
# what a store taken back before schema 14 lacks: every count a campaign keeps of its runs
CAMPAIGN_COUNTS = (*CAMPAIGN_COLUMNS_14, *CAMPAIGN_COLUMNS_15)


# a run's worker result beside its row (alias r), as `w.worker_json`: store schema 16 keeps it in run_results
RESULT = " LEFT JOIN run_results w ON w.run_id = r.id"


def results_source(db) -> str:
    """The runs' worker results of the store `db` (a sqlite3 connection, or a Store of either dialect) as a
    table of (run_id, worker_json) to join `AS w`: run_results (store schema 16), else the runs' own rows."""
    if isinstance(db, sqlite3.Connection):
        apart = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_results'").fetchone() is not None
    else:
        apart = "run_results" in db.describe_schema()
    return "run_results" if apart else "(SELECT id AS run_id, worker_json FROM runs)"


def results_in_runs(conn) -> None:
    """The runs' worker results back in the runs' rows and run_results gone, as a store before schema 16
    kept them (in the caller's transaction)."""
    conn.execute("ALTER TABLE runs ADD COLUMN worker_json TEXT")
    conn.execute(
        "UPDATE runs SET worker_json = (SELECT w.worker_json FROM run_results w WHERE w.run_id = runs.id)"
    )
    conn.execute("DROP TABLE run_results")


def as_older_store(path, schema: int, campaign_columns: tuple[str, ...]) -> None:
    """The store at `path` as a boardlab of store `schema` left it: without the campaign columns later
    schemas added (`campaign_columns`), and its runs' results in their rows before schema 16."""
    conn = sqlite3.connect(path)
    with conn:
        for column in campaign_columns:
            conn.execute(f"ALTER TABLE campaigns DROP COLUMN {column}")
        if schema < 16:
            results_in_runs(conn)
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(schema),))
    conn.close()


def to_schema_8(src, dest, monitors: dict[int, tuple[dict, dict]] = {}):  # noqa: B006 (read only)
    """A copy of `src` as boardlab wrote it at store schema 8 (no run or monitor-row summaries), with some
    runs' JSON replaced by the given (monitor, rusage)."""
    shutil.copy(src, dest)
    with sqlite3.connect(dest) as conn:
        for run_id, (mon, ru) in monitors.items():
            conn.execute(
                "UPDATE runs SET monitor_json=?, rusage_json=? WHERE id=?",
                (json.dumps(mon), json.dumps(ru), run_id),
            )
        for column in _RUN_COLUMNS:
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        # and without what schema 10 added: the monitor rows' summaries and the runs' index by start
        for column in ("t_first_ns", "t_last_ns", "t_sum_ns", "value_sum"):
            conn.execute(f"ALTER TABLE run_series DROP COLUMN {column}")
        conn.execute("DROP INDEX IF EXISTS runs_by_campaign_start")
        for column in CAMPAIGN_COLUMNS_11:  # and without schema 11's campaign commit
            conn.execute(f"ALTER TABLE campaigns DROP COLUMN {column}")
        conn.execute("DROP INDEX IF EXISTS artifacts_by_campaign")  # and schema 12's index
        for column in CAMPAIGN_COUNTS:  # and schema 14's and 15's counts
            conn.execute(f"ALTER TABLE campaigns DROP COLUMN {column}")
        results_in_runs(conn)  # and schema 16's results apart
        conn.execute("UPDATE meta SET value='8' WHERE key='schema_version'")
    conn.close()
    return dest


def damaged_copy(src, dest) -> int:
    """A copy of the store `src` at `dest` whose last run's value is a word, as a damaged file holds one (the
    store's full check names it); returns that run's row id."""
    shutil.copy(src, dest)
    with sqlite3.connect(dest) as conn:
        rowid = conn.execute("SELECT max(rowid) FROM runs").fetchone()[0]
        conn.execute("UPDATE runs SET value='fast' WHERE rowid=?", (rowid,))
    conn.close()
    return int(rowid)


# ---- a store's file, damaged or grown as a lab's (the writer's open check, store/filecheck.py) ----


def smash_pages(db: Path, *names: str) -> None:
    """Overwrites every page of the named tables and indexes with 0xff bytes, nothing else (pytest.skip
    where this SQLite has no dbstat table to find them)."""
    import pytest

    with sqlite3.connect(db) as c:
        try:
            marks = ",".join("?" * len(names))
            pages = c.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks})", names).fetchall()
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find the pages of a table")
        page_size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    assert pages, names
    with open(db, "r+b") as f:
        for (page,) in pages:
            f.seek((page - 1) * page_size)
            f.write(b"\xff" * page_size)


def header_pages(db: Path) -> tuple[int, int]:
    """(page size, page count) as the file's SQLite header gives them."""
    with open(db, "rb") as f:
        head = f.read(100)
    page = int.from_bytes(head[16:18], "big")
    return (65536 if page == 1 else page), int.from_bytes(head[28:32], "big")


def grow_sparse(db: Path, size: int) -> None:
    """The store's file made `size` bytes long without writing them: a sparse tail of zeros, which SQLite
    never reads (its header counts the pages in use), as large as a lab's store at no cost in disk or time;
    or cut to `size` when shorter."""
    assert not os.path.exists(f"{db}-wal") or os.path.getsize(f"{db}-wal") == 0, "a store with its log folded"
    os.truncate(db, size)


# Every study's store of the suite, by name: the reports that must not change by one byte (the golden
# report test) and that a streamed report must reproduce (test_report_streamed_cells).
REPORT_STORES = {
    "campaign": make_campaign_db,
    "rt": make_rt_db,
    "ai": make_ai_db,
    "services": make_services_db,
    "stream": make_stream_db,
    "satellite": make_satellite_db,
}


def sweep_parts(khz: dict[str, int]):
    """The parts of a governor sweep cell's condition as the sweep declares them (`governor.sweep.
    condition_tables`): userspace at these kHz per policy."""
    from boardlab.model.facts import condition_parts

    params = {"governor": "userspace", "policies": list(khz), "frequencies_khz": khz}
    return condition_parts({"kind": "governor", "params": params})
