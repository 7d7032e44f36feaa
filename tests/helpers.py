"""Shared test helpers: the installed boardlab CLI and boardlab-kern, run as a user runs them."""

from __future__ import annotations

import json
import os
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
