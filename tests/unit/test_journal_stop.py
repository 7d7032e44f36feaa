"""A stop (Ctrl-C, SIGTERM, SIGHUP: a KeyboardInterrupt raised wherever the main thread happens to be) that
lands between a change and the condition's bookkeeping: the journal keeps the change, and `undo_own` (the
runner's last step before it releases the board) puts the old value back. On a copy of the BeagleBone
Black tree, whose governor is `performance`."""

from __future__ import annotations

import io
import json
import os

import pytest

from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import MeasurementError
from boardlab.platform import drivers
from boardlab.platform.sysroot import SysRoot

from helpers import copy_board

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
SHAM = ("platform", "omap-sham", "53100000.sham")


class Stopping(SysRoot):
    """Raises what a stop signal raises, once, when a write to a file named `name` is made: after the write
    lands (`landed`) or before it does."""

    __slots__ = ("name", "landed", "armed")

    def __init__(self, root, name: str, *, landed: bool) -> None:
        super().__init__(root)
        self.name, self.landed, self.armed = name, landed, True

    def write_text(self, rel: str, text: str) -> None:
        stop = self.armed and rel.endswith("/" + self.name)
        if stop and not self.landed:
            self.armed = False
            raise KeyboardInterrupt
        super().write_text(rel, text)
        if stop:
            self.armed = False
            if rel.endswith("/unbind"):  # what the kernel does: the device's link leaves the driver
                (self.root / drivers.driver_dir(SHAM[0], SHAM[1]) / SHAM[2]).unlink()
            raise KeyboardInterrupt


@pytest.fixture
def board(tmp_path):
    return copy_board("bbb", tmp_path)


def test_a_stop_just_after_the_write_keeps_the_entry_and_undo_own_writes_the_old_value(board, tmp_path):
    journal = RestoreJournal(Stopping(board, "scaling_governor", landed=True), tmp_path / "j.json")
    with pytest.raises(KeyboardInterrupt):
        journal.set(GOVERNOR, "ondemand", what="cpu0 governor")
    assert (board / GOVERNOR).read_text().strip() == "ondemand"
    (entry,) = journal.pending()
    assert (entry["kind"], entry["old"], entry["new"]) == ("setting", "performance", "ondemand")
    (restored,) = journal.undo_own()
    assert restored.failed is None and "'performance'" in restored.detail
    assert (board / GOVERNOR).read_text().strip() == "performance"
    assert journal.pending() == [] and not journal.path.exists()


def test_a_write_the_kernel_refuses_leaves_no_entry(board, tmp_path):
    class Refusing(SysRoot):
        __slots__ = ()

        def write_text(self, rel, text):
            raise MeasurementError(f"cannot write {text!r} to {rel}: Invalid argument")

    journal = RestoreJournal(Refusing(board), tmp_path / "j.json")
    with pytest.raises(MeasurementError):
        journal.set(GOVERNOR, "ondemand", what="cpu0 governor")
    assert journal.pending() == [] and (board / GOVERNOR).read_text().strip() == "performance"


def test_undo_own_leaves_another_boardlabs_entries_alone(board, tmp_path):
    journal = RestoreJournal(SysRoot(board), tmp_path / "j.json")
    journal.set(GOVERNOR, "ondemand", what="cpu0 governor")
    doc = json.loads(journal.path.read_text())
    doc["entries"][0]["owner_pid"] = os.getppid()  # a live process that is not this one
    journal.path.write_text(json.dumps(doc))
    assert journal.undo_own() == []
    assert len(journal.pending()) == 1 and (board / GOVERNOR).read_text().strip() == "ondemand"


def test_a_stop_after_the_unbind_keeps_the_entry_and_undo_own_binds_the_device_again(board, tmp_path):
    journal = RestoreJournal(Stopping(board, "unbind", landed=True), tmp_path / "j.json")
    with pytest.raises(KeyboardInterrupt):
        journal.unbound(*SHAM, what="53100000.sham bound to omap-sham")
    assert SHAM[2] not in drivers.bound_devices(journal.root, *SHAM[:2])
    (entry,) = journal.pending()
    assert entry["kind"] == "unbound"
    (restored,) = journal.undo_own()
    assert restored.failed is None and restored.detail == "bound 53100000.sham to omap-sham again"
    assert (board / drivers.driver_dir(*SHAM[:2]) / "bind").read_text() == "53100000.sham"
    assert journal.pending() == []


def test_a_stop_before_the_unbind_drops_the_entry_the_device_is_still_bound(board, tmp_path):
    journal = RestoreJournal(Stopping(board, "unbind", landed=False), tmp_path / "j.json")
    with pytest.raises(KeyboardInterrupt):
        journal.unbound(*SHAM, what="53100000.sham bound to omap-sham")
    assert journal.pending() == []
    assert SHAM[2] in drivers.bound_devices(journal.root, *SHAM[:2])
    assert (board / drivers.driver_dir(*SHAM[:2]) / "unbind").read_text() == ""


class RefusingBind(SysRoot):
    """The kernel refuses every bind with `why`; an unbind takes the device's link away only when `unlinks`
    (else the fixture's link stays: the device still reads as bound, as after an undo cut short)."""

    __slots__ = ("why", "unlinks")

    def __init__(self, root, why: str, *, unlinks: bool) -> None:
        super().__init__(root)
        self.why, self.unlinks = why, unlinks

    def write_text(self, rel, text):
        if rel.endswith("/bind"):
            raise MeasurementError(f"cannot write {text!r} to {rel}: {self.why}")
        super().write_text(rel, text)
        if self.unlinks:
            (self.root / drivers.driver_dir(*SHAM[:2]) / SHAM[2]).unlink()


def test_binding_a_device_that_is_bound_again_is_not_a_failure(board, tmp_path):
    """An undo cut short after its bind: the kernel refuses a second bind (EBUSY), and the device is bound."""
    journal = RestoreJournal(
        RefusingBind(board, "Device or resource busy", unlinks=False), tmp_path / "j.json"
    )
    journal.unbound(*SHAM, what="53100000.sham bound to omap-sham")
    (restored,) = journal.undo_own()
    assert restored.failed is None and restored.detail == "53100000.sham is bound to omap-sham"
    assert journal.pending() == []


def test_a_bind_the_kernel_refuses_for_an_unbound_device_stays_for_boardlab_restore(board, tmp_path):
    journal = RestoreJournal(RefusingBind(board, "No such device", unlinks=True), tmp_path / "j.json")
    journal.unbound(*SHAM, what="53100000.sham bound to omap-sham")
    (restored,) = journal.undo_own()
    assert "No such device" in restored.failed and "boardlab restore" in restored.failed
    assert len(journal.pending()) == 1


def test_a_stop_between_the_governor_write_and_its_condition_is_undone_by_the_runner(
    board, tmp_path, monkeypatch
):
    """The window the SIGTERM test once hit: the write landed, the condition never got the token, so the
    condition's own undo cannot know it; the runner's last step finds it in the journal."""
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.runner import Runner
    from boardlab.cli.progress import TerminalProgress
    from boardlab.store import Store
    from boardlab.workloads import all_workloads

    real_set = RestoreJournal.set
    armed = [True]

    def set_then_stop(self, rel, value, *, what):
        token = real_set(self, rel, value, what=what)
        if armed[0] and rel.endswith("scaling_governor"):
            armed[0] = False
            raise KeyboardInterrupt
        return token

    monkeypatch.setattr(RestoreJournal, "set", set_then_stop)
    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(
        'name = "stop"\n[runs]\nrepetitions = 2\niterations = 2\n[gates]\nidle = false\ntemperature = false\n'
        '[[workloads]]\nname = "noop"\n[[conditions]]\nname = "ondemand"\nkind = "governor"\n'
        'params = { governor = "ondemand" }\n',
        "stop.toml",
        catalog,
    )
    said = io.StringIO()  # what the campaign's progress prints, one line a note
    with Store.open(str(tmp_path / "r.db")) as store, pytest.raises(KeyboardInterrupt):
        Runner(plan, catalog, store, root=str(board), progress=TerminalProgress(said)).run()
    assert not armed[0]  # the stop did land after the governor's write
    assert (board / GOVERNOR).read_text().strip() == "performance"
    assert RestoreJournal(SysRoot(board)).pending() == []
    notes = said.getvalue().splitlines()
    assert any(n.startswith("restored ") and "'performance'" in n for n in notes), notes


def _daemon_stopped_in_start(board, tmp_path):
    """The governor daemon on the BeagleBone Black's copy, stopped just after it switched the governor to
    userspace and before it kept the token."""
    from boardlab.governor.daemon import Daemon

    (board / "proc" / "stat").write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\n")
    sr = Stopping(board, "scaling_governor", landed=True)
    d = Daemon(sr, "ondemand", RestoreJournal(sr, tmp_path / "j.json"))
    d.check(counters=False)
    with pytest.raises(KeyboardInterrupt):
        d.start()
    assert d.tokens == [] and (board / GOVERNOR).read_text().strip() == "userspace"
    return d


def test_the_governor_daemon_undoes_a_change_whose_token_a_stop_took(board, tmp_path):
    d = _daemon_stopped_in_start(board, tmp_path)
    assert d.stop() == ["policy0 cpufreq governor: " + d.journal.root.show(GOVERNOR) + " = 'performance' "
                        "(was set to 'userspace')"]  # fmt: skip
    assert (board / GOVERNOR).read_text().strip() == "performance" and d.journal.pending() == []


def test_a_leftover_the_daemon_cannot_undo_is_an_error_naming_it_and_stays(board, tmp_path):
    d = _daemon_stopped_in_start(board, tmp_path)
    (board / GOVERNOR).unlink()
    (board / GOVERNOR).mkdir()  # the kernel refuses the old value now
    with pytest.raises(
        MeasurementError, match="could not restore policy0 cpufreq governor .*boardlab restore"
    ):
        d.stop()
    assert len(d.journal.pending()) == 1
