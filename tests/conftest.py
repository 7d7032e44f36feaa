"""Fixtures shared by every test; plain helpers live in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pg import pg_server, pg_url  # noqa: F401  (a private PostgreSQL server: tests/pg.py)


@pytest.fixture(scope="session")
def kern() -> Path:
    from boardlab.native import kern_path

    return kern_path()


@pytest.fixture(autouse=True)
def private_restore_journal(tmp_path, monkeypatch):
    """Every test (and every boardlab it starts) journals into its own directory, never the user's: a
    campaign running on this machine must neither block a test nor be touched by one."""
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(tmp_path / "boardlab-state"))
