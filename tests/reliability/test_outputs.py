"""Case 1: `-o` writes only a new path or a regular file that is not one of the command's inputs."""

from __future__ import annotations

import os
import stat

import pytest
from reliability.util import assert_one_line_error, stored_runs

from boardlab.export import EXPORT_SCHEMA

from helpers import run_cli


def test_report_onto_its_own_database_is_refused_and_every_run_kept(results_db):
    before = stored_runs(results_db)
    proc = run_cli("report", "--db", str(results_db), "--format", "md", "-o", str(results_db))
    assert_one_line_error(proc, 2, str(results_db), "input of this command")
    assert stored_runs(results_db) == before == 2


def test_report_through_a_symlink_to_the_database_is_refused(results_db):
    link = results_db.parent / "report.md"
    link.symlink_to(results_db.name)
    proc = run_cli("report", "--db", str(results_db), "--format", "md", "-o", str(link))
    assert_one_line_error(proc, 2, str(link))
    assert link.is_symlink() and stored_runs(results_db) == 2


def test_export_onto_the_database_wal_is_refused(results_db):
    # a database being written has a -wal file: overwriting it loses the runs not yet checkpointed
    wal = results_db.parent / (results_db.name + "-wal")
    wal.write_bytes(b"")
    proc = run_cli("export", "--db", str(results_db), "-o", str(wal))
    assert_one_line_error(proc, 2, str(wal))


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_export_onto_a_device_node_leaves_the_device(results_db):
    dev = results_db.parent / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    proc = run_cli("export", "--db", str(results_db), "-o", str(dev))
    assert_one_line_error(proc, 2, str(dev), "not a regular file")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_export_onto_a_fifo_is_refused_without_blocking(results_db):
    fifo = results_db.parent / "pipe"
    os.mkfifo(fifo)
    proc = run_cli("export", "--db", str(results_db), "-o", str(fifo), timeout=30)
    assert_one_line_error(proc, 2, str(fifo), "not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_report_into_a_directory_is_refused(results_db):
    proc = run_cli("report", "--db", str(results_db), "--format", "md", "-o", str(results_db.parent))
    assert_one_line_error(proc, 2, str(results_db.parent), "is a directory")


def test_a_regular_file_is_replaced_atomically_and_dash_is_stdout(results_db):
    out = results_db.parent / "old report.md"
    out.write_text("old\n")
    proc = run_cli("report", "--db", str(results_db), "--format", "md", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("# boardlab report")
    assert sorted(p.name for p in results_db.parent.iterdir() if p.name.startswith(".")) == []
    proc = run_cli("export", "--db", str(results_db), "--format", "json", "-o", "-")
    assert proc.returncode == 0 and f'"schema": {EXPORT_SCHEMA}' in proc.stdout


def test_kern_corpus_out_onto_a_fifo_is_refused(lab, kern):
    import subprocess

    fifo = lab / "corpus.fifo"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [str(kern), "corpus", "--bytes", "4k", "--out", str(fifo)], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_export_of_a_campaign_the_store_lacks_exits_2_and_writes_nothing(results_db):
    out = results_db.parent / "runs.csv"
    proc = run_cli("export", "--db", str(results_db), "--campaign", "1", "--campaign", "7", "-o", str(out))
    assert_one_line_error(proc, 2, str(results_db), "no campaign with id 7")  # before: exit 0, no run
    assert not out.exists()
    proc = run_cli("export", "--db", str(results_db), "--campaign", "1", "-o", str(out))
    assert proc.returncode == 0 and len(out.read_text().splitlines()) == 2 + 2  # schema, header, 2 runs


def test_governor_train_refuses_a_bad_second_output_before_writing_the_first(lab):
    sweep, labels = lab / "sweep.json", lab / "labels.json"
    assert run_cli("governor", "sweep", "--sim", "exynos5422", "--quick", "--out", str(sweep)).returncode == 0
    assert run_cli("governor", "label", str(sweep), "--out", str(labels)).returncode == 0
    (lab / "c").mkdir()
    proc = run_cli(
        "governor", "train", str(labels), "--out", str(lab / "tree.json"), "--c-out", str(lab / "c")
    )
    # before: tree.json written, then the directory refused, naming -o (an option train does not have)
    assert_one_line_error(proc, 2, str(lab / "c"), "is a directory", "--c-out - for stdout")
    assert not (lab / "tree.json").exists()
