"""`boardlab list` and `info` read boardlab-kern's catalog from the user's cache while its build is unchanged,
and run `boardlab-kern --list` again when it changes (a rebuilt binary, or one behind a wrapper script)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from boardlab import native
from boardlab.native import kern_path

from helpers import run_cli


def wrapper(tmp_path: Path, kern: Path) -> tuple[Path, Path]:
    """A BOARDLAB_KERN script that counts its `--list` invocations, then runs `kern`."""
    count = tmp_path / "list-calls"
    script = tmp_path / "wrapped kern"
    script.write_text(
        f'#!/bin/sh\ncase " $* " in *" --list "*) echo x >> "{count}";; esac\nexec "{kern}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, count


def calls(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def setup(tmp_path):
    kern = tmp_path / "boardlab-kern"  # a copy, so that "rebuilding" it touches nothing installed
    shutil.copy2(kern_path(), kern)
    script, count = wrapper(tmp_path, kern)
    cache = tmp_path / "user cache"
    env = {**os.environ, "BOARDLAB_KERN": str(script), "XDG_CACHE_HOME": str(cache)}
    return kern, script, count, cache / "boardlab", env


def listed(env) -> dict:
    proc = run_cli("list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {w["name"]: w for w in json.loads(proc.stdout)["workloads"]}


def test_a_second_list_and_info_read_the_cache_and_a_rebuilt_kern_is_run_again(setup):
    kern, script, count, cache, env = setup
    first = listed(env)
    assert calls(count) == 1
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700  # created private
    (entry,) = cache.glob("kern-catalog-*.json")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert listed(env) == first and calls(count) == 1  # from the cache: the same catalog, no run
    info = run_cli("info", "--json", env=env)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["kern"]["path"] == str(script) and calls(count) == 1
    bump_mtime(kern)  # the binary behind the unchanged wrapper is rebuilt
    assert listed(env) == first and calls(count) == 2
    assert listed(env) == first and calls(count) == 2
    bump_mtime(script)  # the wrapper itself changes
    listed(env)
    assert calls(count) == 3


def test_a_damaged_cache_entry_is_ignored_and_rewritten(setup):
    _, _, count, cache, env = setup
    first = listed(env)
    (entry,) = cache.glob("kern-catalog-*.json")
    entry.write_text('{"schema": 1, "identity": ')  # cut short, as by a full disk
    assert listed(env) == first and calls(count) == 2
    assert listed(env) == first and calls(count) == 2  # rewritten whole
    entry.write_text(json.dumps({"schema": 1, "identity": "another build", "catalog": {}}))
    assert listed(env) == first and calls(count) == 3
    doc = json.loads(entry.read_text())
    doc["catalog"]["kernels"][0] = 5  # damaged inside, the file still JSON: before, an internal error
    entry.write_text(json.dumps(doc))
    assert listed(env) == first and calls(count) == 4
    assert run_cli("info", "--json", env=env).returncode == 0 and calls(count) == 4  # rewritten whole


def test_an_unwritable_cache_directory_costs_a_run_not_a_failure(setup, tmp_path):
    _, _, count, _, env = setup
    blocker = tmp_path / "not a directory"
    blocker.write_text("")
    env = {**env, "XDG_CACHE_HOME": str(blocker)}
    first = listed(env)
    assert listed(env) == first and calls(count) == 2  # nothing cached, nothing written, both ran it
    assert blocker.read_text() == ""


def test_a_link_at_the_cache_entry_is_replaced_and_the_file_it_points_to_is_untouched(setup, tmp_path):
    _, script, count, cache, env = setup
    cache.mkdir(parents=True, mode=0o700)
    user_file = tmp_path / "a user's file"
    user_file.write_text("mine\n")
    entry = cache / native._cache_file(script).name  # the name is a digest of the binary's path
    entry.symlink_to(user_file)
    first = listed(env)
    assert user_file.read_text() == "mine\n"
    assert entry.is_file() and not entry.is_symlink()
    assert listed(env) == first and calls(count) == 1  # the entry written is the cache's own, and is read


def test_the_entries_of_builds_that_are_gone_are_removed_when_a_catalog_is_stored(setup, tmp_path):
    """Each build path has an entry: those of deleted checkouts would pile up in the user's cache."""
    kern, script, count, cache, env = setup
    cache.mkdir(parents=True, mode=0o700)
    gone, here = tmp_path / "a deleted checkout" / "boardlab-kern", kern
    entries = {}
    for name, binary in (("gone", gone), ("here", here)):
        entries[name] = cache / native._cache_file(binary).name
        entries[name].write_text(json.dumps({"schema": 1, "identity": {"kern": [str(binary), 1, 2, 3]}}))
    entries["unreadable"] = cache / "kern-catalog-0000000000000000.json"
    entries["unreadable"].write_text("not json")
    entries["other"] = cache / "models.json"  # not an entry of the catalog's
    entries["other"].write_text(json.dumps({"identity": {"kern": [str(gone)]}}))
    listed(env)  # a new build: its catalog is stored, and the entries of builds that are gone removed
    assert calls(count) == 1 and (cache / native._cache_file(script).name).is_file()
    assert sorted(n for n, e in entries.items() if e.exists()) == ["here", "other", "unreadable"]
