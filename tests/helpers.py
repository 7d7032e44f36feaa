"""Shared test helpers: the installed boardlab CLI and boardlab-kern, run as a user runs them."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import GateResult, MetricResult, RunResult
from boardlab.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
SYSFS = FIXTURES / "sysfs"


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Runs `boardlab ARGS` in a fresh interpreter, exactly as the console script does."""
    return subprocess.run(
        [sys.executable, "-m", "boardlab", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def run_kern(kern: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
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


def kern_json(kern: Path, *args: str) -> tuple[int, dict]:
    proc = run_kern(kern, *args, "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


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


def tagged_env(tag: str, **extra: str) -> dict:
    """Every process boardlab starts inherits its environment, so a unique variable finds exactly ours."""
    return {**os.environ, "BOARDLAB_TEST_TAG": tag, **extra}


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
) -> Path:
    """A stored campaign with known effects: per workload and condition, values = baseline value x the
    condition's cost factor (inverted for higher-is-better metrics) x 1% noise; `speed` scales a whole board
    (2.0 = twice as fast). crc32 drifts with run order under the baseline; one run is invalid, one failed."""
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
        cid = store.create_campaign(
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
        ids = store.ensure_cells(
            cid, [c for c, *_ in cells], specs, {c.key: (u, hib) for c, u, hib, _ in cells}
        )
        t0 = 1_700_000_000.0
        seq = 0
        for rep in range(1, n + 1):
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
