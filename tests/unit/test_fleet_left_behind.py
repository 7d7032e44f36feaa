"""What a SIGKILLed fleet worker leaves running: labgrid's SSH ControlMaster, in a session of its own, its
control socket below the fleet's private TMPDIR. The controller finds such processes by that path in their
arguments (platform.process.pids_naming) and stops them; nothing else is touched."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from boardlab.fleet.controller import _stop_left_behind
from boardlab.platform.process import pids_naming

from helpers import alive

pytestmark = pytest.mark.spawns  # starts the stand-in master


def _proc_tree(tmp_path, cmdlines: dict[int, bytes]):
    for pid, cmdline in cmdlines.items():
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "cmdline").write_bytes(cmdline)
    return tmp_path


def test_only_the_processes_naming_the_path_are_found(tmp_path):
    root = _proc_tree(tmp_path, {
        101: b"ssh\0-f\0-MN\0-S\0/tmp/blabc/lg-ssh-1/control-10.0.0.2\0-p\x0022\0",
        102: b"ssh\0-S\0/tmp/blabcd/lg-ssh-1/control-10.0.0.2\0",  # another run's directory: a longer name
        103: b"sleep\x00300\0",
        104: b"",  # a kernel thread
    })  # fmt: skip
    (tmp_path / "proc" / "self").mkdir()  # not a pid
    assert pids_naming(root, "/tmp/blabc/") == [101]


def test_another_users_process_is_not_found(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a process directory of another user needs root (chown)")
    root = _proc_tree(tmp_path, {201: b"ssh\0-S\0/tmp/blabc/x\0", 202: b"ssh\0-S\0/tmp/blabc/y\0"})
    os.chown(tmp_path / "proc" / "202", 65534, 65534)
    assert pids_naming(root, "/tmp/blabc/") == [201]


def test_a_master_left_in_its_own_session_is_stopped_and_a_neighbour_is_not(tmp_path):
    scratch = tmp_path / "blXXXX"
    (scratch / "lg-ssh-1").mkdir(parents=True)
    control = scratch / "lg-ssh-1" / "control-10.0.0.2"
    # a stand-in for `ssh -f -MN -S CONTROL ...`: its own session, the control path among its arguments
    master = subprocess.Popen(["sh", "-c", "sleep 300", str(control)], start_new_session=True)
    neighbour = subprocess.Popen(["sh", "-c", "sleep 300", str(tmp_path / "blXXXXY" / "control")])
    try:
        _stop_left_behind(scratch)
        master.wait(timeout=10)
        assert master.returncode == -signal.SIGTERM
        time.sleep(0.1)
        assert alive(neighbour.pid)
    finally:
        for p in (master, neighbour):
            if p.poll() is None:
                p.kill()
                p.wait()
