"""A program whose figure is its time or rusage, one execution a run, is started by the runner itself,
through boardlab-kern's launcher (one process per campaign): no launcher worker, so no interpreter start-up
per run. What a launcher guaranteed still holds: its argv unchanged, pinned to the run's CPU, what it leaves
running in its group killed at its end, a hang killed at its timeout, a failure stored with its stderr's
tail (kept bounded), and a SIGKILLed boardlab leaves none of it running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.campaign.plan import parse_plan, plan_catalog
from boardlab.native import kern_path
from boardlab.workloads import all_workloads

from helpers import RESULT, rows, sleeping, tagged_env, tagged_processes

pytestmark = pytest.mark.integration

# Starts `boardlab ARGS` and prints its peak resident set (KiB, wait4) on stderr's last line.
PEAK_RSS = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, _, ru = os.wait4(p.pid, 0)\n"
    "print(ru.ru_maxrss, file=sys.stderr)\n"
)


def _plan(out: Path, marker: str) -> str:
    words = f'printf "%s|" "$0" "$@" > {out}/words.$$; cat /proc/$PPID/cmdline > {out}/parent.$$.$PPID'
    pinned = f"grep Cpus_allowed_list /proc/self/status > {out}/cpus.$$"
    loud = "head -c 104857600 /dev/zero | tr '\\\\0' x >&2; echo >&2; echo the end >&2; exit 1"
    return f"""\
name = "direct"
[runs]
repetitions = 2
max_reruns = 0
cpu = {max(os.sched_getaffinity(0))}
[gates]
idle = false
temperature = false
[[workloads]]
kind = "program"
name = "words"
argv = ["sh", "-c", '{words}; {pinned}', "a b", "$HOME", "{{{{x}}}}"]
[[workloads]]
kind = "program"
name = "background"
argv = ["sh", "-c", "sleep {marker} & echo started"]
[[workloads]]
kind = "program"
name = "hang"
argv = ["sh", "-c", "echo started >&2; sleep 30"]
timeout_s = 1
[[workloads]]
kind = "program"
name = "fails"
argv = ["sh", "-c", "echo the disk is full >&2; exit 4"]
metric = {{ rusage = "user_s" }}
[[workloads]]
kind = "program"
name = "loud"
argv = ["sh", "-c", "{loud}"]
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("direct")
    (tmp / "out").mkdir()
    marker = f"59.{os.getpid()}"  # a sleep of 59.PID seconds: an argv no other process has
    (tmp / "plan.toml").write_text(_plan(tmp / "out", marker))
    db = tmp / "r.db"
    env = tagged_env(f"direct-{os.getpid()}-{time.time()}", BOARDLAB_STATE_DIR=str(tmp / "state"))
    boardlab = [sys.executable, "-m", "boardlab", "run", str(tmp / "plan.toml"), "--db", str(db)]
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *boardlab], capture_output=True, text=True, timeout=600, env=env
    )
    time.sleep(0.2)
    left = sleeping(marker)
    return tmp, db, int(proc.stderr.split()[-1]), left


def _runs(db: Path, workload: str) -> list[tuple]:
    return rows(
        db,
        "SELECT r.ok, r.error, r.wall_ns, r.rusage_json, w.worker_json FROM runs r JOIN cells c"
        f" ON c.id = r.cell_id{RESULT} WHERE c.workload = '{workload}' ORDER BY r.seq",
    )


def test_the_runner_starts_the_program_itself_with_its_argv_unchanged_and_pinned(campaign):
    tmp, db, _, _ = campaign
    runs = _runs(db, "words")
    assert len(runs) == 2 and all(ok for ok, *_ in runs), runs
    for _, _, wall_ns, rusage_json, worker_json in runs:
        assert json.loads(worker_json)["tool"] == "boardlab.runner"
        rusage = json.loads(rusage_json)  # no launcher: nothing of its own to leave out
        assert rusage["launcher_utime_us"] == 0 and rusage["launcher_stime_us"] == 0
        assert 0 < wall_ns < 1e9
    out = tmp / "out"
    for words in out.glob("words.*"):  # no shell between: "$HOME" and the doubled braces as written
        assert words.read_text() == "a b|$HOME|{x}|"  # sh -c SCRIPT: the next word is $0
    parents = {p.name.rsplit(".", 1)[1]: p.read_text().split("\0") for p in out.glob("parent.*")}
    # one parent for both runs, boardlab-kern's launcher (the argv the kernel keeps, NUL-separated): no
    # process started per run between the runner and the program
    assert len(list(out.glob("parent.*"))) == 2 and len(parents) == 1, parents
    (argv,) = parents.values()
    assert Path(argv[0]).name == "boardlab-kern" and argv[1:] == ["launch", ""], argv
    cpus = {p.read_text().split()[-1] for p in out.glob("cpus.*")}
    assert cpus == {str(max(os.sched_getaffinity(0)))}


def test_what_the_program_leaves_running_in_its_group_is_killed_at_its_end(campaign):
    _, db, _, left = campaign
    assert all(ok for ok, *_ in _runs(db, "background"))
    assert left == []


def test_a_hang_is_killed_at_its_timeout_and_a_failure_keeps_its_stderr_tail(campaign):
    _, db, _, _ = campaign
    hung = _runs(db, "hang")
    assert len(hung) == 2
    for ok, error, wall_ns, *_ in hung:
        assert not ok and error.startswith("timed out after 1 s (timeout_s): killed with its process group")
        assert error.endswith("stderr: started") and 1e9 <= wall_ns < 5e9
    failed = _runs(db, "fails")
    assert [(ok, error) for ok, error, *_ in failed] == [(0, "sh exited 4; stderr: the disk is full")] * 2


def test_a_program_s_100_mib_of_stderr_is_kept_bounded(campaign):
    _, db, peak_kib, _ = campaign
    loud = _runs(db, "loud")
    assert len(loud) == 2
    for ok, error, *_ in loud:
        assert not ok and error.startswith("sh exited 1; stderr: ") and error.endswith("xxx\nthe end")
    assert peak_kib < 100 << 10, f"boardlab's peak resident set was {peak_kib} KiB"


def test_a_sigkilled_boardlab_leaves_no_program_running(tmp_path):
    """A program the runner started has no death signal (posix_spawn runs nothing in the child to ask for
    one): the campaign's launcher, whose stdin closes with the runner, kills its group and exits."""
    marker = f"58.{os.getpid()}"
    (tmp_path / "plan.toml").write_text(
        'name = "killed"\n[runs]\nrepetitions = 3\n[gates]\nidle = false\ntemperature = false\n'
        f'[[workloads]]\nkind = "program"\nname = "sleeper"\nargv = ["sleep", "{marker}"]\n'
    )
    tag = f"killed-{os.getpid()}-{time.time()}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardlab",
            "run",
            str(tmp_path / "plan.toml"),
            "--db",
            str(tmp_path / "r.db"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=tagged_env(tag, BOARDLAB_STATE_DIR=str(tmp_path / "state")),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "sleep" not in tagged_processes(tag).values():
        time.sleep(0.05)
    assert "sleep" in tagged_processes(tag).values(), "the program did not start"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and tagged_processes(tag):
        time.sleep(0.05)
    assert tagged_processes(tag) == {}, "the program or the launcher outlived the killed runner"


def test_without_the_launcher_programs_are_started_by_boardlab_itself_and_it_says_so(tmp_path):
    """A boardlab-kern that does not serve `launch` (an older build named by BOARDLAB_KERN): the runner
    starts the programs from Python, with its guard, and notes why once."""
    kern = tmp_path / "kern-without-launch"
    real = kern_path()
    kern.write_text(f'#!/bin/sh\n[ "$1" = launch ] && {{ echo "no launcher in this build" >&2; exit 2; }}\n'
                    f'exec "{real}" "$@"\n')  # fmt: skip
    kern.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "plan.toml").write_text(
        'name = "fallback"\n[runs]\nrepetitions = 2\n[gates]\nidle = false\ntemperature = false\n'
        f'[[workloads]]\nkind = "program"\nname = "parent"\n'
        f'argv = ["sh", "-c", "cat /proc/$PPID/cmdline > {out}/parent.$$"]\n'
    )
    db = tmp_path / "r.db"
    env = tagged_env(
        f"fallback-{os.getpid()}", BOARDLAB_STATE_DIR=str(tmp_path / "state"), BOARDLAB_KERN=str(kern)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab", "run", str(tmp_path / "plan.toml"), "--db", str(db)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("not by boardlab-kern's launcher") == 1, proc.stderr
    assert "no launcher in this build" in proc.stderr
    assert all(ok for ok, *_ in _runs(db, "parent"))
    parents = [p.read_text().split("\0") for p in out.glob("parent.*")]
    assert len(parents) == 2 and all(p[1:3] == ["-m", "boardlab"] for p in parents), parents


@pytest.mark.parametrize(
    ("body", "direct"),
    [
        ('argv = ["true"]\n', True),
        ('argv = ["true"]\nmetric = { rusage = "maxrss_kib" }\n', True),
        ('argv = ["true"]\niterations = 2\n', False),
        ('argv = ["true"]\nprepare_each = ["true"]\n', True),
        ('argv = ["echo", "1"]\nmetric = { regex = "(?P<v>1)", unit = "n", better = "higher" }\n', False),
        ('argv = ["true"]\nmetric = { parser = "sysbench" }\n', False),
    ],
)
def test_the_runner_starts_it_itself_only_when_no_launcher_is_needed(tmp_path, body, direct):
    """Output read for the figure and several executions a run are the launcher worker's."""
    path = tmp_path / "plan.toml"
    path.write_text(
        f'name = "p"\n[runs]\nunsupported = "skip"\n[[workloads]]\nkind = "program"\nname = "x"\n{body}'
    )
    catalog = {w.name: w for w in all_workloads() if w.runner == "python"}
    plan = parse_plan(path.read_text(), str(path), catalog)
    assert "x" not in catalog  # the plan's own, not added to the catalog it was given
    spec = plan_catalog(plan, catalog)["x"]
    assert spec.direct is not None and (spec.direct({}) is not None) == direct


def test_prepare_each_runs_before_the_program_outside_its_time_and_its_failure_fails_the_run(tmp_path):
    flag = tmp_path / "flag"
    (tmp_path / "plan.toml").write_text(
        'name = "each"\n[runs]\nrepetitions = 2\nmax_reruns = 0\n[gates]\nidle = false\ntemperature = false\n'
        f'[[workloads]]\nkind = "program"\nname = "each"\nargv = ["rm", "{flag}"]\n'
        f'prepare_each = ["sh", "-c", "sleep 0.3; touch {flag}"]\n'
        f'[[workloads]]\nkind = "program"\nname = "broken"\nargv = ["true"]\n'
        'prepare_each = ["sh", "-c", "echo no cache to drop >&2; exit 2"]\n'
    )
    db = tmp_path / "r.db"
    env = tagged_env(f"each-{os.getpid()}", BOARDLAB_STATE_DIR=str(tmp_path / "state"))
    subprocess.run(
        [sys.executable, "-m", "boardlab", "run", str(tmp_path / "plan.toml"), "--db", str(db)],
        capture_output=True, timeout=300, env=env,
    )  # fmt: skip
    each = _runs(db, "each")
    assert len(each) == 2 and all(ok for ok, *_ in each), each  # each rm found the flag made before it
    for _, _, wall_ns, _, worker_json in each:
        assert (
            json.loads(worker_json)["tool"] == "boardlab.runner" and wall_ns < 0.25e9
        )  # the sleep is not timed
    broken = _runs(db, "broken")
    assert [(ok, error) for ok, error, *_ in broken] == [
        (0, "prepare_each failed: sh exited 2; stderr: no cache to drop")
    ] * 2


def test_short_runs_are_stored_a_few_at_a_time_and_a_stop_stores_those_that_ended(tmp_path):
    """Runs shorter than WRITE_EVERY_S share a commit (one cost a 0.5 ms program as much as its run); a Ctrl-C
    stores every run that ended before it: as many runs stored as the progress said finished."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "short"\n[runs]\nrepetitions = 10000\n[gates]\nidle = false\ntemperature = false\n'
        '[[workloads]]\nkind = "program"\nname = "true"\nargv = ["true"]\n'
    )
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    finished = 0
    for line in proc.stderr:  # one line a finished run (stderr is not a terminal)
        finished += line.startswith("[")
        if finished == 300:
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=60)[1]
    finished += sum(line.startswith("[") for line in rest.splitlines())
    assert proc.returncode == 130, rest
    assert rows(db, "SELECT count(*) FROM runs") == [(finished,)] and finished >= 300
    assert rows(db, "SELECT status FROM campaigns") == [("interrupted",)]
