"""Locating and calling boardlab-kern, the native kernel executable installed inside this package."""

from __future__ import annotations

import json
import os
import subprocess
from functools import lru_cache
from pathlib import Path

from boardlab.errors import BoardlabError

KERN_NAME = "boardlab-kern"
KERN_SCHEMA = 1


def kern_path() -> Path:
    """The installed boardlab-kern beside this module; BOARDLAB_KERN overrides it (a cross-built binary)."""
    override = os.environ.get("BOARDLAB_KERN")
    path = Path(override) if override else Path(__file__).resolve().parent / KERN_NAME
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
