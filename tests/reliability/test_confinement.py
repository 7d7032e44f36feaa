"""Case 3: a board write under `--root` (and on the live /sys) cannot be redirected by a symlink."""

from __future__ import annotations

import json
import shutil

import pytest
from reliability.util import assert_one_line_error, stored_runs, write_plan

import boardlab.platform.sysroot as sysroot
from boardlab.errors import InputError
from boardlab.platform.sysroot import SysRoot

from helpers import SYSFS, run_cli

GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"


@pytest.fixture
def board(lab):
    root = lab / "bbb"
    shutil.copytree(SYSFS / "bbb", root, symlinks=True)
    return root


def test_a_symlinked_governor_attribute_cannot_redirect_the_governor_condition(board, lab, tmp_path):
    victim = tmp_path / "victim.txt"  # outside the tree: any file the user running boardlab may write
    victim.write_text("precious\n")
    attr = board / GOVERNOR
    attr.unlink()
    attr.symlink_to(victim)
    plan = write_plan(
        lab / "gov.toml",
        runs_extra='order = "sequential"',  # the two baseline runs first, then the governor condition
        conditions='[[conditions]]\nname = "ondemand"\nkind = "governor"\nparams = { governor = "ondemand" }',
    )
    proc = run_cli("run", str(plan), "--root", str(board), "--db", str(lab / "r.db"), "--quiet")
    assert victim.read_text() == "precious\n"
    # refused, naming the attribute; the campaign's runs under this condition failed or it stopped at once
    assert "Traceback" not in proc.stderr
    assert str(attr) in proc.stderr and "outside" in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2)
    # the baseline runs finished before the condition was refused are kept
    assert stored_runs(lab / "r.db") == 2


@pytest.mark.parametrize("openat2", [True, False], ids=["openat2", "realpath-fallback"])
def test_sysroot_writes_follow_links_inside_the_tree_and_refuse_links_out(tmp_path, monkeypatch, openat2):
    if not openat2:
        monkeypatch.setattr(sysroot, "_openat2_missing", lambda: True)  # as an older kernel answers
    root = tmp_path / "root"
    (root / "sys/class").mkdir(parents=True)
    (root / "sys/devices/x").mkdir(parents=True)
    (root / "sys/devices/x/attr").write_text("old-and-longer\n")
    (root / "sys/class/x").symlink_to("../devices/x")  # as sysfs links classes to devices: allowed
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    (root / "sys/devices/x/evil").symlink_to(outside)
    (root / "sys/devices/x/up").symlink_to("../../../../outside")
    sr = SysRoot(root)
    sr.write_text("sys/class/x/attr", "new")
    assert (root / "sys/devices/x/attr").read_text() == "new"  # replaced, not appended to
    for rel in ("sys/devices/x/evil", "sys/devices/x/up", "sys/class/../../../outside"):
        with pytest.raises(InputError, match="outside"):
            sr.write_text(rel, "x")
    assert outside.read_text() == "keep\n"


def test_on_the_live_system_a_write_stays_inside_its_top_directory(tmp_path):
    """With root "/", /sys/... may not lead out of /sys (a planted link cannot reach a file in /tmp)."""
    sr = SysRoot("/")
    assert sr.live
    assert sr.confined_path("sys/devices/system/cpu/online") == sr.path("sys")
    assert sr.confined_path("proc/sys/vm/drop_caches") == sr.path("proc")


def test_restore_from_the_journal_is_confined_too(board, lab, tmp_path, monkeypatch):
    """A journal entry (written by a killed boardlab) whose attribute became a symlink out of the tree."""
    from boardlab.conditions.journal import RestoreJournal

    state = tmp_path / "state"
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(state))
    journal = RestoreJournal(SysRoot(board))
    journal.set(GOVERNOR, "ondemand", what="governor")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (board / GOVERNOR).unlink()
    (board / GOVERNOR).symlink_to(victim)
    doc = json.loads(journal.path.read_text())
    doc["entries"][0]["owner_pid"] = 999_999_999  # as if that boardlab had died
    journal.path.write_text(json.dumps(doc))
    proc = run_cli(
        "restore", "--root", str(board), env={**__import__("os").environ, "BOARDLAB_STATE_DIR": str(state)}
    )
    assert victim.read_text() == "precious\n"
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (1, 2) and "outside" in proc.stderr, (proc.stdout, proc.stderr)
    assert_one_line_error(proc, proc.returncode, str(board / GOVERNOR))
