"""`boardlab fleet run` end to end on the real parts: a labgrid coordinator and exporter on loopback, three
fake boards (network namespaces running Debian's sshd, each with its own hostname and bundle install), a
fake power switch through labgrid's ExternalPowerDriver, and PostgreSQL started by the test.

The key test kills one board's sshd mid-campaign: the fleet must find it dead, power-cycle it, resume its
campaign, finish the other boards, and store every run of every board exactly once."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from fleet_lab import BIN, Lab, missing, wait_for
from pg import pg_server, pg_url  # noqa: F401  (pytest fixtures)

from helpers import reaped

pytestmark = pytest.mark.integration

why = missing()
if why:
    pytest.skip(f"fleet lab: {why}", allow_module_level=True)

# Two quick kernels, 3 repetitions: 6 runs per board. The pause before each run makes the campaign last long
# enough on a loaded two-core machine to be caught in the middle.
PLAN = """
name = "fleet-tiny"
seed = 3

[runs]
repetitions = 3
iterations = 3
warmup_max_iterations = 0

[gates]
idle = false
temperature = false
cooldown_s = 1.0

[[workloads]]
name = "mibench.crc32"

[[workloads]]
name = "mibench.sha1"
"""
RUNS_PER_BOARD = 6


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "boardlab-native.tar.gz"
    subprocess.run(
        [str(BIN / "boardlab"), "bundle", "--arch", "native", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def _running_lab(where: Path, boards: int, prefix: str):
    """A lab of `boards` boards in `where`, started, stopped when its fixture ends."""
    lab = Lab(where, boards, f"{prefix}{os.getpid()}")
    try:
        yield lab.start()
    finally:
        lab.stop()


@pytest.fixture
def lab(tmp_path):
    yield from _running_lab(tmp_path, 3, "t")


@pytest.fixture
def lab_alone(tmp_path):
    """One board for one test, left as the test leaves it (a campaign a forced stop did not wait for)."""
    yield from _running_lab(tmp_path, 1, "k")


@pytest.fixture(scope="module")
def lab1(tmp_path_factory):
    """One board, shared by the module's tests of a single board: starting a lab (namespace, sshd, labgrid's
    coordinator, exporter and places) took 4-8 s of each test. Each test leaves it as it found it: no place
    held (the test that locks board1 for another user releases it) and its campaigns' files in a directory of
    its own on the board (`--remote-dir`), so no test sees another's."""
    yield from _running_lab(tmp_path_factory.mktemp("lab1"), 1, "u")


LABEL = "-O2 'kernel' 6.6 -> 6.12; $(id)"  # spaces, quotes, shell characters, a leading dash


def fleet_cmd(
    lab: Lab, plan: Path, db: str, bundle: Path, keep: Path, *extra, boot_timeout_s: int = 30, remote=None
) -> list[str]:
    """`--boot-timeout` also bounds the reconnect that calls a board dead: the dead-board test waits it out
    once, and gives a shorter one (a fake board's sshd is back within a second of its power cycle)."""
    return [
        str(BIN / "boardlab"), "fleet", "run", str(plan),
        "--coordinator", lab.coordinator, "--places", f"fleet={lab.tag}", "--db", db,
        "--bundle", str(bundle), "--ssh-key", str(lab.key),
        "--lg-env", str(lab.lg_env(keep.parent / "env.yaml")),
        "--remote-dir", str(remote or lab.remote_root), "--poll", "1",
        "--boot-timeout", str(boot_timeout_s),
        *(extra if "--retries" in extra else ("--retries", "2", *extra)), "--keep", str(keep),
    ]  # fmt: skip


def short_tmpdir() -> Path:
    """A new directory of at most 12 bytes' path (/tmp/fNNNNNN), as a user's TMPDIR is (mkdtemp's are 13)."""
    for i in range(1000):
        path = Path(f"/tmp/f{(os.getpid() * 1000 + i) % 1_000_000}")
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        assert len(str(path)) <= 12
        return path
    raise AssertionError("no free /tmp/fNNNNNN")


def store_runs(url: str) -> dict[str, list[tuple]]:
    """board hostname -> (cell key, repetition, attempt) of every run in the shared store."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT b.inventory_json, c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON"
            " c.id = r.cell_id JOIN campaigns k ON k.id = r.campaign_id JOIN boards b ON b.id = k.board_id"
        ).fetchall()
    out: dict[str, list[tuple]] = {}
    for inv, key, rep, attempt in rows:
        out.setdefault(json.loads(inv)["hostname"], []).append((key, rep, attempt))
    return out


def board_runs(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id"
        ).fetchall()
    finally:
        conn.close()


def test_a_dead_board_is_power_cycled_and_resumed_nothing_lost_or_duplicated(
    lab,
    bundle,
    tmp_path,
    pg_url,  # noqa: F811 - the fixture imported from pg
):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    keep = tmp_path / "keep"
    keep.mkdir()
    log = open(tmp_path / "fleet.err", "w+")
    # the fleet's TMPDIR: nothing may stay behind (labgrid's lg-ssh-*); short, as a user's is (one longer
    # than 12 bytes makes the fleet use /tmp, beyond this test's view)
    scratch = short_tmpdir()
    proc = subprocess.Popen(
        fleet_cmd(lab, plan, pg_url, bundle, keep, "--json", "--label", LABEL, boot_timeout_s=10),
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    try:
        with reaped(proc):
            victim = lab.remote_root / "board2" / "run.log"
            # in the middle of board2's campaign: at least two runs stored, not all of them
            wait_for(
                lambda: victim.exists() and re.search(r"\[[2-4]/6\]", victim.read_text()),
                150,
                "board2's runs",
            )
            assert lab.hang("board2") >= 1  # its campaign was frozen, not only its sshd killed
            t_hang = time.time()
            out, _ = proc.communicate(timeout=170)
            left = sorted(p.name for p in scratch.iterdir())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.seek(0)
    err = log.read()
    assert proc.returncode == 0, err
    # each reconnect to the hung board made a directory of labgrid's (one per try); the fleet removes them
    assert left == []
    doc = json.loads(out)
    boards = {b["place"]: b for b in doc["boards"]}
    assert set(boards) == {"board1", "board2", "board3"}
    assert all(b["status"] == "done" for b in boards.values()), err
    # the victim: found dead, power-cycled through its labgrid power driver, resumed in a second attempt
    victim_attempts = boards["board2"]["attempts"]
    assert [a["outcome"] for a in victim_attempts][0] == "dead", victim_attempts
    assert victim_attempts[0]["power_cycled"] is True
    assert victim_attempts[-1]["outcome"] == "done"
    assert boards["board2"]["power_cycles"] >= 1
    for other in ("board1", "board3"):
        # the attempts whole, reasons included: pytest's repr of the board cut them off (seen once under load)
        attempts = boards[other]["attempts"]
        assert [a["outcome"] for a in attempts] == ["done"], json.dumps(attempts, indent=1)
        assert boards[other]["power_cycles"] == 0
    assert "board2: dead" in err and "power-cycling" in err
    # the victim's campaign was resumed, not restarted: runs from before the hang are kept, the rest
    # were run after the power cycle
    started = [r[0] for r in sqlite3.connect(keep / "board2" / "fetched" / "results.db").execute(
        "SELECT started_unix_s FROM runs WHERE valid = 1")]  # fmt: skip
    assert 2 <= sum(t < t_hang for t in started) < RUNS_PER_BOARD
    assert sum(t > t_hang for t in started) >= 1
    # nothing lost, nothing duplicated: every board's own database, run for run, in the shared store
    stored = store_runs(pg_url)
    for b in lab.boards:
        own = board_runs(keep / b / "fetched" / "results.db")
        host = f"{b}-{lab.tag}"
        assert sorted(stored[host]) == sorted(own), b
        assert len(set(own)) == len(own)
        assert {(k, r) for k, r, _ in own} == {
            (k, r) for k in {k for k, _, _ in own} for r in (1, 2, 3)
        } and len({k for k, _, _ in own}) == 2
        assert boards[b]["ingest"]["runs_added"] == len(own) >= RUNS_PER_BOARD
    # every board's campaign carries the fleet's --label, and its summary for serve and history was stored
    import psycopg

    with psycopg.connect(pg_url) as conn:
        labels = conn.execute("SELECT label FROM campaigns").fetchall()
        summarized = conn.execute("SELECT count(*) FROM campaign_summaries").fetchone()[0]
    assert labels == [(LABEL,)] * 3 and summarized == 3
    # the board is left clean: no campaign process, only its sshd
    for b in lab.boards:
        assert {lab.comm(p) for p in lab.ns_pids(b)} <= {"sshd"}, b
    assert not any(lab.places_acquired().values())

    # a second fleet run of the same plan finds every campaign complete and stores nothing twice
    (tmp_path / "keep2").mkdir()
    again = subprocess.run(
        fleet_cmd(lab, plan, pg_url, bundle, tmp_path / "keep2", "--json"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert all(b["ingest"]["runs_added"] == 0 for b in json.loads(again.stdout)["boards"])
    assert store_runs(pg_url) == stored


def test_ctrl_c_stops_every_campaign_and_releases_every_place(lab, bundle, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("cooldown_s = 1.0", "cooldown_s = 3.0"))
    keep = tmp_path / "keep"
    keep.mkdir()
    db = tmp_path / "fleet.db"
    proc = subprocess.Popen(
        fleet_cmd(lab, plan, str(db), bundle, keep), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    with reaped(proc):

        def measuring(b):  # the runner has started (its signal handling is in place), not finished
            log = lab.remote_root / b / "run.log"
            return (
                log.exists()
                and "campaign fleet-tiny:" in log.read_text()
                and not (log.parent / "done").exists()
            )

        wait_for(lambda: all(measuring(b) for b in lab.boards), 150, "every board's campaign")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    for b in lab.boards:
        # the campaign was stopped in order (SIGTERM: its conditions reverted, its runs kept) ...
        assert (lab.remote_root / b / "done").read_text().strip() == "130", b
        # ... and nothing of boardlab is left on the board
        assert {lab.comm(p) for p in lab.ns_pids(b)} <= {"sshd"}, b
    assert not any(lab.places_acquired().values())
    # no stray local process: no worker, no ssh of ours
    assert _local_strays(keep, lab.key) == []


def _local_strays(*marks: Path) -> list[bytes]:
    """The command lines of this machine's processes that name any of `marks` (a worker's directory, the
    lab's SSH key: every ssh of the fleet's has `-i KEY`)."""
    strays = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if any(str(m).encode() in cmd for m in marks):
                strays.append(cmd)
    return strays


def test_a_second_ctrl_c_kills_the_workers_and_leaves_no_ssh_of_theirs(lab_alone, bundle, tmp_path):
    """The second Ctrl-C does not wait for the boards: the workers are SIGKILLed, and with them would stay
    their labgrid SSH masters (a session of their own, five minutes' ControlPersist), which the controller
    stops, and their places acquired, which it releases. The board is left as the interrupted stop left it:
    this lab is this test's alone."""
    lab = lab_alone
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("cooldown_s = 1.0", "cooldown_s = 3.0"))
    keep = tmp_path / "keep"
    keep.mkdir()
    proc = subprocess.Popen(
        fleet_cmd(lab, plan, str(tmp_path / "fleet.db"), bundle, keep),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with reaped(proc):
        log = lab.remote_root / "board1" / "run.log"
        wait_for(lambda: log.exists() and "campaign fleet-tiny:" in log.read_text(), 150, "the campaign")
        proc.send_signal(signal.SIGINT)
        # the worker is stopping the board's campaign over SSH (seconds: the runner reverts its
        # conditions): its master is up when the second Ctrl-C comes
        time.sleep(0.3)
        assert _local_strays(lab.key), "the worker's ssh master ended before the second Ctrl-C"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    deadline = time.monotonic() + 5  # SIGTERMed: an ssh master closes its socket and exits
    while _local_strays(keep, lab.key) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _local_strays(keep, lab.key) == []
    # the killed worker held its place: the controller released it, for the next run
    assert lab.places_acquired() == {"board1": False}
    assert "board1: released" in err


def test_no_place_with_the_tags_is_bad_input(lab1, bundle, tmp_path):
    """A coordinator with a place, tagged otherwise (one board is enough: no board is used)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    r = subprocess.run(
        [str(BIN / "boardlab"), "fleet", "run", str(plan), "--coordinator", lab1.coordinator,
         "--places", "fleet=nosuchlab", "--db", str(tmp_path / "x.db"), "--bundle", str(bundle)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2
    assert "no place on the coordinator" in r.stderr and "fleet=nosuchlab" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_board_out_of_time_after_its_retries_fails_with_its_unfinished_cells(lab1, bundle, tmp_path):
    """Each attempt gets --board-timeout; a campaign that needs longer is stopped (in order), the board
    power-cycled and resumed; when the retries are spent the board fails (exit 1, saying why), its finished
    runs are stored and the runs it never did are listed, not faked."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("cooldown_s = 1.0", "cooldown_s = 4.0"))
    keep = tmp_path / "keep"
    keep.mkdir()
    db = tmp_path / "fleet.db"
    remote = lab1.remote_root / tmp_path.name  # this test's own, on the shared board (lab1)
    r = subprocess.run(
        fleet_cmd(lab1, plan, str(db), bundle, keep, "--board-timeout", "9", "--retries", "1", "--json",
                  remote=remote),
        capture_output=True, text=True, timeout=170,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    (board,) = json.loads(r.stdout)["boards"]
    assert board["status"] == "failed"
    assert "2 attempts failed" in board["reason"] and "timed out after 9 s" in board["reason"]
    assert [a["outcome"] for a in board["attempts"]] == ["timeout", "timeout"]
    assert all(a["power_cycled"] for a in board["attempts"]) and board["power_cycles"] == 2
    own = board_runs(keep / "board1" / "fetched" / "results.db")
    done = {(k, rep) for k, rep, _ in own}
    assert 1 <= len(done) < RUNS_PER_BOARD
    missing = {(k, rep) for k, reps in board["unfinished"].items() for rep in reps}
    assert len(done) + len(missing) == RUNS_PER_BOARD and not done & missing
    assert board["ingest"]["runs_added"] == len(own)
    from boardlab.store import Store

    with Store.open(db, create=False) as store:
        assert store.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == len(own)
    assert "board1: FAILED" in r.stderr


def test_a_board_someone_else_holds_is_waited_for_then_failed_and_never_used(lab1, bundle, tmp_path):
    """The place is locked by another user: the fleet's reservation waits for it (up to --reserve-timeout),
    then gives the board up with the reason, without touching it; the lock stays the other user's."""
    other = {**os.environ, "LG_USERNAME": "someone"}

    def client(verb: str) -> None:
        subprocess.run(
            [str(BIN / "labgrid-client"), "-x", lab1.coordinator, "-p", "board1", verb],
            env=other, check=True, capture_output=True, timeout=60,
        )  # fmt: skip

    client("acquire")
    try:
        plan = tmp_path / "plan.toml"
        plan.write_text(PLAN)
        keep = tmp_path / "keep"
        keep.mkdir()
        remote = lab1.remote_root / tmp_path.name  # this test's own, on the shared board (lab1)
        db = str(tmp_path / "fleet.db")
        r = subprocess.run(
            fleet_cmd(lab1, plan, db, bundle, keep, "--reserve-timeout", "3", "--json", remote=remote),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 1, r.stderr
        (board,) = json.loads(r.stdout)["boards"]
        assert board["status"] == "failed" and "not free after 3 s" in board["reason"]
        assert board["attempts"] == [] and not (remote / "board1").exists()
        who = lab1._client("who").stdout
        assert "someone" in who and "board1" in who
    finally:
        client("release")  # the lab is shared (lab1): the next test finds board1 free


def test_hostile_place_names_and_a_hostile_board_write_nothing_outside_their_directories(bundle, tmp_path):
    """labgrid's coordinator accepts any place name: `..`, `../../x`, `a/b` and an absolute path are refused
    before they are touched (nothing written here or on the board), while `a b` and `a;b`, which once shared
    one directory on the board, each run in their own. A board answering `fleet.sh files` with a name of its
    own (`../../../x`) is not trusted: its board fails naming it, and nothing of it is copied."""
    refused = ["..", "../../x", "a/b", str(tmp_path / "abs")]
    odd = ["a b", "a;b"]
    (tmp_path / "lab").mkdir()
    lab = Lab(tmp_path / "lab", 2, f"h{os.getpid()}", aliases=dict.fromkeys(refused + odd, "board1"),
              file_lists={"board2": ["results.db", "../../../x"]})  # fmt: skip
    try:
        lab.start()
        _hostile_lab_run(lab, bundle, tmp_path, refused, odd)
    finally:
        lab.stop()


def _hostile_lab_run(lab: Lab, bundle: Path, tmp_path: Path, refused: list[str], odd: list[str]) -> None:
    """The fleet run of the test above, and what it left where."""
    remote = lab.remote_root / "r1" / "r2"  # `..` and `../../..` from a place's directory stay in the lab
    (lab.remote_root / "x").write_text("the board's own file")
    plan = tmp_path / "plan.toml"
    one_run = PLAN.replace("repetitions = 3", "repetitions = 1")
    plan.write_text(one_run.replace('\n[[workloads]]\nname = "mibench.sha1"\n', ""))
    keep = tmp_path / "out" / "keep"
    keep.mkdir(parents=True)
    r = subprocess.run(
        fleet_cmd(lab, plan, str(tmp_path / "out" / "fleet.db"), bundle, keep, "--json", remote=remote),
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    boards = {b["place"]: b for b in json.loads(r.stdout)["boards"]}
    assert set(boards) == {"board1", "board2", *refused, *odd}
    for name in refused:
        assert boards[name]["status"] == "failed" and boards[name]["attempts"] == [], boards[name]
        assert (
            f"place {name!r}: " in boards[name]["reason"]
            and "cannot name a directory" in boards[name]["reason"]
        )
    ran = ["board1", *odd]
    dirs = {boards[p]["dir"] for p in ran}
    assert all(boards[p]["status"] == "done" for p in ran), r.stderr
    assert len(dirs) == 3 and "board1" in dirs
    for d in dirs:  # each place its own results, here and on the board
        assert (keep / d / "fetched" / "results.db").is_file() and (remote / d / "results.db").is_file()
    hostile = boards["board2"]
    assert hostile["status"] == "failed" and "'../../../x'" in hostile["reason"], hostile
    assert "does not name" in hostile["reason"]
    assert not (keep / "board2" / "fetched").exists() or not list((keep / "board2" / "fetched").iterdir())
    # nothing anywhere else: not beside --keep, not above it, not at the absolute path; on the board, nothing
    # beside --remote-dir
    assert sorted(p.name for p in keep.iterdir()) == sorted(dirs | {"board2"})
    assert {p.name for p in (tmp_path / "out").iterdir()} <= {
        "keep",
        "env.yaml",  # the test's labgrid environment (fleet_cmd)
        "fleet.db",
        "fleet.db-wal",
        "fleet.db-shm",
    }
    assert not (tmp_path / "x").exists() and not (tmp_path / "abs").exists()
    assert sorted(p.name for p in remote.iterdir()) == sorted(dirs | {"board2"})
    assert [p.name for p in (lab.remote_root / "r1").iterdir()] == ["r2"]
    assert sorted(p.name for p in lab.remote_root.iterdir()) == ["r1", "x"]
