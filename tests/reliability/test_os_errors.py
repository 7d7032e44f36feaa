"""Cases 6 and 7: every operating-system error the CLI meets ends in exit 2 (the place the user chose is
wrong) or 1 (the machine failed) with one line naming the path and the fix, never a traceback; and the
message says what is really wrong (read-only directory, full disk, corrupted database)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from reliability.util import assert_one_line_error, in_namespace, stored_runs, write_plan

from boardlab.store import Store

from helpers import SYSFS, grow_sparse, header_pages, run_cli

GOVERNOR = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"


def _result(out: Path) -> subprocess.CompletedProcess:
    """What a boardlab started inside a namespace script printed (the script saves it under `out`)."""
    return subprocess.CompletedProcess(
        [], int((out / "rc").read_text()), (out / "stdout").read_text(), (out / "stderr").read_text()
    )


BOARDLAB_IN_NS = (
    '"$PY" -m boardlab "$@" > "$OUT/stdout" 2> "$OUT/stderr" && echo 0 > "$OUT/rc" || echo $? > "$OUT/rc"'
)


# ---- a full disk -----------------------------------------------------------------------------------------


def test_disk_full_mid_campaign_is_exit_1_with_a_message_and_resume_works(mount_ns, lab):
    plan = write_plan(lab / "full.toml", reps=20, iterations=300, runs_extra="warmup_max_ms = 0")
    # 1 MiB: the store's schema and the campaign's workload facts take about half of it before the first run,
    # and the 20 runs of 300 values would need more than the rest
    mnt, out, kept = lab / "mnt", lab / "out", lab / "kept"
    for d in (mnt, out, kept):
        d.mkdir()
    script = f"""
mount -t tmpfs -o size=1m boardlab-full "$MNT"
run() {{ {BOARDLAB_IN_NS}; }}
run run "$PLAN" --db "$MNT/r.db" --quiet
cp "$MNT"/r.db* "$KEPT"/
"""
    ns = in_namespace(
        mount_ns, script, {"MNT": str(mnt), "OUT": str(out), "KEPT": str(kept), "PLAN": str(plan)}
    )
    assert ns.returncode == 0, ns.stderr
    proc = _result(out)
    assert_one_line_error(proc, 1, "r.db", "full", "free space")
    done = stored_runs(kept / "r.db")
    assert 1 <= done < 20  # the runs finished before the disk filled are kept ...
    resumed = run_cli("run", str(plan), "--db", str(kept / "r.db"), timeout=600)
    assert resumed.returncode == 0, resumed.stderr  # ... and the campaign resumes from them, with room
    assert f"resuming ({done} of 20 runs already stored)" in resumed.stderr
    assert stored_runs(kept / "r.db") == 20


def test_disk_full_at_open_says_full_not_disk_io_error(mount_ns, lab):
    plan = write_plan(lab / "p.toml")
    mnt, out = lab / "mnt", lab / "out"
    mnt.mkdir(), out.mkdir()
    script = f"""
mount -t tmpfs -o size=64k boardlab-full "$MNT"
dd if=/dev/zero of="$MNT/filler" bs=4096 2>/dev/null || true
run() {{ {BOARDLAB_IN_NS}; }}
run run "$PLAN" --db "$MNT/new.db" --quiet
ls -A "$MNT" > "$OUT/ls"
"""
    ns = in_namespace(mount_ns, script, {"MNT": str(mnt), "OUT": str(out), "PLAN": str(plan)})
    assert ns.returncode == 0, ns.stderr
    line = assert_one_line_error(_result(out), 1, "new.db", "full")
    assert "disk I/O error" not in line
    assert (out / "ls").read_text().split() == ["filler"]  # no empty database left behind


def test_a_full_state_directory_stops_the_change_and_leaves_no_temporary_journal(mount_ns, lab):
    board = lab / "bbb"
    shutil.copytree(SYSFS / "bbb", board, symlinks=True)
    plan = write_plan(
        lab / "gov.toml",
        conditions='[[conditions]]\nname = "ondemand"\nkind = "governor"\nparams = { governor = "ondemand" }',
    )
    state, out = lab / "state", lab / "out"
    state.mkdir(), out.mkdir()
    script = f"""
mount -t tmpfs -o size=64k boardlab-state "$STATE"
dd if=/dev/zero of="$STATE/filler" bs=4096 2>/dev/null || true
run() {{ {BOARDLAB_IN_NS}; }}
BOARDLAB_STATE_DIR="$STATE" run run "$PLAN" --root "$BOARD" --db "$DB" --quiet
ls -A "$STATE" > "$OUT/ls"
"""
    env = {
        "STATE": str(state),
        "OUT": str(out),
        "PLAN": str(plan),
        "BOARD": str(board),
        "DB": str(lab / "r.db"),
    }
    ns = in_namespace(mount_ns, script, env)
    assert ns.returncode == 0, ns.stderr
    assert_one_line_error(_result(out), 1, str(state), "full", "nothing was changed")
    assert (out / "ls").read_text().split() == ["filler"]  # no .journal.*.tmp
    assert (board / GOVERNOR).read_text().strip() == "performance"


# ---- read-only places ------------------------------------------------------------------------------------


def test_read_only_places(mount_ns, results_db, lab):
    """A database in a read-only directory reads fine; outputs, models and new databases there are
    refused with the path and "read-only", exit 2."""
    ro, out = lab / "ro", lab / "out"
    ro.mkdir(), out.mkdir()
    script = f"""
mount -t tmpfs -o size=4m boardlab-ro "$RO"
cp "$DB" "$RO/lab.db"
mount -o remount,ro,bind "$RO"  # a read-only mount point (works in a user namespace too)
run() {{ {BOARDLAB_IN_NS}; }}
for case in report export models newdb; do
  mkdir -p "$OUT/$case"
  case $case in
    report) OUT="$OUT/report" run report --db "$RO/lab.db" --format text ;;
    export) OUT="$OUT/export" run export --db "$DB" -o "$RO/runs.json" ;;
    models) OUT="$OUT/models" run models build --out "$RO/models" ;;
    newdb) OUT="$OUT/newdb" run run "$PLAN" --db "$RO/new.db" --quiet ;;
  esac
done
"""
    env = {"RO": str(ro), "OUT": str(out), "DB": str(results_db), "PLAN": str(lab / "plan.toml")}
    ns = in_namespace(mount_ns, script, env)
    assert ns.returncode == 0, ns.stderr
    report = _result(out / "report")
    assert report.returncode == 0, report.stderr  # before: "not a boardlab results database"
    assert "2/2 runs valid" in report.stdout
    assert_one_line_error(_result(out / "export"), 2, str(ro), "read-only")
    assert_one_line_error(_result(out / "models"), 2, str(ro / "models"), "read-only")
    assert_one_line_error(_result(out / "newdb"), 2, str(ro / "new.db"), "read-only")


def test_models_build_out_onto_a_file_is_refused(lab):
    f = lab / "models"
    f.write_text("not a directory\n")
    proc = run_cli("models", "build", "--out", str(f))
    assert_one_line_error(proc, 2, str(f), "not a directory")


def test_report_into_a_directory_is_refused_and_debug_shows_the_traceback(results_db):
    args = ("report", "--db", str(results_db), "--format", "md", "-o", str(results_db.parent))
    assert_one_line_error(run_cli(*args), 2, "is a directory")
    debug = run_cli(*args, env={**os.environ, "BOARDLAB_DEBUG": "1"})
    assert debug.returncode == 2 and "Traceback" in debug.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chattr +i needs root (CAP_LINUX_IMMUTABLE)")
def test_an_immutable_database(results_db, lab):
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(results_db)], capture_output=True).returncode:
        pytest.skip(f"the filesystem of {results_db.parent} does not support chattr +i")
    try:
        proc = run_cli("run", str(lab / "plan.toml"), "--db", str(results_db), "--quiet", "--fresh")
        assert_one_line_error(proc, 2, str(results_db))
        report = run_cli("report", "--db", str(results_db), "--format", "text")
        assert report.returncode == 0, report.stderr  # reading an immutable database is fine
    finally:
        subprocess.run([chattr, "-i", str(results_db)], check=True)


# ---- damaged databases -----------------------------------------------------------------------------------


def _corrupt(db: Path) -> None:
    """Overwrites the pages of the run tables only: the campaign still reads as complete (before, `run`
    then said "complete, 0/0 runs" and exited 0), the runs do not read at all."""
    with sqlite3.connect(db) as c:
        try:
            pages = c.execute(
                "SELECT pageno FROM dbstat WHERE name IN ('runs', 'run_metrics', 'run_values', 'run_series')"
            ).fetchall()
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find the pages of the runs")
        page_size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    with open(db, "r+b") as f:
        for (page,) in pages:
            f.seek((page - 1) * page_size)
            f.write(b"\xff" * page_size)


def test_a_corrupted_database_is_reported_as_corrupted(results_db, lab):
    _corrupt(results_db)
    run = run_cli("run", str(lab / "plan.toml"), "--db", str(results_db), "--quiet")
    line = assert_one_line_error(run, 2, str(results_db), "corrupted")
    assert "complete" not in run.stdout + line
    for args in (("report", "--format", "text"), ("export",)):
        proc = run_cli(args[0], "--db", str(results_db), *args[1:])
        assert_one_line_error(proc, 2, str(results_db), "corrupted")


def test_garbage_instead_of_a_database_is_named_as_such(lab):
    junk = lab / "junk.db"
    junk.write_bytes(b"not sqlite at all\n" * 300)
    for args in (("run", str(write_plan(lab / "p.toml")), "--quiet"), ("report", "--format", "text")):
        proc = run_cli(args[0], "--db", str(junk), *args[1:])
        assert_one_line_error(proc, 2, str(junk), "not a boardlab results database")


def test_a_non_numeric_schema_version(results_db, lab):
    with sqlite3.connect(results_db) as c:
        c.execute("UPDATE meta SET value='two' WHERE key='schema_version'")
    c.close()
    for args in (("report", "--format", "text"), ("run", str(lab / "plan.toml"), "--quiet")):
        proc = run_cli(args[0], "--db", str(results_db), *args[1:])
        assert_one_line_error(proc, 2, str(results_db), "'two' is not a number")


def test_run_into_a_large_store_says_its_bounded_check_and_full_check_reads_it_whole(results_db, lab):
    """Issue 44: a store over 1 GiB (grown by a sparse tail) is checked bounded at run's start, said once on
    stderr; --full-check reads it whole, and refuses damage in the runs' pages the bounded check leaves."""
    page_size, _ = header_pages(results_db)
    grow_sparse(results_db, Store.FULL_CHECK_MAX_BYTES + page_size)
    plan, env = str(lab / "plan.toml"), {**os.environ, "BOARDLAB_STATE_DIR": str(lab / "state")}
    run = run_cli("run", plan, "--db", str(results_db), "--quiet", env=env)
    assert run.returncode == 0, run.stderr
    notes = [ln for ln in run.stderr.splitlines() if ln.startswith("note:") and "GiB" in ln]
    assert len(notes) == 1 and str(results_db) in notes[0] and "--full-check" in notes[0], run.stderr
    _corrupt(results_db)
    full = run_cli("run", plan, "--db", str(results_db), "--quiet", "--full-check", env=env)
    assert_one_line_error(full, 2, str(results_db), "corrupted")
