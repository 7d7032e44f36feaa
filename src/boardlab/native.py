"""Locating and calling boardlab-kern, the native kernel executable installed inside this package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from boardlab.errors import BoardlabError

KERN_NAME = "boardlab-kern"
KERN_SCHEMA = 1


def kern_path() -> Path:
    """The boardlab-kern to run: BOARDLAB_KERN if set (a cross-built binary, or a wrapper running one under
    qemu), else the one built with this package beside this module, else the one a board bundle's installer
    put beside the venv's `boardlab` script (its wheel is pure Python)."""
    override = os.environ.get("BOARDLAB_KERN")
    if override:
        path = Path(override)
    else:
        path = Path(__file__).resolve().parent / KERN_NAME
        bundled = Path(sys.prefix) / "bin" / KERN_NAME
        if not path.is_file() and bundled.is_file():
            path = bundled
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BoardlabError(
            f"{path} is missing or not executable: boardlab was not built with its native part; "
            "reinstall it with `make setup` (or `pip install .`)"
        )
    return path


@lru_cache(maxsize=1)
def kernel_catalog() -> dict:
    """The kernels, their parameters and metrics, as `boardlab-kern --list --json` declares them."""
    out = subprocess.run([str(kern_path()), "--list", "--json"], capture_output=True, text=True)
    try:
        catalog = json.loads(out.stdout)
    except json.JSONDecodeError:  # a broken binary must not look like an empty catalog
        raise BoardlabError(
            f"{kern_path()} --list --json failed (exit {out.returncode}): {out.stderr.strip()}"
        ) from None
    if catalog.get("schema") != KERN_SCHEMA:
        raise BoardlabError(f"{kern_path()} speaks schema {catalog.get('schema')}, expected {KERN_SCHEMA}")
    return catalog
