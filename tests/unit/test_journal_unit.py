"""A combined condition's journal unit, in process on a copy of the BeagleBone Black tree: while its parts are
applied the journal holds one entry (the unit) holding theirs in order; each part undoes its own entries on
exit (in reverse order) and the emptied unit leaves the journal; a part whose undo fails leaves the unit
behind holding that entry alone, for `boardlab restore`."""

from __future__ import annotations

import contextlib

import pytest

from boardlab.conditions import condition_kinds
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import MeasurementError
from boardlab.platform import inventory
from boardlab.platform.sysroot import SysRoot

from helpers import copy_board

DRIVERS = "sys/bus/platform/drivers"
GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
PARTS = (("governor", {"governor": "ondemand"}), ("driver", {"drivers": ["omap-aes", "omap-sham"]}))


@pytest.fixture
def bbb(tmp_path):
    root = copy_board("bbb", tmp_path)
    for driver in ("omap-aes", "omap-sham"):
        for attr in ("bind", "unbind"):
            (root / DRIVERS / driver / attr).write_text("")
    sr = SysRoot(root)
    info = inventory(sr)
    journal = RestoreJournal(sr, tmp_path / "journal.json")
    return root, ApplyContext(root=sr, journal=journal, info=info, worker_cpu=0, online_cpus=info.online_cpus)


def apply_combined(ctx: ApplyContext, stack: contextlib.ExitStack) -> None:
    """What the runner does for a condition with parts: one unit around the parts, applied in order."""
    kinds = condition_kinds()
    stack.enter_context(ctx.journal.unit("combined condition engine-off"))
    for kind, params in PARTS:
        stack.enter_context(kinds[kind].apply(params, ctx))


def test_the_parts_are_one_entry_while_applied_and_nothing_after(bbb):
    root, ctx = bbb
    with contextlib.ExitStack() as stack:
        apply_combined(ctx, stack)
        (unit,) = ctx.journal.pending()
        assert unit["kind"] == "unit" and unit["open"] is True
        assert [e["kind"] for e in unit["entries"]] == ["setting", "unbound", "unbound"]
        assert (root / GOVERNOR).read_text().strip() == "ondemand"
    assert ctx.journal.pending() == [] and not ctx.journal.path.exists()
    assert (root / GOVERNOR).read_text().strip() == "performance"
    assert (root / DRIVERS / "omap-sham" / "bind").read_text() == "53100000.sham"


def test_a_part_whose_undo_fails_leaves_the_unit_with_that_entry_alone(bbb):
    root, ctx = bbb
    with pytest.raises(MeasurementError, match="Is a directory"), contextlib.ExitStack() as stack:
        apply_combined(ctx, stack)
        bind = root / DRIVERS / "omap-sham" / "bind"
        bind.unlink()
        bind.mkdir()  # the sham's bind refuses the write, the first undone: the rest is still undone
        (root / DRIVERS / "omap-sham" / "53100000.sham").unlink()  # unbound: the kernel took its link away
    (unit,) = ctx.journal.pending()
    assert unit["kind"] == "unit" and unit["open"] is False
    assert [e["what"] for e in unit["entries"]] == ["53100000.sham bound to omap-sham"]
    assert (root / DRIVERS / "omap-aes" / "bind").read_text() == "53500000.aes"  # the same part's other
    assert (root / GOVERNOR).read_text().strip() == "performance"  # the part before it
    bind.rmdir()
    bind.write_text("")
    restored = RestoreJournal(ctx.root, ctx.journal.path).recover()
    assert [(r.what, r.failed) for r in restored] == [
        ("combined condition engine-off: 53100000.sham bound to omap-sham", None)
    ]
    assert ctx.journal.pending() == [] and bind.read_text() == "53100000.sham"


def test_units_do_not_nest_and_are_not_undone_as_one_entry(bbb):
    _, ctx = bbb
    with ctx.journal.unit("a") as token:
        with pytest.raises(ValueError, match="do not nest"), ctx.journal.unit("b"):
            pass
        with pytest.raises(ValueError, match="undo a unit's entries"):
            ctx.journal.undo(token)
    assert ctx.journal.pending() == []  # closed empty: dropped
