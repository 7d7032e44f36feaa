"""Cross-check plumbing: robust parsing of fio's and iperf3's JSON, job translation, median of ratios."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from boardlab.xcheck.jsonrobust import parse
from boardlab.xcheck.net import NetJob, iperf_metrics
from boardlab.xcheck.net import kern_command as net_kern_command
from boardlab.xcheck.pairs import ITERATION_MS, CrossCheck, Pair, interleave
from boardlab.xcheck.storage import StorageJob, fio_metrics, kern_command

FIO_DOC = """fio: file hash not empty on exit
note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "boardlab", "error" : 0,
      "read" : {"io_bytes" : 1048576, "bw_bytes" : 500000000, "iops" : 3814.7,
                "clat_ns" : {"percentile" : {"50.000000" : 160768, "99.000000" : 403456, "99.900000" : 1e6}}},
      "write" : {"io_bytes" : 0, "bw_bytes" : 0, "iops" : 0.0, "clat_ns" : {}}
    }
  ]
}
fio: some trailing warning
"""


def test_fio_stray_lines_are_skipped_and_metrics_read():
    m = fio_metrics(parse(FIO_DOC, "fio"))
    assert m == {
        "bandwidth_mb_s": 500.0,
        "iops": 3814.7,
        "latency_p50_ns": 160768.0,
        "latency_p99_ns": 403456.0,
    }


def test_iperf3_nan_values_read_as_missing():
    doc = parse(
        '{"end": {"sum": {"bits_per_second": 1e8, "jitter_ms": -nan, "lost_percent": nan}}}', "iperf3"
    )
    assert iperf_metrics(doc, "udp") == {"goodput_bit_s": 1e8, "loss_percent": None, "jitter_ns": None}


def test_nan_inside_a_string_is_left_alone():
    assert parse('{"cmd": "a, nan]", "x": [1, -nan]}')["cmd"] == "a, nan]"


def test_iperf3_tcp_uses_the_senders_rate_and_lost_percent_above_100_is_dropped():
    tcp = {"end": {"sum_sent": {"bits_per_second": 2e10}, "sum_received": {"bits_per_second": 1.9e10}}}
    assert iperf_metrics(tcp, "tcp")["goodput_bit_s"] == 2e10
    udp = {"end": {"sum": {"bits_per_second": 1e8, "jitter_ms": 0.01, "lost_percent": 180.0}}}
    assert iperf_metrics(udp, "udp")["loss_percent"] is None
    assert iperf_metrics(udp, "udp")["jitter_ns"] == pytest.approx(10_000)


def test_no_json_at_all_names_the_tool():
    with pytest.raises(ValueError, match="fio: .*error"):
        parse("fio: error\nnothing here\n", "fio")


def test_fio_job_is_the_same_job():
    job = StorageJob(
        path="/mnt/a b/x.dat", op="read", pattern="rand", bs_bytes=4096, engine="io_uring", iodepth=8
    )
    text = job.fio_job()
    for line in (
        "rw=randread",
        "bs=4096",
        "ioengine=io_uring",
        "iodepth=8",
        "direct=1",
        "filename=/mnt/a b/x.dat",
    ):
        assert line in text.splitlines()
    args = job.kern_params()
    assert "pattern=rand" in args and "engine=io_uring" in args and "iodepth=8" in args
    assert StorageJob(path="x", op="randrw").fio_rw() == "randrw"
    assert StorageJob(path="x", op="write", pattern="seq").fio_rw() == "write"


@pytest.mark.parametrize(("runtime_s", "ms"), [(0.5, 500), (1.5, 1500), (3.0, 3000), (0.1234, 123)])
def test_fio_gets_the_runtime_in_whole_milliseconds_and_boardlab_as_long(runtime_s, ms):
    """fio read `runtime=0.5s` as 0 (a 10 ms pass, "time_based requires a runtime") and 1.5s as 1 s."""
    job = StorageJob(path="x", runtime_s=runtime_s)
    assert f"runtime={ms}ms" in job.fio_job().splitlines()
    command = kern_command(Path("boardlab-kern"), job)
    iterations = int(command[command.index("--iterations") + 1])
    assert iterations * ITERATION_MS == pytest.approx(ms, abs=ITERATION_MS / 2)  # boardlab runs as long


@pytest.mark.spawns
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt-get install fio)")
@pytest.mark.parametrize(("runtime_s", "us"), [(0.5, 500_000), (1.5, 1_500_000)])
def test_fio_itself_reads_the_runtime_exactly(tmp_path, runtime_s, us):
    job_file = tmp_path / "job.fio"
    job_file.write_text(StorageJob(path=str(tmp_path / "data"), runtime_s=runtime_s).fio_job())
    proc = subprocess.run(
        ["fio", "--parse-only", "--debug=parse", str(job_file)], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    at = [i for i, line in enumerate(lines) if "__handle_option=runtime," in line]
    if not at:
        pytest.skip("this fio prints no parse trace (built without debug)")
    assert lines[at[0] + 1].split()[-1] == f"out={us}"  # fio keeps the runtime in microseconds
    assert not (tmp_path / "data").exists()  # parsing lays nothing out


def test_iperf_command_matches_the_kernel_job():
    job = NetJob(mode="udp", rate_bit_s=1e8, udp_bytes=1400, server_cpu=1)
    assert job.iperf_client(5201)[-5:] == ["-u", "-b", "100000000", "-l", "1400"]
    args = job.kern_params()
    assert "mode=udp_stream" in args and "rate_bit_s=100000000.0" in args and "sink_cpu=1" in args


def test_iperf3_and_boardlab_send_for_the_same_whole_seconds():
    job = NetJob(duration_s=2.0)
    client = job.iperf_client(5201)
    assert client[client.index("-t") + 1] == "2"  # iperf3 takes whole seconds: 0.5 ran for ever
    command = net_kern_command(Path("boardlab-kern"), job)
    assert int(command[command.index("--iterations") + 1]) * ITERATION_MS == 2000


def test_median_of_pairwise_ratios_and_pairs_alternate():
    order = []
    pairs = interleave(3, lambda: order.append("A") or {"x": 2.0}, lambda: order.append("B") or {"x": 1.0})
    assert order == ["A", "B", "B", "A", "A", "B"]  # counterbalanced: A B, B A, A B
    assert [p.order for p in pairs] == ["AB", "BA", "AB"]
    check = CrossCheck("j", "ref", [], [], ("x",), pairs=[Pair({"x": 1.0}, {"x": 2.0}), *pairs])
    assert check.ratios("x") == [0.5, 2.0, 2.0, 2.0]
    doc = check.as_json()
    assert doc["metrics"]["x"]["median_ratio"] == 2.0 and len(doc["pairs"]) == 4 and doc["schema"] == 1


def test_whole_run_rate_is_total_over_total():
    from boardlab.xcheck.pairs import whole_run_rate

    res = {"iterations_ns": [1_000_000, 3_000_000], "reps_per_iteration": 10}
    # 20 reps of 1000 bytes in 4 ms: 5e6 B/s (the median of per-iteration rates would say 6.67e6).
    assert whole_run_rate(res, 1000) == pytest.approx(5e6)


def test_iperf3_cpu_percent_becomes_cpu_ns_per_byte_of_each_side():
    # 25% of one CPU over 2 s sending 1e9 bytes: 0.5 s of CPU, 0.5 ns a byte; the receiver 40% of 2.1 s.
    tcp = {
        "end": {
            "sum_sent": {"bits_per_second": 4e9, "seconds": 2.0, "bytes": 1_000_000_000},
            "sum_received": {"bits_per_second": 4e9, "seconds": 2.1, "bytes": 1_050_000_000},
            "cpu_utilization_percent": {"host_total": 25.0, "remote_total": 40.0},
        }
    }
    m = iperf_metrics(tcp, "tcp")
    assert m["cpu_ns_per_byte_sender"] == pytest.approx(0.5)
    assert m["cpu_ns_per_byte_receiver"] == pytest.approx(0.4 * 2.1e9 / 1.05e9)
    # Without the CPU block (or with -nan read as None) there is no figure rather than a zero.
    del tcp["end"]["cpu_utilization_percent"]
    assert iperf_metrics(tcp, "tcp")["cpu_ns_per_byte_sender"] is None


def test_sendfile_is_iperf3s_minus_z_and_the_kernels_send_path():
    job = NetJob(mode="tcp", send_path="sendfile", msg_bytes=65536)
    assert job.iperf_client(5201)[-3:] == ["-l", "65536", "-Z"]
    assert "send_path=sendfile" in job.kern_params()
    assert "-Z" not in NetJob(mode="tcp").iperf_client(5201)


def test_zero_loss_searches_the_same_range_on_both_sides():
    from boardlab.xcheck.net import zeroloss_kern_command, zeroloss_reference_command

    job = NetJob(mode="zeroloss", lo_bit_s=2e7, hi_bit_s=4e8, resolution=0.1, udp_bytes=1400, server_cpu=1)
    cmd = zeroloss_kern_command(job)
    assert cmd[cmd.index("-m") + 1 : cmd.index("-m") + 3] == ["boardlab.pyrun", "io.net_zeroloss"]
    for p in (
        "lo_bit_s=20000000.0",
        "hi_bit_s=400000000.0",
        "resolution=0.1",
        "udp_bytes=1400",
        "sink_cpu=1",
    ):
        assert p in cmd
    ref = zeroloss_reference_command(job)
    assert ref[ref.index("-b") + 1] == "RATE" and ref[ref.index("-t") + 1] == "1" and "-u" in ref


def test_a_zero_loss_search_that_finds_no_lossless_rate_gives_no_figure_and_says_why(monkeypatch):
    from boardlab.xcheck import net

    tried = []

    def lossy(job):
        tried.append(job.rate_bit_s)
        return {"goodput_bit_s": job.rate_bit_s, "loss_percent": 0.5, "jitter_ns": 1.0}

    monkeypatch.setattr(net, "run_iperf", lossy)
    notes: list[str] = []
    job = NetJob(mode="zeroloss", lo_bit_s=1e7, hi_bit_s=1e9)
    assert net.run_iperf_zeroloss(job, notes) == {"zero_loss_bit_s": None}
    assert tried == [1e9, 1e7] and "even at the lowest rate tried" in notes[0]
    # Such a pair has no ratio; the others still give the median.
    check = CrossCheck("j", "iperf3", [], [], ("zero_loss_bit_s",))
    check.pairs.extend([Pair({"zero_loss_bit_s": 2e8}, {"zero_loss_bit_s": None}),
                        Pair({"zero_loss_bit_s": 2e8}, {"zero_loss_bit_s": 1e8})])  # fmt: skip
    assert check.ratios("zero_loss_bit_s") == [2.0]


class Disk:
    """A fake pair whose second member always runs 1.8x faster (the first one's data still being written
    back, say), with 1% noise: the true ratio of the two tools is 0.9 (boardlab's rate / the reference's)."""

    def __init__(self):
        import random

        self.rng = random.Random(7)
        self.last = None

    def run(self, who: str) -> dict:
        second = self.last is not None and self.last != who
        self.last = None if second else who
        base = 900.0 if who == "boardlab" else 1000.0
        return {"mb_s": base * (1.8 if second else 1.0) * self.rng.gauss(1, 0.01)}


def test_a_planted_order_effect_is_reported_per_order_and_cancels_in_the_median():
    disk = Disk()
    pairs = interleave(10, lambda: disk.run("boardlab"), lambda: disk.run("fio"))
    check = CrossCheck("j", "fio", [], [], ("mb_s",), pairs=pairs)
    r = check.by_order("mb_s")
    assert (r.n_ab, r.n_ba) == (5, 5)
    assert r.ab == pytest.approx(0.9 / 1.8, rel=0.03)  # boardlab first: the reference gains
    assert r.ba == pytest.approx(0.9 * 1.8, rel=0.03)  # the reference first: boardlab gains
    assert r.order_effect == pytest.approx(1 / 1.8, rel=0.03)
    assert check.median_ratio("mb_s") == pytest.approx(0.9, rel=0.02)  # the effect cancels
    text = r.describe("boardlab", "fio")
    assert text == (
        f"median ratio {r.median:.3f} over 10 pairs (boardlab first {r.ab:.3f} x5; fio first {r.ba:.3f} x5; "
        f"order effect {r.order_effect:.3f})"
    )
    doc = check.as_json()["metrics"]["mb_s"]
    assert doc["by_order"]["pairs_boardlab_first"] == 5 and doc["by_order"]["order_effect"] < 0.6
    assert [p["first"] for p in check.as_json()["pairs"][:2]] == ["boardlab", "reference"]
    # what the old A B, A B, ... pairing reported: the order effect as if it were the ratio
    always_first = [Pair(p.boardlab, p.reference) for p in pairs if p.order == "AB"]
    assert CrossCheck("j", "fio", [], [], ("mb_s",), pairs=always_first).median_ratio("mb_s") < 0.55


def test_alternate_keeps_each_result_with_its_side_and_order():
    from boardlab.xcheck.pairs import alternate, ratios_of

    calls = []
    out = alternate(4, lambda: calls.append("a") or 3.0, lambda: calls.append("b") or 2.0)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert out == [(3.0, 2.0, "AB"), (3.0, 2.0, "BA"), (3.0, 2.0, "AB"), (3.0, 2.0, "BA")]
    r = ratios_of(out, lambda a, b: a / b)
    assert r.median == pytest.approx(1.5) and r.order_effect == pytest.approx(1.0)
    assert (
        ratios_of(out[:1], lambda a, b: a / b).describe()
        == "median ratio 1.500 over 1 pairs (A first 1.500 x1)"
    )
