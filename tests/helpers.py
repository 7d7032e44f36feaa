"""Shared test helpers: the installed boardlab CLI and boardlab-kern, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
SYSFS = FIXTURES / "sysfs"


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Runs `boardlab ARGS` in a fresh interpreter, exactly as the console script does."""
    return subprocess.run(
        [sys.executable, "-m", "boardlab", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def run_kern(kern: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(kern), *args], capture_output=True, text=True, timeout=timeout)


def kern_json(kern: Path, *args: str) -> tuple[int, dict]:
    proc = run_kern(kern, *args, "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}
