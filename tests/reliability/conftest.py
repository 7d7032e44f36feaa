"""Fixtures of the reliability suite: a working directory whose path has a space, a small real campaign,
and a private mount namespace (root, or an unprivileged user namespace) for tmpfs mounts."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability.util import namespace_prefix, write_plan

from helpers import run_cli


@pytest.fixture
def lab(tmp_path) -> Path:
    """A working directory whose path has a space, as a user's may."""
    d = tmp_path / "my lab"
    d.mkdir()
    return d


@pytest.fixture
def results_db(lab) -> Path:
    """A results database with one finished campaign of 2 runs, made by a real `boardlab run`."""
    db = lab / "lab.db"
    proc = run_cli("run", str(write_plan(lab / "plan.toml")), "--db", str(db), "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stderr
    return db


@pytest.fixture(scope="session")
def mount_ns() -> list[str]:
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("needs a private mount namespace (root, or unprivileged user namespaces) for a tmpfs")
    return prefix
