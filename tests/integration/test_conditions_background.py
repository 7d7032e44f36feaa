"""Background loads beside the workload: a command of the user's, the satellite study's dd + gzip loop and
bursty loopback traffic. Each records its own CPU use with the run, and none outlives Ctrl-C or a killed
runner."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import group_members, run_cli, tagged_env, tagged_processes, wait_until

pytestmark = pytest.mark.integration

ONLINE = sorted(os.sched_getaffinity(0))
WORKER_CPU = ONLINE[-1]  # runs.cpu = "auto": the last online CPU
OTHER = ",".join(str(c) for c in ONLINE if c != WORKER_CPU)
needs_two_cpus = pytest.mark.skipif(len(ONLINE) < 2, reason="placement 'other' needs two CPUs")

PLAN = """\
name = "{name}"
[runs]
repetitions = {reps}
iterations = 3
[gates]
idle = false
[[workloads]]
name = "noop"
"""


def condition(name: str, kind: str, params: str) -> str:
    return f'[[conditions]]\nname = "{name}"\nkind = "{kind}"\nparams = {params}\n'


def write(tmp_path: Path, *conditions: str, reps: int = 2, name: str = "background") -> Path:
    p = tmp_path / "plan.toml"
    p.write_text(PLAN.format(name=name, reps=reps) + "".join(conditions))
    return p


def env(tmp_path: Path, tag: str = "") -> dict:
    """A private restore journal and temporary directory, and a tag on every process the campaign starts."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return tagged_env(
        tag or f"background-{os.getpid()}-{time.time()}",
        BOARDLAB_STATE_DIR=str(tmp_path / "state"),
        TMPDIR=str(tmp_path / "tmp"),
    )


def run(tmp_path: Path, plan: Path, **kw) -> subprocess.CompletedProcess:
    return run_cli("run", str(plan), "--db", str(tmp_path / "r.db"), env=env(tmp_path), **kw)


def states(db: Path, name: str) -> list[dict]:
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT r.condition_state_json FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE c.condition = ? ORDER BY r.seq",
            (name,),
        ).fetchall()
    return [json.loads(s) for (s,) in rows]


def assert_load_recorded(s: dict, *, bursty: bool = False) -> None:
    """What every background load records: its CPU use over the run, how it stopped, where it ran. A bursty
    load may sit in a pause for a whole short run, so its CPU use is only >= 0 per run (> 0 over the runs)."""
    assert s["load_cpu_pct"] >= 0 if bursty else s["load_cpu_pct"] > 0
    assert s["load_window_s"] > 0 and s["load_processes"] >= 1
    assert 0 <= s["stop_s"] < 5 and not s["load_killed"] and not s["load_exited_early"]
    assert s["load_exit_code"] == 0


# ---- command ----


@needs_two_cpus
def test_a_command_runs_on_the_other_cpus_is_restarted_when_it_ends_and_its_cpu_use_is_recorded(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(2 << 20))  # gzip needs a few tens of ms: it ends and restarts during a run
    plan = write(
        tmp_path,
        condition(
            "gzip", "command", f'{{ argv = ["gzip", "-c", "{data}"], placement = "other", warmup_s = 0.3 }}'
        ),
    )
    proc = run(tmp_path, plan)
    assert proc.returncode == 0, proc.stderr
    runs = states(tmp_path / "r.db", "gzip")
    assert len(runs) == 2
    for s in runs:
        assert_load_recorded(s)
        assert s["kind"] == "command" and s["argv"] == ["gzip", "-c", str(data)] and s["restart"] is True
        assert s["placement"] == "other" and s["cpus"] == OTHER
        assert s["starts"] >= 2 and s["restarts"] == s["starts"] - 1
        assert set(s["exit_codes"]) <= {"0"} and s["error"] is None
    assert not list((tmp_path / "tmp").iterdir()), "the private temporary directory is removed"


@pytest.mark.parametrize(
    "argv, how",
    [
        ('["true"]', "(exit 0)"),
        ('["sh", "-c", "exit 3"]', "(exit 3)"),
        ('["sh", "-c", "kill -KILL $$"]', "(killed by signal 9 (SIGKILL))"),
    ],
)
def test_a_command_that_ends_during_its_warm_up_stops_the_campaign_with_the_reason(tmp_path, argv, how):
    """The reason is the command's own end, not that of the supervisor that ran it (which exits 0)."""
    params = f"{{ argv = {argv}, restart = false, warmup_s = 0.5 }}"
    proc = run(tmp_path, write(tmp_path, condition("short", "command", params)))
    assert proc.returncode == 1
    name = json.loads(argv)[0]
    assert f"background command {name} ended during its 0.5 s warm-up {how}" in proc.stderr


@pytest.mark.parametrize(
    "params, message",
    [
        (
            '{ argv = "gzip -c /etc/passwd" }',
            "argv: expected a list of strings, found a string 'gzip -c /etc/passwd'",
        ),
        ("{ argv = [] }", 'expected the command as a non-empty list, e.g. argv = ["gzip", "-c"'),
        ('{ argv = ["gzip", 3] }', "argv: expected a list of strings, found an integer 3 in it"),
        (
            '{ argv = ["gzip"], placement = "elsewhere" }',
            "expected one of same, other, all, found 'elsewhere'; placement: where the load runs: same",
        ),
        ('{ argv = ["no-such-program-here"] }', "command 'no-such-program-here' is not found on PATH"),
    ],
)
def test_a_command_is_an_installed_program_as_an_argv_list(tmp_path, params, message):
    proc = run(tmp_path, write(tmp_path, condition("c", "command", params)))
    assert proc.returncode == 2
    assert message in proc.stderr


# ---- ddgzip ----


def test_the_dd_gzip_loop_creates_compresses_and_deletes_files_and_records_its_cpu_use(tmp_path):
    plan = write(
        tmp_path,
        condition("dd", "ddgzip", '{ source = "urandom", size = "1M", level = 1, warmup_s = 0.5 }'),
        condition("dd0", "ddgzip", '{ source = "zero", size = 1048576, placement = "same", warmup_s = 0.5 }'),
    )
    proc = run(tmp_path, plan)
    assert proc.returncode == 0, proc.stderr
    for name in ("dd", "dd0"):
        for s in states(tmp_path / "r.db", name):
            assert_load_recorded(s)
            assert s["kind"] == "ddgzip" and s["size_bytes"] == 1 << 20
            assert s["cycles"] >= 1 and s["errors"] == 0
            assert s["bytes_written"] == s["cycles"] << 20
            if name == "dd":  # random data does not compress; zeros do, a thousandfold
                assert s["bytes_compressed"] > s["bytes_written"] * 0.99
                assert s["placement"] == "all" and s["level"] == 1
            else:
                assert s["bytes_compressed"] < s["bytes_written"] / 100
                assert s["cpus"] == str(WORKER_CPU)
    assert not list((tmp_path / "tmp").iterdir()), "no file of the loop is left"


def test_dd_gzip_parameters_are_checked_at_plan_load(tmp_path):
    proc = run(tmp_path, write(tmp_path, condition("dd", "ddgzip", '{ source = "random", size = "1X" }')))
    assert proc.returncode == 2 and "source: expected one of urandom, zero, found 'random'" in proc.stderr
    proc = run(tmp_path, write(tmp_path, condition("dd", "ddgzip", '{ size = "1X" }')))
    assert proc.returncode == 2 and "size: expected bytes in [4K, 4G]" in proc.stderr


# ---- burstynet ----


@pytest.mark.parametrize("protocol", ["tcp", "udp"])
def test_bursty_loopback_traffic_stays_near_its_cpu_share_and_records_what_it_sent(tmp_path, protocol):
    share = 0.2
    plan = write(
        tmp_path,
        condition(
            "tor",
            "burstynet",
            f'{{ protocol = "{protocol}", cpu_share = {share}, seed = 7, burst_ms = 20, warmup_s = 1.0 }}',
        ),
    )
    proc = run(tmp_path, plan)
    assert proc.returncode == 0, proc.stderr
    tor_states = states(tmp_path / "r.db", "tor")
    for s in tor_states:
        assert_load_recorded(s, bursty=True)
        assert s["protocol"] == protocol and s["seed"] == 7 and s["target_cpu_pct"] == 20
        assert s["bursts"] >= 5 and s["bytes_sent"] > 0 and s["bytes_received"] > 0
        assert s["bytes_sent"] == s["messages_sent"] * 514  # Tor cells
        if protocol == "tcp":  # UDP may drop datagrams on a full receive buffer; TCP delivers them all
            assert s["bytes_received"] <= s["bytes_sent"]
        # The share is held over the load's life (closed loop): that is what it reports. A run's short window
        # may catch a burst, when the sender and the receiver both run flat out, each on a core of its own:
        # the load controls no more than that, so the window's use is bounded by its two busy processes on the
        # CPUs it may use (a busy machine stretches bursts in wall time, never beyond this bound).
        assert s["cpu_share"] < share * 1.5 + 0.05, s
        busy_cores = min(2, len(os.sched_getaffinity(0)))
        assert s["load_cpu_pct"] <= 100 * busy_cores, s


def test_bursty_traffic_parameters_are_checked_at_plan_load(tmp_path):
    proc = run(tmp_path, write(tmp_path, condition("t", "burstynet", "{ cpu_share = 1.5 }")))
    assert (
        proc.returncode == 2
        and "cpu_share: expected a number in [0, 1], found 1.5; cpu_share: the sender's mean share of one "
        "core, in (0, 1]"
        in proc.stderr
    )
    proc = run(tmp_path, write(tmp_path, condition("t", "burstynet", '{ protocol = "sctp" }')))
    assert proc.returncode == 2 and "protocol: expected one of tcp, udp, found 'sctp'" in proc.stderr


# ---- nothing left behind ----

LOADS = {
    "command": condition("load", "command", '{ argv = ["sleep", "600"], warmup_s = 0.3 }'),
    "ddgzip": condition("load", "ddgzip", '{ size = "4M", warmup_s = 0.3 }'),
    "burstynet": condition("load", "burstynet", "{ cpu_share = 0.3, warmup_s = 0.3 }"),
}
EXPECTED_MEMBERS = {"command": 2, "ddgzip": 2, "burstynet": 3}  # the program and what it runs or forks


def _programs(tag: str) -> set[int]:
    """The load programs among the tagged processes: the leaders of the loads' process groups."""
    leaders = set()
    for pid in tagged_processes(tag):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"boardlab.conditions.programs" in argv and os.getpgid(pid) == pid:
            leaders.add(pid)
    return leaders


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
@pytest.mark.parametrize("kind", list(LOADS))
def test_no_background_load_outlives_ctrl_c_or_a_killed_runner(tmp_path, kind, sig):
    tag = f"bg-{kind}-{sig}-{os.getpid()}-{time.time()}"
    plan = write(tmp_path, LOADS[kind], reps=40, name=f"leftovers-{kind}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(tmp_path / "r.db"), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(tmp_path, tag),
    )
    groups: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        groups |= _programs(tag)
        journaled = list((tmp_path / "state").glob("restore-*.json"))
        if len(group_members(groups)) >= EXPECTED_MEMBERS[kind] and journaled:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail(f"the {kind} load never got going: {proc.communicate()[1]}")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), err
    wait_until(lambda: not group_members(groups) and not tagged_processes(tag), 5)  # 5 s allowed
    assert not group_members(groups), f"the {kind} load outlived the runner"
    assert not tagged_processes(tag)
    if sig == signal.SIGINT:
        assert not list((tmp_path / "state").glob("restore-*.json")), "a clean stop leaves nothing to restore"
