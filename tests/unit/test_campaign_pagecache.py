"""A cold page cache before each run (runs.drop_caches): dropped as root, else the workload's own files
evicted, and the run's state says which happened."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from boardlab.campaign import pagecache
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

from helpers import SYSFS, as_nobody, shared_tmp_dir

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

COMPRESS = WorkloadSpec(
    name="compress.demo",
    family="compression",
    summary="a workload that reads an input file",
    runner="kern",
    params=(
        ParamSpec("input", "str", None, help="the file to compress"),
        ParamSpec("level", "int", "6"),
        ParamSpec("codec", "enum", "xz", choices=("xz", "zstd")),
    ),
    metrics=(MetricSpec("mb_s", "MB/s", True),),
)


def test_the_workloads_files_are_its_string_parameters_that_name_a_file(tmp_path):
    data = tmp_path / "corpus.bin"
    data.write_bytes(b"x" * 4096)
    assert pagecache.workload_files(COMPRESS, {"input": str(data), "level": 9}) == (str(data),)
    assert pagecache.workload_files(COMPRESS, {"input": str(tmp_path / "missing")}) == ()
    assert pagecache.workload_files(COMPRESS, {"input": str(tmp_path)}) == ()  # a directory is not a file
    assert pagecache.workload_files(COMPRESS, {}) == ()  # no default input


def test_as_root_the_whole_page_cache_is_dropped(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root, symlinks=True)
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/sys/vm/drop_caches").write_text("0\n")
    assert pagecache.make_cold(root, ()) == {"page_cache": "dropped"}
    assert (root / "proc/sys/vm/drop_caches").read_text() == "3"


def resident_pages(path) -> int | None:
    """Pages of `path` in the page cache, from util-linux fincore; None when it cannot tell."""
    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(["fincore", "-n", "-b", "-o", "PAGES", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None


def test_without_drop_caches_the_workloads_files_are_evicted(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root, symlinks=True)  # this tree has no proc/sys/vm/drop_caches
    data = tmp_path / "corpus.bin"
    data.write_bytes(os.urandom(1 << 20))  # dirty pages: written back (fsync) before they can go
    state = pagecache.make_cold(root, (str(data),))
    assert state == {
        "page_cache": "evicted 1 file",
        "page_cache_files": [str(data)],
        "page_cache_not_dropped": f"no {root}/proc/sys/vm/drop_caches",
    }
    if resident_pages(data) is not None and not on_tmpfs(tmp_path):  # tmpfs pages cannot leave the cache
        assert resident_pages(data) == 0


def on_tmpfs(path) -> bool:
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True).stdout
    return fs.strip() == "tmpfs"


def test_nothing_to_drop_and_nothing_to_evict_is_unsupported_with_the_reason(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root, symlinks=True)
    assert pagecache.make_cold(root, ()) == {
        "page_cache": f"unsupported: cannot drop the page cache (no {root}/proc/sys/vm/drop_caches) "
        "and the workload reads no file"
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to an unprivileged user, which needs root")
def test_a_file_the_user_cannot_read_is_reported_not_evicted():
    base = shared_tmp_dir()
    try:
        root = base / "bbb"
        shutil.copytree(SYSFS / "bbb", root, symlinks=True)
        ok, secret = base / "ok.bin", base / "secret.bin"
        ok.write_bytes(b"a" * 100)
        secret.write_bytes(b"b" * 100)
        secret.chmod(0o600)
        state = as_nobody(lambda: pagecache.make_cold(root, (str(ok), str(secret))))
    finally:
        shutil.rmtree(base)
    assert state["page_cache"] == "evicted 1 file" and state["page_cache_files"] == [str(ok)]
    assert state["page_cache_not_evicted"] == [f"{secret}: Permission denied"]
