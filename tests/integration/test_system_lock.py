"""The system lock (docs/safety.md "One campaign per board at a time"): two campaigns on one board tree,
each with its own database. The second waits for the first, says who holds the settings and how long it
waited, and both finish; `--no-wait` and `--wait` give up with exit 2 and Ctrl-C while waiting exits 130
(against a lock this test process holds, so the holder outlasts the waiter); a killed holder frees it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import copy_board, rows

pytestmark = pytest.mark.integration

# 4 runs behind a 1 s cooldown each: the first campaign holds the lock for several seconds. A campaign that
# only has to run after a lock is freed needs no cooldown: `hold=False` drops it, and shortens the idle-power
# windows the energy meter takes around each block of runs (3 s each by default: five of them on a board
# with power rails such as the XU3's), keeping the meter in the campaign.
PLAN = """\
name = "{name}"
[runs]
repetitions = 4
iterations = 3
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
cooldown_s = {cooldown_s}
[energy]
idle_window_s = {idle_window_s}
[[workloads]]
name = "noop"
"""


@pytest.fixture
def lab(tmp_path, monkeypatch):
    root = copy_board("bbb", tmp_path)
    state = tmp_path / "state"
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(state))  # this process's lock and the campaigns' alike
    return root, state, {**os.environ, "BOARDLAB_STATE_DIR": str(state)}


@pytest.fixture
def held(lab):
    """The system lock of the board tree, held by this process for the test (as a campaign holds it)."""
    from boardlab.conditions.journal import SystemLock
    from boardlab.platform.sysroot import SysRoot

    lock = SystemLock(SysRoot(str(lab[0])), "campaign first")
    assert lock.acquire(0, print) == 0.0
    yield lock
    lock.release()


def start(tmp_path, root, env, name: str, *extra: str, hold: bool = True) -> subprocess.Popen:
    plan = tmp_path / f"{name}.toml"
    plan.write_text(
        PLAN.format(name=name, cooldown_s=1.0 if hold else 0.0, idle_window_s=3.0 if hold else 0.1)
    )
    argv = [sys.executable, "-m", "boardlab", "run", str(plan), "--root", str(root)]
    argv += ["--db", str(tmp_path / f"{name}.db"), "--quiet", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_holder(state, pid: int, timeout_s: float = 60) -> None:
    """Until the lock file names `pid` as its holder (the first campaign has the lock)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        for f in state.glob("restore-*.lock"):
            try:
                if json.loads(f.read_text() or "{}").get("pid") == pid:
                    return
            except (OSError, json.JSONDecodeError):
                pass
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} never took the system lock")


def span(db) -> tuple[float, float]:
    """(first run's start, last run's end) of a campaign, in Unix seconds."""
    ((start_s, end_s),) = rows(
        db, "SELECT MIN(started_unix_s), MAX(started_unix_s + wall_ns / 1e9) FROM runs"
    )
    return start_s, end_s


def test_two_campaigns_started_together_both_finish_and_the_second_says_it_waited(lab, tmp_path):
    root, state, env = lab
    first = start(tmp_path, root, env, "first")
    wait_for_holder(state, first.pid)
    second = start(tmp_path, root, env, "second", "--json", hold=False)  # it has only to wait, then run
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert "waiting for" not in err1
    assert json.loads(out2)["lock_waited_s"] > 0
    assert f"waiting for boardlab pid {first.pid} (campaign first, since " in err2
    assert f"to release the system settings of {root}" in err2
    assert f"for boardlab pid {first.pid} (campaign first" in err2.split("waited ")[1]
    # the second ran only after the first's last run: they never measured each other
    assert span(tmp_path / "second.db")[0] >= span(tmp_path / "first.db")[1]
    assert len(rows(tmp_path / "second.db", "SELECT id FROM runs")) == 4
    assert list(state.glob("restore-*")) == []  # the lock file goes with its last holder


def test_no_wait_exits_2_naming_the_holder_and_wait_gives_up_after_its_seconds(lab, held, tmp_path):
    root, state, env = lab
    refused = start(tmp_path, root, env, "second", "--no-wait")
    _, err = refused.communicate(timeout=120)
    assert refused.returncode == 2, err
    assert f"held by boardlab pid {os.getpid()} (campaign first" in err and "(--no-wait)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "second.db").exists()  # nothing ran, nothing left behind
    t0 = time.monotonic()
    gave_up = start(tmp_path, root, env, "third", "--wait", "1")
    _, err = gave_up.communicate(timeout=120)
    assert gave_up.returncode == 2, err
    assert "gave up after 1 s (--wait 1)" in err and f"boardlab pid {os.getpid()}" in err
    assert time.monotonic() - t0 >= 1.0
    assert not (tmp_path / "third.db").exists()


def test_ctrl_c_while_waiting_exits_130_without_a_traceback(lab, held, tmp_path):
    root, state, env = lab
    waiter = start(tmp_path, root, env, "second")
    line = ""
    while "waiting for" not in line:  # it says so before it waits
        line = waiter.stderr.readline()
        assert line, "the second campaign ended without waiting"
    waiter.send_signal(signal.SIGINT)
    _, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 130, err
    assert "interrupted while waiting for the system settings: nothing ran" in err
    assert "Traceback" not in err
    assert not (tmp_path / "second.db").exists()


def test_the_lock_is_free_again_when_its_holder_dies(lab, tmp_path):
    """flock dies with its holder: after a SIGKILL the next campaign runs at once (and restores the
    journal)."""
    root, state, env = lab
    first = start(tmp_path, root, env, "first")
    wait_for_holder(state, first.pid)
    first.kill()
    first.communicate(timeout=60)
    proc = start(tmp_path, root, env, "second", "--no-wait", hold=False)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err


# ---- the governor daemon and `boardlab restore` take the same lock -------------------------------------


def test_a_lock_file_removed_under_a_campaign_stops_it_and_never_a_later_holder(lab, tmp_path):
    """Issue 39: the state directory cleaned while campaign A runs let campaign B lock a new file and run
    beside A. Now B still gets the board at once (nothing can tell it A lives), but A stops before its next
    run, and its release leaves B's lock file in place."""
    root, state, env = lab
    first = start(tmp_path, root, env, "first")
    wait_for_holder(state, first.pid)
    (lock_file,) = state.glob("restore-*.lock")
    lock_file.unlink()
    second = start(tmp_path, root, env, "second")  # 4 runs behind 1 s cooldowns: it outlasts the first's stop
    wait_for_holder(state, second.pid)
    held_by_second = lock_file.stat().st_ino
    _, err1 = first.communicate(timeout=300)  # the first stops before its next run, within a cooldown
    assert second.poll() is None, "the second campaign ended first: this test needs it still running"
    assert lock_file.stat().st_ino == held_by_second  # the first's release left the second's file alone
    _, err2 = second.communicate(timeout=300)
    assert first.returncode == 1, err1
    assert f"the system lock {lock_file} was removed or replaced while this boardlab held it" in err1
    assert "Traceback" not in err1
    assert second.returncode == 0, err2
    assert len(rows(tmp_path / "first.db", "SELECT id FROM runs")) < 4  # stopped, the finished runs kept
    status = rows(tmp_path / "first.db", "SELECT status FROM campaigns")
    assert status == [("interrupted",)]


def test_a_database_removed_under_a_campaign_stops_it_instead_of_calling_it_complete(lab, tmp_path):
    root, state, env = lab
    first = start(tmp_path, root, env, "first")
    wait_for_holder(state, first.pid)
    (tmp_path / "first.db").unlink()  # rm, as a user cleaning up would
    out, err = first.communicate(timeout=300)
    assert first.returncode == 1, err
    assert f"{tmp_path / 'first.db'}: the results database was removed or replaced while this campaign" in err
    assert "complete" not in out + err.split("removed or replaced")[0] and "Traceback" not in err


GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"


@pytest.fixture
def xu3(tmp_path, monkeypatch):
    """An Odroid-XU3 tree (cpufreq with userspace) with an idle /proc/stat for the daemon to read."""
    root = copy_board("odroid-xu3", tmp_path)
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"] + [f"cpu{i} 0 0 0 0 0 0 0 0 0 0" for i in range(8)]
    (root / "proc" / "stat").write_text("\n".join(lines) + "\n")
    state = tmp_path / "state"
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(state))
    return root, state, {**os.environ, "BOARDLAB_STATE_DIR": str(state)}


def boardlab(env, *args: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "boardlab", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def daemon(root, env, *extra: str) -> subprocess.Popen:
    return boardlab(
        env, "governor", "run", "--root", str(root), "--policy", "ondemand", "--sampling-ms", "20", *extra
    )


def held_by_us(root):
    from boardlab.conditions.journal import SystemLock
    from boardlab.platform.sysroot import SysRoot

    lock = SystemLock(SysRoot(str(root)), "campaign first")
    assert lock.acquire(0, print) == 0.0
    return lock


def test_the_governor_daemon_waits_for_a_campaign_and_governs_after_it(xu3):
    root, state, env = xu3
    before = (root / GOVERNOR).read_text().strip()
    lock = held_by_us(root)
    try:
        refused = daemon(root, env, "--no-wait")
        _, err = refused.communicate(timeout=120)
        assert refused.returncode == 2, err
        assert f"held by boardlab pid {os.getpid()} (campaign first" in err and "(--no-wait)" in err
        waiter = daemon(root, env, "--duration-s", "0.5")
        line = ""
        while "waiting for" not in line:  # it says for whom before it waits
            line = waiter.stderr.readline()
            assert line, "the daemon ended without waiting"
        assert f"waiting for boardlab pid {os.getpid()} (campaign first, since " in line
        time.sleep(1.0)
        assert (
            waiter.poll() is None and (root / GOVERNOR).read_text().strip() == before
        )  # nothing changed yet
    finally:
        lock.release()
    _, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert f"for boardlab pid {os.getpid()} (campaign first" in err.split("waited ")[1]
    assert "governing " in err  # it governed once the lock was free, and restored after
    assert (root / GOVERNOR).read_text().strip() == before
    assert list(state.glob("restore-*")) == []


def said_waiting(proc: subprocess.Popen) -> str:
    """The line where `proc` says it is waiting for the system lock (read from its stderr)."""
    line = ""
    while "waiting for" not in line:
        line = proc.stderr.readline()
        assert line, "it ended without waiting"
    return line


def test_a_campaign_and_restore_wait_for_a_running_governor_daemon(xu3, tmp_path):
    root, state, env = xu3
    gov = daemon(root, env)  # governs until Ctrl-C
    try:
        wait_for_holder(state, gov.pid)
        busy = boardlab(env, "restore", "--root", str(root), "--no-wait")
        _, err = busy.communicate(timeout=120)
        assert busy.returncode == 2, err
        assert f"held by boardlab pid {gov.pid} (governor daemon ondemand" in err
        # while the daemon holds the settings, restore does not undo them: it waits for the daemon to end
        restore = boardlab(env, "restore", "--root", str(root), "--json")
        assert f"waiting for boardlab pid {gov.pid} (governor daemon ondemand, since " in said_waiting(
            restore
        )
        campaign = start(tmp_path, root, env, "second", hold=False)
        assert "waiting for boardlab pid " in said_waiting(campaign)
        assert (root / GOVERNOR).read_text().strip() == "userspace"  # the daemon's, left alone
    finally:
        gov.send_signal(signal.SIGINT)  # the daemon stops and restores its own writes
        _, gov_err = gov.communicate(timeout=120)
    assert gov.returncode == 0, gov_err
    out, err = restore.communicate(timeout=120)
    assert restore.returncode == 0, err
    assert json.loads(out)["restored"] == []  # nothing left: the daemon restored its writes itself
    _, err = campaign.communicate(timeout=300)
    assert campaign.returncode == 0, err
    assert len(rows(tmp_path / "second.db", "SELECT id FROM runs")) == 4
    assert (root / GOVERNOR).read_text().strip() == "ondemand"
    assert list(state.glob("restore-*")) == []


def test_restore_right_after_a_sigkill_undoes_what_the_dead_daemon_left(xu3):
    """The daemon is killed and its parent has not reaped it yet (a zombie: its /proc entry stays, with its
    start time): restore takes the free lock and undoes the daemon's writes. It once called the zombie
    "another boardlab" still changing the tree, exit 2, until the parent's wait."""
    root, state, env = xu3
    before = (root / GOVERNOR).read_text().strip()
    gov = daemon(root, env)
    try:
        wait_for_holder(state, gov.pid)
        deadline = time.monotonic() + 60
        while (root / GOVERNOR).read_text().strip() != "userspace":  # it has journaled and written
            assert time.monotonic() < deadline and gov.poll() is None, "the daemon never governed"
            time.sleep(0.05)
        os.kill(gov.pid, signal.SIGKILL)  # not reaped: Popen waits only when asked
        while open(f"/proc/{gov.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        restore = boardlab(env, "restore", "--root", str(root), "--no-wait", "--json")
        out, err = restore.communicate(timeout=120)
        assert open(f"/proc/{gov.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"  # still unreaped
    finally:
        gov.kill()
        gov.communicate(timeout=60)
    assert restore.returncode == 0, err
    assert str(gov.pid) not in err
    assert any("governor" in r["what"] for r in json.loads(out)["restored"]), out
    assert (root / GOVERNOR).read_text().strip() == before
