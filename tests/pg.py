"""A private PostgreSQL server for tests: initdb + pg_ctl on 127.0.0.1, a free port and a private socket
directory, run as the test's user (or as `postgres` under root: initdb refuses root), stopped by PID.

tests/conftest.py imports the fixtures, so any test can ask for them:

    def test_x(pg_url):            # a new empty database on the session's server
        Store.open(pg_url)

`pg_server` is one server per test session; `pg_url` gives each test its own database. Without the server
binaries (/usr/lib/postgresql/*/bin) or psycopg the tests skip and say which is missing."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def pg_bindir() -> Path | None:
    """The newest installed server's bin directory (Debian: /usr/lib/postgresql/VERSION/bin)."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    USER = "boardlab"  # the cluster's superuser (initdb -U), whatever OS user runs the server

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="boardlab-pg-"))
        self.data = self.dir / "data"
        self.sockets = self.dir / "sockets"
        self.log = self.dir / "server.log"
        self.port = 0
        self.pid: int | None = None
        self._names = itertools.count(1)
        self._run_as: str | None = None
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.dir, ignore_errors=True)
                pytest.skip(
                    "running as root and no `postgres` user to run PostgreSQL as (apt-get install postgresql)"
                )
            self._run_as = "postgres"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self._run_as,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.dir,
            check=False,
        )

    def start(self) -> None:
        self.sockets.mkdir()
        if self._run_as:
            self.dir.chmod(0o755)
            shutil.chown(self.dir, self._run_as)
            shutil.chown(self.sockets, self._run_as)
        out = self._run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", self.USER, "-E", "UTF8", "--no-sync"
        )
        if out.returncode:
            raise RuntimeError(f"initdb failed: {out.stderr.strip()}")
        for _ in range(5):  # the free port may be taken between the probe and the server's bind
            self.port = _free_port()
            # pg_ctl hands -o to a shell: the socket directory is quoted (a TMPDIR may hold spaces); a path
            # too long for a Unix socket name leaves the server on TCP only
            sockets = (
                str(self.sockets) if len(str(self.sockets)) < 90 and "'" not in str(self.sockets) else ""
            )
            opts = (
                f"-h 127.0.0.1 -p {self.port} -k '{sockets}' -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=40"
            )
            out = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start"
            )
            if out.returncode == 0:
                self.pid = int((self.data / "postmaster.pid").read_text().split()[0])
                return
        log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {out.stderr.strip()} {log}")

    def stop(self) -> None:
        try:
            if self.pid is not None:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop")
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    try:
                        os.kill(self.pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.05)
                else:  # pg_ctl could not stop it: the postmaster by its PID (its children follow it)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
                self.pid = None
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, dbname: str = "postgres", user: str | None = None) -> str:
        return f"postgresql://{user or self.USER}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self, *, owner: str | None = None) -> str:
        """A new empty database, as a URL; with `owner`, owned by that role (an ordinary one: LOGIN, no
        superuser, made when missing), the URL logging in as it: what a lab gives boardlab."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            if owner is not None:
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (owner,)).fetchone()
                if not exists:
                    conn.execute(f"CREATE ROLE {owner} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
                conn.execute(f"CREATE DATABASE {name} OWNER {owner}")
            else:
                conn.execute(f"CREATE DATABASE {name}")
        return self.url(name, owner)


@pytest.fixture(scope="session")
def pg_server():
    bindir = pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin): apt-get install postgresql"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 not installed: pip install 'boardlab[fleet]'")
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A new empty database on the session's server, as a postgresql:// URL."""
    return pg_server.new_database()
