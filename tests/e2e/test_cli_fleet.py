"""`boardlab fleet run` input checks: each bad input is one line naming the option and the fix, exit 2,
before any board or coordinator is touched; an unreachable coordinator is a runtime failure (exit 1).
The fleet itself runs in tests/integration/test_fleet.py (root, network namespaces, sshd, labgrid)."""

from __future__ import annotations

import socket

import pytest

from helpers import run_cli

PLAN = 'name = "tiny"\n[[workloads]]\nname = "mibench.crc32"\n'


@pytest.fixture
def plan(tmp_path):
    p = tmp_path / "plan.toml"
    p.write_text(PLAN)
    return p


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "boardlab-native.tar.gz"
    proc = run_cli("bundle", "--arch", "native", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def fleet(*args, coordinator="127.0.0.1:1", places=("arch=x86_64",), db=None, tmp=None):
    return run_cli(
        "fleet",
        "run",
        *args,
        "--coordinator",
        coordinator,
        "--places",
        *places,
        "--db",
        str(db or tmp / "x.db"),
    )


def one_error_line(proc, *words):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("boardlab fleet: error: "), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_help_names_the_parts():
    proc = run_cli("fleet", "run", "--help")
    assert proc.returncode == 0
    for word in ("--coordinator", "--places", "--db", "--bundle", "--board-timeout", "--retries", "--json"):
        assert word in proc.stdout


def test_plan_or_preset(tmp_path, bundle):
    one_error_line(fleet("--bundle", str(bundle), tmp=tmp_path), "plan file or --preset")
    one_error_line(fleet(str(tmp_path / "nope.toml"), "--bundle", str(bundle), tmp=tmp_path), "nope.toml")


def test_a_sweep_plan_is_refused_before_any_board_is_asked(tmp_path, bundle):
    proc = fleet("--preset", "snoop-sweep", "--bundle", str(bundle), tmp=tmp_path)
    one_error_line(proc, "preset:snoop-sweep: [sweep]: a fleet plan may not use [sweep]", "[[conditions]]")
    assert not list(tmp_path.glob("*.db"))


def test_a_plan_beyond_the_cell_limit_is_refused_before_any_board_is_asked(tmp_path, bundle):
    huge = tmp_path / "huge.toml"
    sizes = ", ".join(str(4096 + i) for i in range(10_001))  # one cell per value: MAX_CELLS is 10,000
    huge.write_text(
        f'name = "huge"\n[[workloads]]\nname = "mem.latency"\nparams = {{ size_bytes = [{sizes}] }}\n'
    )
    one_error_line(fleet(str(huge), "--bundle", str(bundle), tmp=tmp_path), "huge.toml", "10001 cells")
    assert not list(tmp_path.glob("*.db"))


def test_bad_tags_address_and_bundle(tmp_path, plan, bundle):
    one_error_line(
        fleet(str(plan), "--bundle", str(bundle), places=("Arch=x",), tmp=tmp_path), "--places", "Arch=x"
    )
    one_error_line(fleet(str(plan), "--bundle", str(bundle), places=("arch",), tmp=tmp_path), "TAG=VALUE")
    one_error_line(
        fleet(str(plan), "--bundle", str(bundle), coordinator="labhost", tmp=tmp_path), "HOST:PORT"
    )
    one_error_line(
        fleet(str(plan), "--bundle", str(plan), tmp=tmp_path), "--bundle", "not a readable board bundle"
    )
    twice = fleet(str(plan), "--bundle", str(bundle), "--bundle", str(bundle), tmp=tmp_path)
    one_error_line(twice, "a second bundle for x86_64")
    one_error_line(fleet(str(plan), "--bundle", str(bundle), "--retries", "-1", tmp=tmp_path), "--retries -1")
    for remote in ("/var/tmp/x;id", "/var/tmp/$(id)", "/var/tmp/`id`", "/var/tmp/a\nb", "/var/tmp/..", "rel"):
        # it reaches the boards' shell: refused before any coordinator or board is asked
        one_error_line(
            fleet(str(plan), "--bundle", str(bundle), "--remote-dir", remote, tmp=tmp_path), "--remote-dir"
        )
    one_error_line(
        fleet(str(plan), "--bundle", str(bundle), db=tmp_path / "no" / "such" / "x.db"),
        "--db",
        "does not exist",
    )
    assert not list(tmp_path.glob("*.db"))


def test_an_unreachable_coordinator_is_a_runtime_failure(tmp_path, plan, bundle):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = fleet(str(plan), "--bundle", str(bundle), coordinator=f"127.0.0.1:{port}", tmp=tmp_path)
    if "labgrid is not installed" in proc.stderr:
        assert proc.returncode == 1 and "unsupported" in proc.stderr
        return
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"boardlab fleet: error: coordinator 127.0.0.1:{port}: cannot connect (Error: Could not connect to "
        "coordinator)"
    ]
    # a bundled plan passes the same checks and reaches the same point
    proc = fleet("--preset", "quick", "--bundle", str(bundle), coordinator=f"127.0.0.1:{port}", tmp=tmp_path)
    assert proc.returncode == 1 and "cannot connect" in proc.stderr
