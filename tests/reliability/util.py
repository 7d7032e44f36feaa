"""Helpers of the reliability suite (fixtures in conftest.py): plans of the noop kernel, the CLI's error
contract, and a private mount namespace for the disk-full and read-only cases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PLAN = """\
name = {name}
[runs]
repetitions = {reps}
iterations = {iterations}
{runs_extra}
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
{workload_extra}
{conditions}
"""


def write_plan(
    path: Path,
    *,
    name: str = '"rel"',
    reps: int = 2,
    iterations: int = 3,
    runs_extra: str = "",
    workload_extra: str = "",
    conditions: str = "",
) -> Path:
    path.write_text(
        PLAN.format(
            name=name,
            reps=reps,
            iterations=iterations,
            runs_extra=runs_extra,
            workload_extra=workload_extra,
            conditions=conditions,
        )
    )
    return path


def stored_runs(db: Path) -> int:
    import sqlite3
    from urllib.parse import quote

    with sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True) as c:
        return c.execute("SELECT count(*) FROM runs").fetchone()[0]


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    """The CLI's contract for bad input and runtime failures: the exit code, no traceback, and one line
    that names the place (each needle must appear in it)."""
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def namespace_prefix() -> list[str] | None:
    """How to enter a private mount namespace where mount(2) is allowed: as root, `unshare -m`; otherwise
    an unprivileged user namespace (`unshare -Urm`) when the kernel allows one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    prefix = [unshare, "-m"] if os.geteuid() == 0 else [unshare, "-Urm"]
    probe = subprocess.run(
        [
            *prefix,
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k boardlab-probe /mnt 2>/dev/null || "
            "mount -t tmpfs -o size=64k boardlab-probe /tmp",
        ],
        capture_output=True,
        timeout=30,
    )
    return prefix if probe.returncode == 0 else None


def in_namespace(prefix: list[str], script: str, env: dict | None = None, timeout: float = 180):
    """Runs a shell script in a private mount namespace: its mounts vanish with it. Paths reach the
    script through environment variables, so spaces in them need no quoting beyond "$VAR"."""
    return subprocess.run(
        [*prefix, "sh", "-ec", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PY": sys.executable, **(env or {})},
    )
