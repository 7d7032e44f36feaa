"""Locating and calling boardlab-kern, the native kernel executable installed inside this package."""

from __future__ import annotations

import hashlib
import json
import os
import re
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


CATALOG_CACHE_SCHEMA = 2  # 2: with the sha256 of its catalog
_SCRIPT_HEAD_BYTES = 4096  # a wrapper script names what it runs near its top
_SCRIPT_PATHS = re.compile(rb"\"(/[^\"]+)\"|'(/[^']+)'|(/[^\s\"'$;|&<>()]+)")


def cache_dir() -> Path:
    """boardlab's own cache directory: $XDG_CACHE_HOME/boardlab, else ~/.cache/boardlab."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "boardlab"


def _file_identity(path: Path) -> list:
    st = os.stat(path)
    return [str(path), st.st_size, st.st_mtime_ns, st.st_ino]


def kern_identity(path: Path) -> dict:
    """What `--list --json` depends on: the executable (path, size, mtime, inode); for a wrapper script (a
    cross-built binary under qemu-user), also every executable file it names by absolute path, so that
    rebuilding the binary behind an unchanged wrapper is seen; and the running kernel, because a kernel may
    check at run time what the kernel offers (crypto.afalg's AF_ALG sockets)."""
    with open(path, "rb") as f:
        head = f.read(_SCRIPT_HEAD_BYTES)
    named = []
    if head.startswith(b"#!"):  # quoted paths (they may hold spaces), then bare ones
        tokens = {t for group in _SCRIPT_PATHS.findall(head) for t in group if t}
        for token in sorted(tokens):
            target = Path(os.fsdecode(token))
            if target.is_file() and os.access(target, os.X_OK):
                named.append(_file_identity(target))
    uname = os.uname()
    return {"kern": _file_identity(path), "named": named, "kernel": [uname.release, uname.version]}


def _cache_file(path: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(str(path))).hexdigest()[:16]
    return cache_dir() / f"kern-catalog-{digest}.json"


def _cached_catalog(path: Path, identity: dict) -> dict | None:
    """The cached catalog of this very build, or None (absent, stale, unreadable: then the binary is run)."""
    try:
        doc = json.loads(_cache_file(path).read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != CATALOG_CACHE_SCHEMA
        or doc.get("identity") != identity
    ):
        return None
    catalog = doc.get("catalog")
    if not isinstance(catalog, dict) or doc.get("sha256") != _catalog_sum(catalog):
        return None  # damaged where the file still parses: its readers would fail on it (internal errors)
    return catalog if catalog.get("schema") == KERN_SCHEMA else None


def _catalog_sum(catalog: dict) -> str:
    return hashlib.sha256(json.dumps(catalog, sort_keys=True).encode()).hexdigest()


def _store_catalog(path: Path, identity: dict, catalog: dict) -> None:
    """Written atomically (a temporary file renamed over the old one) into a directory only the user can
    read; a cache that cannot be written (a read-only home) is simply not kept."""
    import tempfile

    target = _cache_file(path)
    try:
        base = target.parent.parent
        if not base.exists():
            os.makedirs(base, mode=0o700, exist_ok=True)
        if not target.parent.exists():
            os.mkdir(target.parent, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".kern-catalog-", dir=target.parent)
        try:
            with os.fdopen(fd, "w") as f:
                doc = {"schema": CATALOG_CACHE_SCHEMA, "identity": identity, "catalog": catalog}
                json.dump({**doc, "sha256": _catalog_sum(catalog)}, f)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune_catalogs(target)
    except OSError:
        pass


def _prune_catalogs(kept: Path) -> None:
    """Removes the cached catalogs of builds whose binary is gone (a deleted checkout, a removed build
    directory): each build path has an entry, and they would pile up. Run only when a catalog is stored (a
    new or rebuilt binary); an entry it cannot read as its own, or whose binary is there, is left alone."""
    for entry in kept.parent.glob("kern-catalog-*.json"):
        if entry == kept or not entry.is_file() or entry.is_symlink():
            continue
        try:
            binary = json.loads(entry.read_text())["identity"]["kern"][0]
        except (OSError, ValueError, TypeError, KeyError, IndexError):
            continue
        if isinstance(binary, str) and os.path.isabs(binary) and not os.path.lexists(binary):
            entry.unlink(missing_ok=True)


def _run_list(path: Path) -> dict:
    out = subprocess.run([str(path), "--list", "--json"], capture_output=True, text=True)
    try:
        catalog = json.loads(out.stdout)
    except json.JSONDecodeError:  # a broken binary must not look like an empty catalog
        raise BoardlabError(
            f"{path} --list --json failed (exit {out.returncode}): {out.stderr.strip()}"
        ) from None
    if catalog.get("schema") != KERN_SCHEMA:
        raise BoardlabError(f"{path} speaks schema {catalog.get('schema')}, expected {KERN_SCHEMA}")
    return catalog


@lru_cache(maxsize=1)
def kernel_catalog() -> dict:
    """The kernels, their parameters and metrics, as `boardlab-kern --list --json` declares them. Kept in the
    user's cache directory, keyed by the build (kern_identity): running the binary costs a few ms here but
    far more on a slow board, and `list`, `info` and `run` each need the catalog."""
    path = kern_path()
    try:
        identity = kern_identity(path)
    except OSError:
        return _run_list(path)
    catalog = _cached_catalog(path, identity)
    if catalog is None:
        catalog = _run_list(path)
        _store_catalog(path, identity, catalog)
    return catalog
