"""clock.chain: a core's clock from a chain of dependent one-cycle adds, verified by its closed form; a wrong
chain is an error, never a clock."""

from __future__ import annotations

import pytest

from helpers import assert_plausible, kern_json, under_qemu_user

FAST = ("--iterations", "3", "--warmup-max-iterations", "0")


def test_the_chain_is_verified_and_its_adds_per_microsecond_are_the_clock(kern):
    rc, res = kern_json(kern, "clock.chain", "--param", "adds=4096", *FAST)
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True and res["checksum"]
    mhz, ns = res["metrics"]["mhz"], res["metrics"]["ns_per_add"]
    assert mhz["unit"] == "MHz" and mhz["higher_is_better"] is True
    assert ns["unit"] == "ns" and ns["higher_is_better"] is False
    assert res["info"]["add_latency_cycles"] == 1
    if not under_qemu_user():  # translated code runs at no core's clock
        assert_plausible(mhz["values"], 50, 10_000)  # any core from a 50 MHz microcontroller-class to 10 GHz
    # one add a cycle: MHz and ns per add are one quantity
    assert mhz["median"] * ns["median"] == pytest.approx(1000, rel=0.2)


def test_a_broken_chain_is_an_error_not_a_clock(kern):
    rc, res = kern_json(kern, "clock.chain", *FAST, "--corrupt")
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any("add chain ended at" in e for e in res["errors"]), res["errors"]


def test_adds_below_one_block_are_refused(kern):
    rc, res = kern_json(kern, "clock.chain", "--param", "adds=10", *FAST)
    assert rc == 2 and res.get("ok") is not True
