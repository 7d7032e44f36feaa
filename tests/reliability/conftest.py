"""Fixtures of the reliability suite: a working directory whose path has a space, a small real campaign,
and a private mount namespace (root, or an unprivileged user namespace) for tmpfs mounts."""

from __future__ import annotations

import os
import shutil
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


@pytest.fixture(scope="session")
def finished_campaign(tmp_path_factory) -> Path:
    """A directory (its path has a space) holding plan.toml and lab.db, one finished campaign of 2 runs made
    by a real `boardlab run`: once per session, journalling into a state directory of its own."""
    base = tmp_path_factory.mktemp("finished campaign")
    lab = base / "my lab"
    lab.mkdir()
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(base / "state"), "XDG_CACHE_HOME": str(base / "cache")}
    db = lab / "lab.db"
    proc = run_cli(
        "run", str(write_plan(lab / "plan.toml")), "--db", str(db), "--quiet", timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return lab


@pytest.fixture
def results_db(lab, finished_campaign) -> Path:
    """A results database with one finished campaign of 2 runs, made by a real `boardlab run`, and its plan:
    the session's (finished_campaign), copied file for file into this test's own directory, which it may
    damage (each test used to run the same campaign again, a second of the suite's minutes apiece)."""
    for f in finished_campaign.iterdir():
        shutil.copy2(f, lab / f.name)
    return lab / "lab.db"


@pytest.fixture(scope="session")
def mount_ns() -> list[str]:
    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("needs a private mount namespace (root, or unprivileged user namespaces) for a tmpfs")
    return prefix
