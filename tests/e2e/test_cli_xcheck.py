"""`boardlab xcheck`: bad input is one clear line; with fio and iperf3 present, real pairs in JSON."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from helpers import reaped, run_cli


def test_storage_without_a_path_is_a_usage_error():
    proc = run_cli("xcheck", "io.storage")
    assert proc.returncode == 2 and "--path" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_missing_directory_is_named(tmp_path):
    proc = run_cli("xcheck", "io.storage", "--path", str(tmp_path / "no" / "such" / "f"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_a_cpu_outside_the_affinity_is_refused(tmp_path):
    proc = run_cli("xcheck", "io.net", "--client-cpu", "4095")
    assert proc.returncode == 2 and "--client-cpu 4095" in proc.stderr


def test_bad_sizes_are_argparse_errors(tmp_path):
    proc = run_cli("xcheck", "io.storage", "--path", str(tmp_path / "f"), "--bs", "12x")
    assert proc.returncode == 2 and "k/M/G" in proc.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: exit 1 after fio's run, or (a negative runtime) fio running for ever
        (("--runtime-s", "-1"), "--runtime-s -1: expected 0.1 to 86400 seconds"),
        (("--engine", "io_uring", "--iodepth", "0"), "--iodepth 0: expected 1 to 256"),
        (("--size", "4k", "--bs", "8k"), "--size 4096: expected one block (--bs 8192) to 1T"),
        (("--path", "FIFO"), "neither a regular file nor a block device"),
        (("--job-out", "FIFO"), "not a regular file (a device, FIFO or socket); --job-out writes"),
    ],
)
def test_a_bad_storage_job_is_refused_before_anything_runs(tmp_path, args, said):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    given = [str(fifo) if a == "FIFO" else a for a in args]
    proc = run_cli("xcheck", "io.storage", "--path", str(tmp_path / "f"), *given, timeout=30)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: an internal error (nan duration), a run that never ended (--msg-bytes 0), or exit 1 after
        # iperf3's run with a message of boardlab-kern's
        (("--duration-s", "nan"), "--duration-s nan: expected a whole number of seconds from 1 to 86400"),
        (("--mode", "tcp", "--msg-bytes", "0"), "--msg-bytes 0: expected 1 to 16777216"),
        (("--mode", "udp", "--udp-bytes", "99999"), "--udp-bytes 99999: expected 32 to 65507"),
        (("--mode", "udp", "--rate-bit-s", "-5"), "--rate-bit-s -5: expected 0 to 1000000000000"),
        (("--host", "999.1.1.1"), "--host 999.1.1.1: expected an IPv4 address"),
        # iperf3 -t takes whole seconds: 0.5 was read as 0 (run for ever; xcheck hung 60 s), 2.5 ran 2 s
        (("--duration-s", "0.5"), "--duration-s 0.5: expected a whole number of seconds from 1 to 86400"),
        (("--duration-s", "2.5"), "(iperf3 runs whole seconds"),
        (("--mode", "zeroloss", "--lo-bit-s", "1"), "--lo-bit-s 1: expected 1000 to 1000000000000"),
    ],
)
def test_a_bad_net_job_is_refused_before_anything_runs(args, said):
    proc = run_cli("xcheck", "io.net", *args, timeout=30)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "iperf3 -c" not in proc.stderr  # refused before the tools' commands are shown or run


@pytest.mark.integration
def test_storage_against_fio_gives_pairs_and_median_ratios(tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    target = tmp_path / "dir with space" / "data.bin"
    target.parent.mkdir()
    proc = run_cli("xcheck", "io.storage", "--path", str(target), "--size", "4M", "--pairs", "2",
                   "--runtime-s", "1", "--json", timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["pairs"]) == 2 and doc["reference_tool"] == "fio"
    assert [p["first"] for p in doc["pairs"]] == ["boardlab", "reference"]  # counterbalanced
    for metric in ("bandwidth_mb_s", "iops", "latency_p50_ns"):
        m = doc["metrics"][metric]
        assert m["median_ratio"] > 0
        by = m["by_order"]
        assert (by["pairs_boardlab_first"], by["pairs_reference_first"]) == (1, 1)
        assert m["median_ratio"] == pytest.approx((by["boardlab_first"] * by["reference_first"]) ** 0.5)
    assert not target.exists()  # the layout boardlab made is removed


def test_an_existing_file_at_path_is_refused_and_left_as_it_was(tmp_path):
    """Before: xcheck laid its 4 MiB of pattern over the user's file (18 bytes of notes) and ran."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes, keep me\n")
    link = tmp_path / "link"
    link.symlink_to(notes)
    for given in (notes, link):
        proc = run_cli("xcheck", "io.storage", "--path", str(given), "--size", "4M", "--runtime-s", "1",
                       "--pairs", "1", timeout=60)  # fmt: skip
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"--path {given}: an existing file" in proc.stderr
        assert "removes it after, so name a path that does not exist" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert notes.read_bytes() == b"my notes, keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "notes.txt"]


def test_a_dangling_link_at_path_is_refused_and_its_target_not_made(tmp_path):
    """Before: the layout created the link's target and the cleanup removed only the link, leaving 4 MiB."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere.bin")
    proc = run_cli("xcheck", "io.storage", "--path", str(link), "--size", "4M", "--runtime-s", "1",
                   "--pairs", "1", timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "which does not exist" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


@pytest.mark.parametrize("same", ["same string", "relative", "symlink"])
def test_job_out_at_the_path_is_refused(tmp_path, same):
    """Before: the job file was written at --path, then the test file laid out over it and removed."""
    data = tmp_path / "data.bin"
    job_out = {"same string": str(data), "relative": "./data.bin", "symlink": str(tmp_path / "job.fio")}[same]
    if same == "symlink":
        (tmp_path / "job.fio").symlink_to(data)
    proc = run_cli("xcheck", "io.storage", "--path", str(data), "--job-out", job_out, "--size", "4M",
                   "--runtime-s", "1", "--pairs", "1", cwd=tmp_path, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"--job-out {job_out}: the same file as --path" in proc.stderr
    assert not data.exists()


@pytest.mark.integration
def test_a_write_job_of_half_a_second_runs_as_fio_and_boardlab_take_turns(tmp_path):
    """fio read `runtime=0.5s` as 0 (a 10 ms pass and a warning); the job now says 500ms. In the second pair
    boardlab writes after fio: the file xcheck laid out holds fio's data then, which boardlab-kern refuses
    in a user's file but may overwrite in xcheck's own."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    target, job = tmp_path / "data.bin", tmp_path / "job.fio"
    proc = run_cli("xcheck", "io.storage", "--path", str(target), "--op", "write", "--size", "4M",
                   "--runtime-s", "0.5", "--pairs", "2", "--job-out", str(job), "--json",
                   timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "runtime=500ms" in job.read_text().splitlines()
    assert "time_based requires a runtime" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert [p["first"] for p in doc["pairs"]] == ["boardlab", "reference"]
    command = doc["boardlab_command"]
    assert command[command.index("--iterations") + 1] == "5"  # 5 x 100 ms: as long as fio's run
    assert not target.exists()


@pytest.mark.integration
def test_net_against_iperf3_on_loopback(tmp_path):
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    cpus = sorted(os.sched_getaffinity(0))
    proc = run_cli("xcheck", "io.net", "--mode", "udp", "--rate-bit-s", "20e6", "--duration-s", "1",
                   "--pairs", "1", "--client-cpu", str(cpus[0]), "--server-cpu", str(cpus[-1]), "--json",
                   timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    pair = doc["pairs"][0]
    assert pair["boardlab"]["goodput_bit_s"] > 0 and pair["reference"]["goodput_bit_s"] > 0
    assert 0 <= pair["boardlab"]["loss_percent"] <= 100


def test_send_path_outside_tcp_and_an_empty_zero_loss_range_are_refused():
    proc = run_cli("xcheck", "io.net", "--mode", "udp", "--send-path", "sendfile")
    assert proc.returncode == 2 and "--send-path sendfile: applies to --mode tcp only" in proc.stderr
    proc = run_cli("xcheck", "io.net", "--mode", "zeroloss", "--lo-bit-s", "5e8", "--hi-bit-s", "1e8")
    assert proc.returncode == 2 and "need 0 < lo < hi" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.integration
def test_sendfile_against_iperf3_z_with_cpu_per_byte_on_both_sides():
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    cpus = sorted(os.sched_getaffinity(0))
    proc = run_cli("xcheck", "io.net", "--send-path", "sendfile", "--duration-s", "1", "--pairs", "1",
                   "--client-cpu", str(cpus[0]), "--server-cpu", str(cpus[-1]), "--json",
                   timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert "-Z" in doc["reference_command"] and "send_path=sendfile" in doc["boardlab_command"]
    (pair,) = doc["pairs"]
    for side in ("boardlab", "reference"):
        assert pair[side]["goodput_bit_s"] > 0
        assert pair[side]["cpu_ns_per_byte_sender"] > 0 and pair[side]["cpu_ns_per_byte_receiver"] > 0
    for metric in ("goodput_bit_s", "cpu_ns_per_byte_sender", "cpu_ns_per_byte_receiver"):
        assert doc["metrics"][metric]["median_ratio"] > 0


@pytest.mark.integration
def test_zero_loss_rate_against_iperf3_by_the_same_search():
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    cpus = sorted(os.sched_getaffinity(0))
    # A coarse search over a range both tools carry without loss at its bottom: few trials.
    proc = run_cli("xcheck", "io.net", "--mode", "zeroloss", "--lo-bit-s", "5e6", "--hi-bit-s", "4e8",
                   "--resolution", "0.3", "--pairs", "1", "--client-cpu", str(cpus[0]),
                   "--server-cpu", str(cpus[-1]), "--json", timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (pair,) = doc["pairs"]
    for side in ("boardlab", "reference"):
        assert 5e6 <= pair[side]["zero_loss_bit_s"] <= 4e8
    assert doc["metrics"]["zero_loss_bit_s"]["median_ratio"] > 0


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt-get install fio)")
def test_sigterm_stops_fio_and_removes_the_job_and_the_laid_out_file(tmp_path):
    """SIGTERM (`kill`, a CI timeout) ended the interpreter at once: fio's job processes ran on to the end of
    their runtime, and the job file's directory and the file laid out at --path stayed behind."""
    import signal
    import subprocess
    import sys
    import time

    from helpers import tagged_env, tagged_processes

    tag = f"xcheck-term-{os.getpid()}-{time.time()}"
    env = tagged_env(tag, TMPDIR=str(tmp_path))
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "boardlab", "xcheck", "io.storage", "--path", str(data), "--size", "8M",
            "--runtime-s", "30", "--pairs", "2"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with reaped(proc):
        deadline = time.monotonic() + 60
        while "fio" not in tagged_processes(tag).values() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "fio" in tagged_processes(tag).values(), "fio never started"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err, err
    time.sleep(0.5)  # the group's SIGKILL is delivered; a survivor would still be listed
    assert tagged_processes(tag) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no boardlab-xcheck-* directory, no data file
