"""Cases 5 and 9: bounded inputs (plan files, workload input files, run time) and a bounded, linear-time
expansion of the plan's matrix."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest
from reliability.util import assert_one_line_error, write_plan

from boardlab.campaign.plan import parse_plan
from boardlab.campaign.schedule import build_cells
from boardlab.errors import InputError
from boardlab.workloads import all_workloads

from helpers import run_cli, tagged_env, tagged_processes

PLAN_MAX_BYTES = 1 << 20  # the documented limits (docs/safety.md)
MAX_CELLS = 10_000


def test_dev_zero_as_the_plan_exits_2_at_once(lab):
    t0 = time.monotonic()
    proc = run_cli("run", "/dev/zero", "--db", str(lab / "x.db"), timeout=60)
    assert_one_line_error(proc, 2, "/dev/zero", "not a plan file")
    assert time.monotonic() - t0 < 30  # before: read until the OOM killer acted
    assert not (lab / "x.db").exists()


def test_a_fifo_as_the_plan_exits_2_without_blocking(lab):
    fifo = lab / "plan.fifo"
    os.mkfifo(fifo)
    proc = run_cli("run", str(fifo), "--db", str(lab / "x.db"), timeout=60)  # before: hung in open
    assert_one_line_error(proc, 2, str(fifo), "FIFO")


def test_a_directory_as_the_plan_names_the_path_not_a_file_descriptor(lab):
    proc = run_cli("run", str(lab), "--db", str(lab / "x.db"))  # before: "3: is a directory"
    assert_one_line_error(proc, 2, f"{lab}: a directory", "not a plan file")
    assert not (lab / "x.db").exists()


def test_a_plan_over_the_size_limit_is_refused_with_the_limit(lab):
    big = write_plan(lab / "big.toml")
    with open(big, "a") as f:
        f.write("# " + "x" * PLAN_MAX_BYTES + "\n")
    proc = run_cli("run", str(big), "--db", str(lab / "x.db"))
    assert_one_line_error(proc, 2, str(big), str(PLAN_MAX_BYTES), "1 MiB")


def test_a_plan_symlink_loop_is_one_line_not_a_traceback(lab):
    loop = lab / "loop.toml"
    loop.symlink_to(loop.name)
    proc = run_cli("run", str(loop), "--db", str(lab / "x.db"))
    assert_one_line_error(proc, 2, str(loop), "symbolic links")


def _runs(db):
    with sqlite3.connect(db) as c:
        return c.execute(
            "SELECT c.workload, r.ok, r.error FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY r.seq"
        ).fetchall()


def test_a_fifo_as_a_workload_input_fails_its_run_and_the_campaign_completes(lab):
    fifo = lab / "corpus.fifo"
    os.mkfifo(fifo)
    plan = lab / "fifo.toml"
    plan.write_text(
        write_plan(lab / "base.toml", reps=1).read_text()
        + f'[[workloads]]\nname = "compress.zlib"\nparams = {{ input = {json.dumps(str(fifo))} }}\n'
    )
    db = lab / "fifo.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--json", timeout=120)  # before: blocked forever
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "complete"
    runs = {w: (ok, err) for w, ok, err in _runs(db)}
    assert runs["noop"][0] == 1
    ok, err = runs["compress.zlib"]
    assert ok == 0 and "not a regular file" in err and str(fifo) in err


def test_a_run_over_its_timeout_is_killed_with_its_group_failed_and_the_campaign_goes_on(lab):
    # 2000 iterations of 1e6 steps take seconds; the plan allows 1 s per run
    plan = write_plan(
        lab / "slow.toml",
        reps=2,
        iterations=2000,
        runs_extra="timeout_s = 1\nwarmup_max_ms = 0",
        workload_extra="params = { steps = 1000000 }",
    )
    db = lab / "t.db"
    tag = f"timeout-{os.getpid()}-{time.monotonic_ns()}"
    t0 = time.monotonic()
    proc = run_cli("run", str(plan), "--db", str(db), "--json", env=tagged_env(tag), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["status"] == "complete"
    runs = _runs(db)
    assert len(runs) == 2
    for _, ok, err in runs:
        assert ok == 0 and "timed out after 1 s" in err
    assert time.monotonic() - t0 < 60
    assert tagged_processes(tag) == {}  # the killed workers left nothing behind


def test_the_timeout_key_is_validated():
    catalog = {w.name: w for w in all_workloads()}
    text = 'name = "t"\n[runs]\ntimeout_s = 0\n[[workloads]]\nname = "noop"\n'
    with pytest.raises(InputError, match=r"runs\.timeout_s: expected a value in"):
        parse_plan(text, "t.toml", catalog)


def _matrix_plan(n: int) -> str:
    return f'name = "m"\n[[workloads]]\nname = "noop"\nparams = {{ steps = {list(range(1, n + 1))} }}\n'


def test_cell_expansion_is_linear(monkeypatch):
    """10 000 parameter values took 15 s before the first run: a list membership test per cell compared
    each new cell with every earlier one (n^2 / 2 = 5e7 comparisons). Counted, not timed: expansion now
    compares a cell only on a hash collision."""
    from boardlab.model.campaign import Cell

    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(_matrix_plan(MAX_CELLS), "m.toml", catalog)
    compared = 0
    eq = Cell.__eq__

    def counting_eq(self, other):
        nonlocal compared
        compared += 1
        return eq(self, other)

    monkeypatch.setattr(Cell, "__eq__", counting_eq)
    cells = build_cells(plan, catalog)
    assert len(cells) == MAX_CELLS == len(set(cells))
    assert compared < MAX_CELLS  # linear (in practice 0); the list test made about 5e7


def test_a_matrix_over_the_cap_exits_2_with_the_count(lab):
    plan = lab / "huge.toml"
    plan.write_text(
        _matrix_plan(40_000).replace("steps = [", "steps = [") + '[[conditions]]\nkind = "baseline"\n'
    )
    proc = run_cli("run", str(plan), "--db", str(lab / "h.db"), timeout=120)
    assert_one_line_error(proc, 2, "40000 cells", str(MAX_CELLS))
    assert not (lab / "h.db").exists()


def test_the_default_timeout_follows_the_workloads_own_duration():
    from boardlab.campaign.runner import run_timeout_s

    assert run_timeout_s(5.0, {"duration_s": 3600}, 10.0) == 5.0  # the plan's key wins
    assert run_timeout_s(None, {}, 0.0) == 1800.0  # a first run of an untimed workload: 30 min
    assert run_timeout_s(None, {"duration_s": 3600}, 0.0) == 4 * 3600 + 120  # a timed one: its duration
    assert run_timeout_s(None, {}, 200.0) == 4000.0  # 20x the longest run of the cell so far


def test_ingest_of_a_fifo_or_a_device_exits_2_without_blocking(lab):
    """ingest first looks whether a file is a hyperfine export (JSON) or a results database: neither look
    may wait on a FIFO (before: it opened the FIFO to read its first bytes, and hung)."""
    os.mkfifo(lab / "board.fifo")
    for given, needle in ((lab / "board.fifo", "not a regular file"), ("/dev/zero", "not a regular file")):
        proc = run_cli("ingest", "--db", str(lab / "lab.db"), str(given), timeout=30)
        assert_one_line_error(proc, 2, str(given), needle)
    assert not (lab / "lab.db").exists()


def test_a_fifo_as_a_fleet_bundle_exits_2_without_blocking(lab):
    os.mkfifo(lab / "bundle.fifo")  # before: tarfile opened it and waited for a writer
    where = ["--db", str(lab / "lab.db"), "--coordinator", "127.0.0.1:1", "--places", "arch=armhf"]
    proc = run_cli(
        "fleet", "run", "--preset", "quick", *where, "--bundle", str(lab / "bundle.fifo"), timeout=30
    )
    assert_one_line_error(proc, 2, f"--bundle {lab / 'bundle.fifo'}", "a FIFO, device or socket")
    assert not (lab / "lab.db").exists()


def test_a_fifo_dev_zero_or_binary_labgrid_environment_is_refused_at_once(lab):
    """A FIFO as --lg-env is refused without waiting, /dev/zero read only up to the bound, binary named
    (before: a hang, the memory filled, a traceback)."""
    from boardlab.cli.fleet import _read_lg_env

    os.mkfifo(lab / "env.fifo")
    (lab / "env.bin").write_bytes(b"targets:\n  \xff\xfe: 1\n")
    cases = ((lab / "env.fifo", "a FIFO, device or socket"), ("/dev/zero", "a FIFO, device or socket"),
             (lab / "env.bin", "not UTF-8 text"))  # fmt: skip
    for given, needle in cases:
        outcome = _within(10.0, _read_lg_env, str(given), unblock=lab / "env.fifo")
        assert isinstance(outcome, InputError), outcome
        assert str(outcome).startswith(f"--lg-env {given}: ") and needle in str(outcome)


def test_a_bad_labgrid_environment_is_named_before_the_coordinator_is_contacted(lab):
    """Nothing listens on the coordinator's address: before, fleet contacted it first and failed on the
    connection, so a wrong --lg-env was found only once a coordinator had listed the places."""
    pytest.importorskip("labgrid", reason="fleet needs labgrid (the fleet extra)")
    import io
    import tarfile

    (lab / "env.yaml").write_text("targets: [a list, not a table]\n")
    doc = json.dumps({"schema": 1, "arch": "armhf"}).encode()  # all fleet reads of a bundle before a board
    with tarfile.open(lab / "armhf.tar.gz", "w:gz") as tar:
        member = tarfile.TarInfo("boardlab-bundle/bundle.json")
        member.size = len(doc)
        tar.addfile(member, io.BytesIO(doc))
    where = ["--db", str(lab / "lab.db"), "--coordinator", "127.0.0.1:1", "--places", "arch=armhf"]
    given = ["--bundle", str(lab / "armhf.tar.gz"), "--lg-env", str(lab / "env.yaml")]
    proc = run_cli("fleet", "run", "--preset", "quick", *where, *given, timeout=60)
    assert_one_line_error(proc, 2, f"--lg-env {lab / 'env.yaml'}: expected a labgrid environment")
    assert not (lab / "lab.db").exists()


def test_a_fifo_as_the_fleets_ssh_key_is_refused_at_once(lab):
    import argparse

    from boardlab.cli.fleet import _check_paths

    os.mkfifo(lab / "key.fifo")  # before: open() waited for a writer
    args = argparse.Namespace(ssh_key=str(lab / "key.fifo"), keep=None, db=str(lab / "lab.db"))
    outcome = _within(10.0, _check_paths, args, unblock=lab / "key.fifo")
    assert isinstance(outcome, InputError) and str(outcome).startswith(
        f"--ssh-key {lab / 'key.fifo'}: a FIFO"
    )
    args.ssh_key = str(lab / "missing")
    with pytest.raises(InputError, match=r"^--ssh-key .*missing: no such SSH key file$"):
        _check_paths(args)


def _within(timeout_s: float, fn, *args, unblock):
    """What `fn(*args)` raised or returned, from a thread; a call still waiting after `timeout_s` is
    unblocked (a writer opens the FIFO `unblock`) and reported, so a regression fails instead of hanging."""
    import threading

    got: list = []

    def call():
        try:
            got.append(fn(*args))
        except Exception as exc:
            got.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        with open(unblock, "wb"):
            pass
        t.join()
        return f"still waiting after {timeout_s} s"
    return got[0]


def test_governor_json_inputs_of_the_wrong_kind_exit_2_without_blocking(lab):
    # before: a FIFO hung in open; a binary file, a JSON array, a cell that is no object: internal errors
    os.mkfifo(lab / "sweep.fifo")
    (lab / "binary.db").write_bytes(b"SQLite format 3\x00\xf6\xff" * 8)
    texts = {
        "list.json": "[1, 2]",
        "cell.json": '{"schema": 1, "cells": [5]}',
        "cells.json": '{"schema": 1, "cells": "label"}',
        "tree.json": '{"schema": 1, "tree": 5}',
    }
    for name, text in texts.items():
        (lab / name).write_text(text)
    cases = [
        ("label", "binary.db", "not UTF-8"),
        ("label", "sweep.fifo", "a FIFO, device or socket, not a sweep file"),
        ("label", "list.json", "a JSON list"),
        ("label", "cell.json", "a cell has the wrong keys"),
        ("train", "cells.json", "not labels"),
        ("simulate", "tree.json", "not a tree"),
    ]
    for step, name, needle in cases:
        given = (
            ["--tree", str(lab / name)]
            if step == "simulate"
            else [str(lab / name), "--out", str(lab / "x.json")]
        )
        proc = run_cli("governor", step, *given, timeout=30)
        assert_one_line_error(proc, 2, str(lab / name), needle)
    assert not (lab / "x.json").exists()
