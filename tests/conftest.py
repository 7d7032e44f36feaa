"""Fixtures shared by every test; plain helpers live in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kern() -> Path:
    from boardlab.native import kern_path

    return kern_path()
