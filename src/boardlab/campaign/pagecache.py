"""A cold page cache before each run (`runs.drop_caches = true`), and a record of how it was made cold.

Kind-independent on purpose: a cell has exactly one condition, so a cache *condition* could not be combined
with a governor or a stressor; a cold cache is a property of how every run is prepared, like the gate.
As root the whole page cache is dropped (sync, then 3 > /proc/sys/vm/drop_caches); without root the
workload's own input files are evicted with posix_fadvise(POSIX_FADV_DONTNEED), which any user who can read
them may do. The run's state says which happened: `dropped`, `evicted N files`, or `unsupported: <reason>`.
"""

from __future__ import annotations

import os
from typing import Any

from boardlab.errors import MeasurementError
from boardlab.model.workload import WorkloadSpec
from boardlab.platform import pagecache
from boardlab.platform.sysroot import RootLike


def workload_files(spec: WorkloadSpec, params: dict[str, Any]) -> tuple[str, ...]:
    """The files a run of `spec` reads: the values of its string parameters (given, else the default) that
    name an existing regular file, such as a compression kernel's `input=` or a model file."""
    files = []
    for p in spec.params:
        if p.type != "str":
            continue
        value = params.get(p.name, p.default)
        if isinstance(value, str) and value and os.path.isfile(value):
            files.append(os.path.abspath(value))
    return tuple(dict.fromkeys(files))


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def make_cold(root: RootLike, files: tuple[str, ...]) -> dict[str, Any]:
    """Drops the page cache when this user may, else evicts `files`; returns what the run records."""
    reason = pagecache.drop_unsupported(root)
    if reason is None:
        try:
            pagecache.drop_page_cache(root)
            return {"page_cache": "dropped"}
        except MeasurementError as exc:  # e.g. a read-only /proc/sys in a container, even for root
            reason = str(exc)
    if not files:
        return {
            "page_cache": f"unsupported: cannot drop the page cache ({reason}) and the workload reads no file"
        }
    evicted, failed = [], []
    for path in files:
        try:
            pagecache.evict_file(path)
            evicted.append(path)
        except OSError as exc:
            failed.append(f"{path}: {exc.strerror or exc}")
    if not evicted:
        return {
            "page_cache": f"unsupported: cannot drop the page cache ({reason}) nor evict {'; '.join(failed)}"
        }
    state: dict[str, Any] = {
        "page_cache": f"evicted {_files(len(evicted))}",
        "page_cache_files": evicted,
        "page_cache_not_dropped": reason,
    }
    if failed:
        state["page_cache_not_evicted"] = failed
    return state
