"""The `driver` condition on a copy of the BeagleBone Black tree (AM335x's crypto engine: omap-aes and
omap-sham on the platform bus): what it writes to unbind and bind, what a run records, that a crash is
undone by recovery (`boardlab restore`), and "unsupported" with the reason where the driver is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boardlab.conditions import condition_kinds
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.platform import drivers, inventory
from boardlab.platform.sysroot import SysRoot

from helpers import copy_board, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

KIND = condition_kinds()["driver"]
DRIVERS = "sys/bus/platform/drivers"
PARAMS = {"drivers": ["omap-aes", "omap-sham"]}


def context(root: Path, journal: Path) -> ApplyContext:
    sr = SysRoot(root)
    info = inventory(sr)
    return ApplyContext(
        root=sr, journal=RestoreJournal(sr, journal), info=info, worker_cpu=None, online_cpus=info.online_cpus
    )


def written(root: Path, driver: str, attr: str) -> str:
    return (root / DRIVERS / driver / attr).read_text()


@pytest.fixture
def bbb(tmp_path):
    root = copy_board("bbb", tmp_path)
    for driver in PARAMS["drivers"]:  # the kernel's attributes read empty; a test reads what was written
        for attr in ("bind", "unbind"):
            (root / DRIVERS / driver / attr).write_text("")
    return root, context(root, tmp_path / "journal.json")


def test_the_fixture_has_the_crypto_engine_bound_in_the_real_layout(bbb):
    root, ctx = bbb
    assert drivers.bound_devices(ctx.root, "platform", "omap-aes") == ["53500000.aes"]
    assert drivers.bound_devices(ctx.root, "platform", "omap-sham") == ["53100000.sham"]
    dev = root / DRIVERS / "omap-aes" / "53500000.aes"  # a link to the device under sys/devices
    assert dev.is_symlink() and (dev / "modalias").read_text() == "of:NaesT(null)Cti,omap4-aes\n"
    assert dev.resolve() == (root / "sys/bus/platform/devices/53500000.aes").resolve()


def test_each_bound_device_is_unbound_for_the_run_and_bound_again_after(bbb):
    root, ctx = bbb
    assert KIND.validate(PARAMS) is None and KIND.check(PARAMS, ctx) is None
    with KIND.apply(PARAMS, ctx) as state:
        assert written(root, "omap-aes", "unbind") == "53500000.aes"
        assert written(root, "omap-sham", "unbind") == "53100000.sham"
        assert written(root, "omap-aes", "bind") == ""  # not yet bound again
        assert [e["kind"] for e in ctx.journal.pending()] == ["unbound", "unbound"]
    assert state["unbound"] == [
        {"driver": "omap-aes", "device": "53500000.aes"},
        {"driver": "omap-sham", "device": "53100000.sham"},
    ]
    assert written(root, "omap-aes", "bind") == "53500000.aes"
    assert written(root, "omap-sham", "bind") == "53100000.sham"
    assert ctx.journal.pending() == []


def test_a_crashed_run_is_bound_again_by_recovery(bbb, tmp_path):
    root, ctx = bbb
    cm = KIND.apply(PARAMS, ctx)
    cm.__enter__()  # the process "dies" here: no exit, the journal keeps both entries
    assert len(ctx.journal.pending()) == 2
    restored = RestoreJournal(ctx.root, tmp_path / "journal.json").recover()  # what `boardlab restore` does
    assert [r.detail for r in restored] == [
        "bound 53100000.sham to omap-sham again",
        "bound 53500000.aes to omap-aes again",
    ]
    assert written(root, "omap-aes", "bind") == "53500000.aes"
    assert RestoreJournal(ctx.root, tmp_path / "journal.json").pending() == []


def test_a_board_without_the_driver_is_unsupported_with_the_reason(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    ctx = context(root, tmp_path / "journal.json")
    reason = KIND.check(PARAMS, ctx)
    assert reason.startswith("unsupported: no kernel driver 'omap-aes' on the platform bus")
    assert "no such engine, or its driver is not loaded" in reason


def test_a_driver_without_a_device_and_an_empty_list_are_refused(bbb):
    root, ctx = bbb
    (root / DRIVERS / "omap-aes" / "53500000.aes").unlink()
    assert KIND.check(PARAMS, ctx).startswith("unsupported: driver 'omap-aes' has no device bound to it")
    assert KIND.validate({"drivers": []}) == ("drivers", "an empty list: name at least one driver")
    assert KIND.validate({"drivers": "omap-aes"})[0] == "drivers"


def test_boardlab_restore_binds_again_what_a_killed_run_left_unbound(bbb, tmp_path):
    root, _ = bbb
    state = tmp_path / "state"
    crash = (  # a process that unbinds through the condition, then dies without undoing it
        "import os, sys\n"
        "from boardlab.conditions import condition_kinds\n"
        "from boardlab.conditions.base import ApplyContext\n"
        "from boardlab.conditions.journal import RestoreJournal\n"
        "from boardlab.platform import inventory\n"
        "from boardlab.platform.sysroot import SysRoot\n"
        "sr = SysRoot(sys.argv[1]); info = inventory(sr)\n"
        "ctx = ApplyContext(root=sr, journal=RestoreJournal(sr), info=info, worker_cpu=None,"
        " online_cpus=info.online_cpus)\n"
        "cm = condition_kinds()['driver'].apply({'drivers': ['omap-aes']}, ctx)\n"
        "cm.__enter__()\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(state)}
    subprocess.run([sys.executable, "-c", crash, str(root)], check=True, env=env, timeout=60)
    assert written(root, "omap-aes", "unbind") == "53500000.aes" and written(root, "omap-aes", "bind") == ""
    proc = run_cli("restore", "--root", str(root), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r["detail"] for r in json.loads(proc.stdout)["restored"]] == [
        "bound 53500000.aes to omap-aes again"
    ]
    assert written(root, "omap-aes", "bind") == "53500000.aes"
