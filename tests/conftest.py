"""Fixtures shared by every test; plain helpers live in helpers.py."""

from __future__ import annotations

import gc
import os
import platform
import re
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from pg import pg_server, pg_url  # noqa: F401  (a private PostgreSQL server: tests/pg.py)


def pytest_configure(config):
    """The Ctrl-C tests test boardlab, not the shell that started the suite: run as a background job of a
    shell without job control (a script's `make test &`, nohup, a chroot job), the suite inherits SIGINT
    ignored, which would pass through exec to every process it starts. A handler is reset to the default in
    each child at exec; SIG_IGN is not."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    private_state_dirs(config)
    if os.environ.get("BOARDLAB_TEST_UNIT") == "1" and not _starts_workers(config):
        warm_kernel_catalog()
        platform.processor()  # runs `uname -p` once, then cached: an xdist worker's report header reads it
        no_processes()


def _starts_workers(config) -> bool:
    """This is pytest-xdist's controller with workers to start (each worker runs this hook and guards
    itself): the controller runs no test, and must fork its workers."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def warm_kernel_catalog() -> None:
    """Each process of the unit tier, before any test: boardlab-kern's catalog (`--list --json`), which the
    workloads' specs are made from, read once and kept in this process (native.kernel_catalog's cache)."""
    from boardlab.errors import BoardlabError
    from boardlab.native import kernel_catalog

    try:
        kernel_catalog()
    except BoardlabError:  # no native part: the tests that need it fail and say why
        pass


class SpawnedInUnitTier(AssertionError):
    """A test of the unit tier started a process (`make test-unit`): mark its file `spawns`."""


def no_processes() -> None:
    """`make test-unit` (BOARDLAB_TEST_UNIT=1, run with -m "not spawns"): every way the standard library forks
    or executes fails, from the first fixture on, so the quick tier stays quick and the `spawns` marks stay
    true (a test that starts a process and is not marked fails here)."""
    import _posixsubprocess
    import subprocess

    def refuse(*_args, **_kwargs):
        raise SpawnedInUnitTier("a test of the unit tier starts a process: mark its file `spawns`")

    for owner, name in ((os, "fork"), (os, "forkpty"), (os, "posix_spawn"), (os, "posix_spawnp"),
                        (_posixsubprocess, "fork_exec"), (subprocess, "_fork_exec"),
                        (subprocess.Popen, "_execute_child")):  # fmt: skip
        if hasattr(owner, name):
            setattr(owner, name, refuse)


# tests/fixtures holds boards' sysfs trees and program outputs, no test: its 400 directories, each looked
# at for a conftest.py, were 4 s of every collection (each xdist worker's, the quiet run's)
collect_ignore = ["fixtures"]

# a file whose every test starts a process: `pytestmark = pytest.mark.spawns` at the start of a line
SPAWNS_FILE = re.compile(rb"^pytestmark = pytest\.mark\.spawns\b", re.MULTILINE)


def _deselects_spawns(markexpr: str) -> bool:
    """-m is a plain conjunction (no `or`, no parentheses) with `not spawns` in it: it selects no test
    marked spawns, whatever its other marks."""
    if " or " in f" {markexpr} " or "(" in markexpr:
        return False
    return "not spawns" in (c.strip() for c in markexpr.split(" and "))


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """Files a run would deselect whole are not imported. `make test-unit` (-m "not spawns ..."): the files
    marked spawns (their imports, onnxruntime, LiteRT, the governor lab, were 1.5 s of its collection).
    `make test`'s second part (-m quiet): the files that never name the mark (14 s of its collection)."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    markexpr = (config.option.markexpr or "").strip()
    if markexpr == "quiet":
        return True if b"quiet" not in collection_path.read_bytes().lower() else None
    if os.environ.get("BOARDLAB_TEST_UNIT") == "1" and _deselects_spawns(markexpr):
        return True if SPAWNS_FILE.search(collection_path.read_bytes()) else None
    return None


def pytest_collection_finish(session) -> None:
    """Each process of the unit tier keeps what collection made (every module, numpy, scipy, hypothesis, the
    1,700 test items) to its end: moved out of the cyclic collector's reach, its full passes (about 20 in
    a run) no longer walk it each time (1.4 s of the tier)."""
    if os.environ.get("BOARDLAB_TEST_UNIT") == "1":
        gc.freeze()


def private_state_dirs(config) -> None:
    """Every test process (the xdist controller and each worker run this hook) and everything it starts
    (module and session fixtures' campaigns, processes started over ssh with this environment) journals and
    locks in a directory of its own from the first fixture on: a campaign running on this machine (the
    user's, under the default state directory) must not make the suite's campaigns wait for its system lock.
    The autouse fixture below narrows it further to one directory per test.

    Their temporary files go there too (TMPDIR), removed with it: tests SIGKILL boardlab on purpose, and what
    it had in the machine's /tmp (a load's scratch directory, ingest's) stayed there, a few directories a
    run. This process keeps the TMPDIR it started with (mkdtemp below fixes tempfile's choice first); xdist's
    workers inherit the controller's, kept short for the Unix sockets made below it."""
    base = Path(tempfile.mkdtemp(prefix=f"boardlab-tests-{os.getpid()}-"))
    config.boardlab_private_base = base
    os.environ["BOARDLAB_STATE_DIR"] = str(base / "state")
    os.environ["XDG_CACHE_HOME"] = str(base / "cache")
    os.environ["BOARDLAB_TESTS_BASE"] = str(base)  # the stores helpers.built_once keeps for this process
    if "PYTEST_XDIST_WORKER" not in os.environ:
        # as /tmp is: tests run boardlab, initdb and tools as unprivileged users too, who make files there
        base.chmod(0o711)
        (base / "tmp").mkdir()
        (base / "tmp").chmod(0o1777)
        os.environ["TMPDIR"] = str(base / "tmp")


def pytest_unconfigure(config):
    base = getattr(config, "boardlab_private_base", None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def kern() -> Path:
    from boardlab.native import kern_path

    return kern_path()


@pytest.fixture(scope="session")
def netns() -> None:
    """Skips the test, with the probe's reason, where `ip netns` cannot make a namespace (helpers.py)."""
    from helpers import netns_unavailable

    reason = netns_unavailable("ip")
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def unshare_net() -> None:
    """Skips the test, with the probe's reason, where `unshare -n` cannot make a namespace."""
    from helpers import netns_unavailable

    reason = netns_unavailable("unshare")
    if reason:
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def private_restore_journal(request, monkeypatch):
    """Every test (and every boardlab it starts) journals into its own directory, never the user's: a
    campaign running on this machine must neither block a test nor be touched by one.

    A directory of mkdtemp's below the process's own, not tmp_path: pytest numbers each tmp_path by listing
    every earlier test's directory, which made this fixture 4.5 ms of each of 1,000 tests that asked for
    nothing else (6.4 s against 2.0 s)."""
    own = Path(tempfile.mkdtemp(dir=request.config.boardlab_private_base))
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(own / "boardlab-state"))
    # nor its cache directory (boardlab-kern's catalog is cached there)
    monkeypatch.setenv("XDG_CACHE_HOME", str(own / "cache"))
