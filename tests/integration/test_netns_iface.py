"""The `iface` placement of the netns condition: the services on a real interface between two boards. Here
the two boards are two network namespaces the test makes, joined by a veth pair: the condition is applied
inside the first (`ip netns exec`, so /sys/class/net and `ip` see that namespace's interfaces), and the
publisher there sends through the interface to a subscriber in the other. Both are deleted at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.conditions.netns import KIND
from boardlab.platform.sysroot import SysRoot

pytestmark = pytest.mark.integration

NEEDS_NETNS = pytest.mark.usefixtures("netns")  # two network namespaces and a veth pair

# what runs inside board A: the condition in iface mode, then the publisher on the placement it made
BOARD_A = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal
    from boardlab.conditions.netns import KIND
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot
    from boardlab.services.launch import run_role

    iface, peer, group, port, tmp = sys.argv[1:6]
    sr = SysRoot("/")
    info = inventory(sr)
    ctx = ApplyContext(sr, RestoreJournal(sr, Path(tmp) / "journal.json"), info, None, info.online_cpus)
    params = {"mode": "iface", "iface": iface, "peer_addr": peer}
    out = {"check": KIND.check(params, ctx), "check_missing": KIND.check({**params, "iface": "nope0"}, ctx)}
    with KIND.apply(params, ctx) as state:
        out["state"] = state
        out["env"] = {k: os.environ.get(k)
                      for k in ("BOARDLAB_NETNS", "BOARDLAB_MCAST_IFACE_ADDR", "BOARDLAB_PEER_ADDR")}
        out["pub"] = run_role("svc.pub", {"group": group, "port": int(port),
                                          "iface_addr": state["mcast_iface_addr"],
                                          "rate_hz": 100, "duration_s": 0.5}, timeout_s=30)
    out["env_after"] = os.environ.get("BOARDLAB_MCAST_IFACE_ADDR")
    print(json.dumps(out))
    """
)


def test_check_names_a_missing_interface_and_what_is_there(tmp_path):
    root = tmp_path / "board"
    for name in ("lo", "eth0"):
        (root / "sys/class/net" / name).mkdir(parents=True)
    sr = SysRoot(root)
    ctx = ApplyContext(sr, RestoreJournal(sr, tmp_path / "j.json"), None, None, frozenset())
    why = KIND.check({"mode": "iface", "iface": "eth1", "peer_addr": "10.0.0.2"}, ctx)
    assert why == "no network interface 'eth1'; present: eth0, lo"
    assert KIND.check({"mode": "iface", "iface": "eth0", "peer_addr": "10.0.0.2"}, ctx) is None


@NEEDS_NETNS
def test_iface_placement_sends_through_the_interface_to_the_other_board(kern, tmp_path):
    tag = f"bl{os.getpid() % 100000}"
    a_ns, b_ns = f"boardlab-test-{tag}-a", f"boardlab-test-{tag}-b"
    group, port = "239.255.77.7", 20000 + os.getpid() % 20000
    ip = lambda *a: subprocess.run(["ip", *a], check=True, capture_output=True)  # noqa: E731
    try:
        ip("netns", "add", a_ns)
        ip("netns", "add", b_ns)
        ip("-n", a_ns, "link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b", "netns", b_ns)
        ip("-n", a_ns, "addr", "add", "10.213.0.1/30", "dev", f"{tag}a")
        ip("-n", b_ns, "addr", "add", "10.213.0.2/30", "dev", f"{tag}b")
        for ns, dev in ((a_ns, f"{tag}a"), (b_ns, f"{tag}b")):
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        # an interface without an address is refused before anything runs
        ip("-n", a_ns, "link", "add", f"{tag}x", "type", "veth", "peer", "name", f"{tag}y")
        sub = subprocess.Popen(
            [
                "ip", "netns", "exec", b_ns, str(kern), "svc.sub", "--json",
                "--param", f"group={group}", "--param", f"port={port}", "--param", "iface_addr=10.213.0.2",
                "--param", "duration_s=20", "--param", "expect=50",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
            a = subprocess.run(
                ["ip", "netns", "exec", a_ns, sys.executable, "-c", BOARD_A, f"{tag}a", "10.213.0.2", group,
                 str(port), str(tmp_path)],
                capture_output=True, text=True, timeout=120, env=env,
            )  # fmt: skip
            assert a.returncode == 0, a.stderr
            out = json.loads(a.stdout)
            got, _ = sub.communicate(timeout=30)
        finally:
            if sub.poll() is None:
                sub.kill()
                sub.wait()
        assert out["check"] is None
        assert out["check_missing"].startswith("no network interface 'nope0'; present:")
        assert f"{tag}a" in out["check_missing"]
        st = out["state"]
        assert st["mode"] == "iface" and st["netns"] == "" and st["iface"] == f"{tag}a"
        assert st["local_addr"] == st["mcast_iface_addr"] == "10.213.0.1" and st["peer_addr"] == "10.213.0.2"
        assert out["env"] == {
            "BOARDLAB_NETNS": "",
            "BOARDLAB_MCAST_IFACE_ADDR": "10.213.0.1",
            "BOARDLAB_PEER_ADDR": "10.213.0.2",
        }
        assert out["env_after"] is None  # the placement's environment is undone
        assert out["pub"]["ok"] and out["pub"]["service"]["sent"] == 50
        s = json.loads(got)["service"]
        assert s["received"] == 50 and s["lost"] == 0  # every message crossed the veth to the other board
        # the second veth has no address: refused with the fix
        chk = subprocess.run(
            ["ip", "netns", "exec", a_ns, sys.executable, "-c",
             "import sys; from boardlab.conditions.base import ApplyContext; "
             "from boardlab.conditions.journal import RestoreJournal; "
             "from boardlab.conditions.netns import KIND; "
             "from boardlab.platform.sysroot import SysRoot; from pathlib import Path; sr = SysRoot('/'); "
             "ctx = ApplyContext(sr, RestoreJournal(sr, Path(sys.argv[2]) / 'j2.json'), "
             "None, None, frozenset()); "
             "print(KIND.check({'mode': 'iface', 'iface': sys.argv[1], 'peer_addr': '10.213.0.2'}, ctx))",
             f"{tag}x", str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert chk.returncode == 0, chk.stderr
        assert f"interface '{tag}x' has no IPv4 address" in chk.stdout and "ip addr add" in chk.stdout
    finally:
        for ns in (a_ns, b_ns):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
