"""The system lock's own rules (docs/safety.md): one holder per tree, named to the waiter; a wait that says
how long it has waited, gives up after its seconds with exit 2, and takes the lock the moment it is free."""

from __future__ import annotations

import os
import re
import threading

import pytest

from boardlab.conditions.journal import SystemLock
from boardlab.errors import InputError, MeasurementError
from boardlab.platform.sysroot import SysRoot

from helpers import SYSFS

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


def lock(what: str, root=SYSFS / "bbb") -> SystemLock:
    return SystemLock(SysRoot(str(root)), what)  # the state dir is the test's own (conftest)


def test_a_second_holder_waits_says_who_and_for_how_long_then_gives_up():
    first = lock("campaign first")
    assert first.acquire(0, print) == 0.0
    said: list[str] = []
    with pytest.raises(InputError) as exc:
        lock("campaign second").acquire(0.5, said.append, poll_s=0.05, every_s=0.2)
    who = f"boardlab pid {os.getpid()} (campaign first, since "
    assert said[0].startswith(f"waiting for {who}") and said[0].endswith(
        f"system settings of {SYSFS / 'bbb'}"
    )
    assert any(s.startswith(f"still waiting for {who}") and s.endswith(" s so far") for s in said[1:])
    assert re.search(r"gave up after [01] s \(--wait 0\.5\)", str(exc.value))
    assert exc.value.exit_code == 2
    with pytest.raises(InputError, match=r"held by boardlab pid \d+ \(campaign first.*\(--no-wait\)"):
        lock("campaign third").acquire(0, said.append)
    first.release()
    assert not first.path.exists()  # the file goes with its holder


def test_a_waiter_takes_the_lock_when_it_is_released_and_says_it_waited():
    first = lock("campaign first")
    first.acquire(0, print)
    threading.Timer(0.3, first.release).start()
    said: list[str] = []
    second = lock("campaign second")
    waited = second.acquire(None, said.append, poll_s=0.05)
    assert waited >= 0.25 and said[-1].startswith("waited 0 s for boardlab pid")
    assert lock("campaign third").holder().startswith(f"boardlab pid {os.getpid()} (campaign second, since ")
    second.release()


def test_trees_have_their_own_locks():
    a, b = lock("a"), lock("b", SYSFS / "vm")
    assert a.acquire(0, print) == 0.0 and b.acquire(0, print) == 0.0
    a.release()
    b.release()


def test_a_lock_file_removed_under_its_holder_is_noticed_and_the_next_holders_file_is_left_alone():
    first = lock("campaign first")
    first.acquire(0, print)
    first.check()  # its own file: nothing to say
    os.unlink(first.path)  # a cleanup of the state directory while the campaign runs
    with pytest.raises(MeasurementError) as exc:
        first.check()
    assert f"the system lock {first.path} was removed or replaced while this boardlab held it" in str(
        exc.value
    )
    assert f"the settings of {SYSFS / 'bbb'}" in str(exc.value) and exc.value.exit_code == 1
    second = lock("campaign second")  # locks the new file at the path at once
    assert second.acquire(0, print) == 0.0
    first.release()  # must not remove the second holder's file: a third would then run beside the second
    assert second.path.exists() and lock("third").holder().startswith(
        f"boardlab pid {os.getpid()} (campaign second"
    )
    with pytest.raises(InputError, match="held by"):
        lock("campaign third").acquire(0, print)
    second.release()
    assert not second.path.exists()


def test_a_lock_file_replaced_under_its_holder_is_noticed():
    first = lock("campaign first")
    first.acquire(0, print)
    first.path.with_suffix(".new").write_text("{}")
    os.replace(first.path.with_suffix(".new"), first.path)
    with pytest.raises(MeasurementError, match="removed or replaced"):
        first.check()
    first.release()


def test_a_filesystem_that_cannot_lock_is_named_exit_2_and_leaves_no_file(monkeypatch):
    import errno
    import fcntl

    from boardlab.platform.locks import filesystem_type

    def no_lockd(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_lockd)
    first = lock("campaign first")
    with pytest.raises(InputError) as exc:
        first.acquire(None, print)
    fs = filesystem_type("/", first.path.parent)
    assert (
        fs
        and f"system lock (BOARDLAB_STATE_DIR) {first.path}: cannot be locked on a {fs} filesystem"
        in str(exc.value)
    )
    assert "No locks available" in str(exc.value) and "nothing was changed" in str(exc.value)
    assert exc.value.exit_code == 2 and not first.path.exists()


def test_a_holder_the_lock_file_names_is_named_only_while_it_runs():
    """The file says who took the lock; a holder is named only if that process still runs (the file of a
    killed holder, read before the next holder rewrote it, named the dead one)."""
    import json
    import subprocess
    import sys

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # its pid, free now (reused, at worst, by a process of another start time)
    first = lock("campaign first")
    assert first.acquire(0, print) == 0.0
    doc = json.loads(first.path.read_text())
    assert doc["pid"] == os.getpid() and isinstance(doc["start_ticks"], int)
    # the lock held (by `first`), its file naming the ended process, as a new holder may find it
    first.path.write_text(json.dumps({**doc, "pid": ended.pid, "start_ticks": 1}))
    with pytest.raises(InputError) as exc:
        lock("campaign second").acquire(0, print)
    assert "held by another boardlab (--no-wait)" in str(exc.value) and str(ended.pid) not in str(exc.value)
    first.path.write_text(json.dumps({**doc, "start_ticks": doc["start_ticks"] + 1}))  # the pid, reused
    assert lock("campaign third").holder() == "another boardlab"
    first.release()
