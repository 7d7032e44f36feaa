"""The network placement condition: real namespaces, veth pairs and tbf, made and removed for each test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.conditions.netns import KIND, exec_prefix, netem_reason
from boardlab.platform.inventory import inventory
from boardlab.platform.sysroot import SysRoot

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("netns")]


def context(tmp_path: Path) -> ApplyContext:
    sr = SysRoot("/")
    info = inventory(sr)
    return ApplyContext(sr, RestoreJournal(sr, tmp_path / "journal.json"), info, None, info.online_cpus)


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def kern_in(ns: str, kern: Path, role: str, *params: str) -> subprocess.Popen:
    argv = [*exec_prefix(ns), str(kern), role, "--json"]
    for p in params:
        argv += ["--param", p]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_validate_names_the_key_and_the_fix():
    key, why = KIND.validate({"mode": "bridge"})
    assert key == "mode" and "private, veth, iface" in why and "'bridge'" in why
    assert KIND.validate({"rate_mbit": 0})[0] == "rate_mbit"  # below its range, the shared routine says
    assert KIND.validate({"rate_mbit": 100})[0] == "mode"
    assert KIND.validate({"mode": "iface", "iface": "eth0"})[0] == "iface"
    assert KIND.validate({"mode": "iface", "iface": "eth0", "peer_addr": "x"})[0] == "peer_addr"
    assert KIND.validate({"mode": "veth", "rate_mbit": 100}) is None


def test_private_namespace_carries_multicast_and_is_removed(kern, tmp_path):
    ctx = context(tmp_path)
    with KIND.apply({}, ctx) as state:
        ns = state["netns"]
        assert ns in namespaces() and state["peer_addr"] == "127.0.0.1"
        assert os.environ["BOARDLAB_NETNS"] == ns and os.environ["BOARDLAB_PEER_ADDR"] == "127.0.0.1"
        sub = kern_in(ns, kern, "svc.sub", "duration_s=5", "expect=20", "port=23456")
        import time

        time.sleep(0.3)
        pub = kern_in(ns, kern, "svc.pub", "rate_hz=100", "duration_s=0.2", "port=23456")
        pub.communicate(timeout=20)
        out, err = sub.communicate(timeout=20)
        assert json.loads(out)["service"]["received"] == 20, err
    # its own namespace is gone (others may come and go: the other test process makes its own beside this one)
    assert ns not in namespaces() and "BOARDLAB_NETNS" not in os.environ
    assert ctx.journal.pending() == []


def test_veth_pair_shaped_by_tbf_reaches_the_peer(kern, tmp_path):
    ctx = context(tmp_path)
    with KIND.apply({"mode": "veth", "rate_mbit": 10}, ctx) as state:
        assert any("tbf rate 10mbit" in q for q in state["qdiscs"].values())
        # multicast from the local side is heard by a subscriber in the peer namespace
        sub = kern_in(
            state["peer_netns"],
            kern,
            "svc.sub",
            "duration_s=5",
            "expect=10",
            "port=23457",
            f"iface_addr={state['peer_addr']}",
        )
        import time

        time.sleep(0.3)
        pub = kern_in(
            state["netns"],
            kern,
            "svc.pub",
            "rate_hz=50",
            "duration_s=0.2",
            "port=23457",
            f"iface_addr={state['local_addr']}",
        )
        pub.communicate(timeout=20)
        out, err = sub.communicate(timeout=20)
        assert json.loads(out)["service"]["received"] == 10, err
    assert state["netns"] not in namespaces() and state["peer_netns"] not in namespaces()


def test_netem_is_used_or_reported_unsupported(tmp_path):
    ctx = context(tmp_path)
    reason = KIND.check({"mode": "veth", "delay_ms": 5}, ctx)
    probe = netem_reason()
    if probe is None:
        assert reason is None
    else:
        assert reason == f"unsupported: {probe}" and "netem" in reason


def test_a_crashed_runs_namespace_is_deleted_by_recovery(tmp_path):
    sr = SysRoot("/")
    journal = RestoreJournal(sr, tmp_path / "journal.json")
    name = f"boardlab-test-{os.getpid()}-crash"
    journal.made_netns(name, what="network namespace (local)")
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        done = RestoreJournal(sr, tmp_path / "journal.json").recover()
        assert [d.detail for d in done] == [f"deleted network namespace {name}"]
        assert name not in namespaces()
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)
