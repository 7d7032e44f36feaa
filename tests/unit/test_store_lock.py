"""The results database's lock (docs/safety.md "One campaign per database"): a filesystem that cannot lock is
named, with exit 2 and no file left behind; a database removed or replaced under a campaign is noticed."""

from __future__ import annotations

import errno
import fcntl
import os

import pytest

from boardlab.cli import main
from boardlab.errors import InputError, MeasurementError
from boardlab.store import Store

PLAN = """
name = "lockless"
[runs]
repetitions = 1
iterations = 2
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "mibench.crc32"
"""


@pytest.fixture
def lockless(monkeypatch, tmp_path):
    """flock(2) fails with ENOLCK on the files of tmp_path/nfs, as on an NFS mount without lockd; elsewhere
    (the system lock in the state directory) it works."""
    real = fcntl.flock
    nfs = tmp_path / "nfs"
    nfs.mkdir()

    def flock(fd, op):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(nfs)):
            raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    return nfs


def test_a_new_database_on_a_filesystem_that_cannot_lock_is_refused_and_not_left(lockless):
    db = lockless / "results.db"
    from boardlab.platform.locks import filesystem_type  # the type /proc/self/mountinfo gives tmp_path

    with pytest.raises(InputError) as exc:
        Store.open(db)
    fs = filesystem_type("/", lockless)
    assert fs and str(exc.value).startswith(f"results database {db}: cannot be locked on a {fs} filesystem")
    assert "No locks available" in str(exc.value) and "lockd" in str(exc.value)
    assert exc.value.exit_code == 2 and list(lockless.iterdir()) == []


def test_an_existing_database_there_is_refused_and_kept(lockless, tmp_path):
    db = lockless / "results.db"
    with Store.open(tmp_path / "made.db"):
        pass
    os.replace(tmp_path / "made.db", db)
    before = db.read_bytes()
    with pytest.raises(InputError, match="cannot be locked"):
        Store.open(db)
    assert db.read_bytes() == before


def test_run_says_it_with_exit_2_and_leaves_no_empty_database(lockless, tmp_path, capsys):
    (tmp_path / "plan.toml").write_text(PLAN)
    code = main(["run", str(tmp_path / "plan.toml"), "--db", str(lockless / "r.db"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and f"results database {lockless / 'r.db'}: cannot be locked on a " in err, err
    assert "Traceback" not in err and list(lockless.iterdir()) == []


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_database_removed_or_replaced_under_a_writer_is_noticed(tmp_path, how):
    db = tmp_path / "results.db"
    with Store.open(db) as store:
        store.check_file()
        if how == "removed":
            os.unlink(db)
        else:
            (tmp_path / "other.db").write_bytes(b"")
            os.replace(tmp_path / "other.db", db)
        with pytest.raises(MeasurementError) as exc:
            store.check_file()
    assert f"{db}: the results database was removed or replaced while this campaign wrote to it" in str(
        exc.value
    )
    assert exc.value.exit_code == 1
