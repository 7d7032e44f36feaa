"""Per-process accounting (`boardlab monitor`): /proc parsers on the VM fixture tree, the interval
arithmetic on known samples, and a live run on a process that burns a known share of a CPU."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from boardlab.monitor.process import Monitor, hourly_means, interval, summarize
from boardlab.platform import procacct

from helpers import SYSFS, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

VM = SYSFS / "vm"


def test_reads_a_process_and_its_threads_from_the_fixture_tree():
    p = procacct.read_process(VM, 4242)
    assert p is not None and p.task.comm == "sleep"
    assert p.task.cpu_ns == 1351794  # first field of schedstat
    assert p.task.cpu_jiffies == 0  # utime + stime of a sleep
    assert p.rss_bytes == 1840 * 1024 and p.pss_bytes == 284 * 1024  # VmRSS; Pss of smaps_rollup
    assert [t.tid for t in p.threads] == [4242, 4243]
    assert p.task.ctxsw_vol is not None


def test_reads_the_three_scopes_of_network_counters():
    net = procacct.read_net_counters(VM)
    assert {"udp_rcvbuf_errors", "udp_in_errors", "tcp_retrans_segs", "tcp_listen_overflows"} <= set(net)
    assert procacct.read_udp_socket_drops(VM) == {105791: 0}
    dev = procacct.read_net_dev(VM)
    assert "lo" in dev and set(dev["lo"]) == {"rx_packets", "rx_drop", "tx_packets", "tx_drop"}
    assert procacct.mem_total_bytes(VM) == 24682416 * 1024
    assert procacct.read_process(VM, 999999) is None


def _sample(cpu_ns, jiffies, vol=10, inodes=frozenset()):
    t = procacct.TaskSample(1, "svc", jiffies, cpu_ns, vol, 0)
    return procacct.ProcessSample(1, t, (t,), 4096, 2048, inodes)


def test_interval_gives_both_cpu_conventions_and_both_units():
    a, b = _sample(0, 0, 10, frozenset({7})), _sample(10_000_000, 1, 30, frozenset({7}))
    r = interval(a, b, 1e9, 1.0, ncpus=2, mem_total=8192, clk_tck=100, udp_drops_a={7: 3}, udp_drops_b={7: 8})
    assert r.cpu_pct_one_cpu == pytest.approx(1.0)  # 10 ms of 1 s
    assert r.cpu_pct_all_cpus == pytest.approx(0.5)
    assert r.cpu_jiffies_pct_one_cpu == pytest.approx(1.0)  # one 10 ms tick
    assert r.mem_pct == pytest.approx(50.0) and r.ctxsw_vol_per_s == pytest.approx(20)
    assert r.socket_drops == 5
    assert r.threads[0]["cpu_pct_one_cpu"] == pytest.approx(1.0)


def test_summaries_and_hourly_means():
    assert summarize([1.0, None, 3.0]) == {"min": 1.0, "avg": 2.0, "max": 3.0, "n": 2}
    rows = [
        interval(
            _sample(0, 0),
            _sample(i * 1_000_000, 0),
            1e9,
            t,
            ncpus=1,
            mem_total=None,
            clk_tck=100,
            udp_drops_a={},
            udp_drops_b={},
        )
        for i, t in ((1, 10.0), (3, 20.0), (5, 3700.0))
    ]
    assert hourly_means(rows, "cpu_pct_one_cpu") == [
        {"hour": 0, "mean": pytest.approx(0.2), "n": 2},
        {"hour": 1, "mean": pytest.approx(0.5), "n": 1},
    ]


def test_live_one_percent_process_reads_one_percent_by_ns_and_whole_ticks_by_jiffies():
    burner = subprocess.Popen([sys.executable, "-m", "boardlab.services.burn", "1", "8"])
    try:
        time.sleep(1.0)  # past the interpreter's start-up
        mon = Monitor(pids=[burner.pid], interval_s=1.0)
        mon.run(duration_s=5)
    finally:
        burner.kill()
        burner.wait()
    doc = mon.document()
    proc = doc["processes"][0]
    # The burner holds 1 % over its life; per second the ns reading may wobble by a wake-up, not more.
    assert proc["cpu_pct_one_cpu"]["avg"] == pytest.approx(1.0, abs=0.15)
    # Jiffies: a whole number of 10 ms ticks per ~1 s interval.
    for r in mon.rows:
        ticks = r.cpu_jiffies_pct_one_cpu
        assert abs(ticks - round(ticks)) < 0.1


def test_monitor_cli_json_and_csv(tmp_path):
    csv_path = tmp_path / "m.csv"
    proc = run_cli(
        "monitor",
        "--json",
        "--csv",
        str(csv_path),
        "--interval-s",
        "0.5",
        "--",
        sys.executable,
        "-m",
        "boardlab.services.burn",
        "5",
        "2.2",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1 and doc["kind"] == "boardlab.monitor" and doc["command_exit_code"] == 0
    p = doc["processes"][0]
    assert set(p["cpu_pct_one_cpu"]) == {"min", "avg", "max", "n"} and p["intervals"] >= 3
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("t_s,pid,comm,cpu_pct_one_cpu") and len(lines) == p["intervals"] + 1


def test_monitor_cli_refuses_bad_input():
    proc = run_cli("monitor")
    assert proc.returncode == 2 and "--pid PID or -- CMD" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("monitor", "--pid", "999999999")
    assert proc.returncode == 2 and "no such process" in proc.stderr
    proc = run_cli("monitor", "--duration-s", "nan", "--", "true")  # nan > 0 is false, and so is nan <= 0
    assert proc.returncode == 2 and "--duration-s nan: expected a positive number" in proc.stderr


def test_monitor_exit_status_says_whether_anything_was_measured_and_how_the_command_ended(tmp_path):
    """The same status with and without --json: 1 when no interval was sampled (an earlier --csv file then
    stays) or the command failed on its own, whose exit code is printed; 0 for a command boardlab stopped."""
    failing = ("--interval-s", "0.1", "--", "sh", "-c", "sleep 0.45; exit 3")
    proc = run_cli("monitor", *failing)
    assert proc.returncode == 1 and "command: exited with code 3" in proc.stdout
    assert "the command exited with code 3" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("monitor", "--json", *failing)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["command_exit_code"] == 3 and doc["command_stopped"] is False
    assert doc["processes"] and "cpu_pct_one_cpu (ns)" not in proc.stdout


@pytest.mark.parametrize("fmt", [(), ("--json",)], ids=["table", "json"])
def test_monitor_with_no_interval_exits_1_and_leaves_an_earlier_csv(tmp_path, monkeypatch, capfd, fmt):
    """No interval (a process that ends before the first sample is taken; made certain here by a monitor
    that samples nothing): exit 1 in either format, and the earlier --csv file stays as it was."""
    import argparse

    from boardlab.cli import monitor as cli_monitor

    monkeypatch.setattr(Monitor, "run", lambda self, **_kw: None)
    earlier = tmp_path / "m.csv"
    earlier.write_text("an earlier run's intervals\n")
    parser = argparse.ArgumentParser()
    cli_monitor.add_arguments(parser)
    args = parser.parse_args([*fmt, "--csv", str(earlier), "--", "sleep", "30"])
    assert cli_monitor.run(args) == 1
    err = capfd.readouterr().err
    assert "no complete interval" in err and f"--csv {earlier}: not written" in err
    assert earlier.read_text() == "an earlier run's intervals\n"


def test_monitor_duration_cuts_the_last_interval_short(tmp_path):
    out = tmp_path / "m.csv"
    args = ("--interval-s", "1", "--duration-s", "1.3", "--csv", str(out), "--", "sleep", "30")
    proc = run_cli("monitor", "--json", *args)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert doc["command_stopped"] is True and doc["processes"][0]["intervals"] == 2
    last_t_s = float(out.read_text().splitlines()[-1].split(",")[0])
    assert 1.3 <= last_t_s < 1.6  # not a whole second interval, which ends at 2 s


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (mknod)")
def test_monitor_csv_refuses_a_device_and_leaves_its_neighbours_alone(tmp_path):
    """`--csv /dev/null` as root replaced the device with a regular file (a rename over it), and the write
    went first to PATH.tmp, whatever that was."""
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    proc = run_cli("monitor", "--csv", str(device), "--interval-s", "0.1", "--", "sleep", "0.3")
    assert (
        proc.returncode == 2 and "not a regular file" in proc.stderr and "--csv - for stdout" in proc.stderr
    )
    assert stat.S_ISCHR(os.stat(device).st_mode)
    (tmp_path / "m.csv.tmp").write_text("the user's own file\n")
    proc = run_cli("monitor", "--csv", str(tmp_path / "m.csv"), "--interval-s", "0.1", "--", "sleep", "0.3")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.csv.tmp").read_text() == "the user's own file\n"
    assert (tmp_path / "m.csv").read_text().startswith("t_s,pid,comm,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv", "m.csv.tmp", "null"]


def test_monitor_csv_on_standard_output_puts_the_table_on_standard_error():
    proc = run_cli("monitor", "--csv", "-", "--interval-s", "0.1", "--", "sleep", "0.35")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("t_s,pid,comm,") and len(lines) >= 3 and all("," in ln for ln in lines)
    assert "cpu%1cpu" in proc.stderr
    proc = run_cli("monitor", "--csv", "-", "--json", "--", "sleep", "0.1")
    assert proc.returncode == 2 and "both write to standard output" in proc.stderr


def test_process_cpu_is_the_sum_of_its_threads():
    """/proc/PID/schedstat is the main thread only: a reader thread's CPU must count too."""

    def proc(main_ns, worker_ns, tids=(1, 2)):
        t1 = procacct.TaskSample(1, "svc", 0, main_ns, 0, 0)
        t2 = procacct.TaskSample(2, "reader", 0, worker_ns, 0, 0)
        threads = tuple(t for t in (t1, t2) if t.tid in tids)
        return procacct.ProcessSample(1, t1, threads, None, None, frozenset())

    a, b = proc(1_000_000, 0, tids=(1,)), proc(2_000_000, 5_000_000)
    r = interval(a, b, 1e9, 1.0, ncpus=1, mem_total=None, clk_tck=100, udp_drops_a={}, udp_drops_b={})
    assert r.cpu_pct_one_cpu == pytest.approx(0.6)  # 1 ms more on the main thread + 5 ms of a new thread
    # the reader ended between the reads of its stat and its schedstat: it counts as a thread that ended
    # (its last partial interval lost), not as an unknown process CPU
    c = proc(3_000_000, None)
    r = interval(b, c, 1e9, 2.0, ncpus=1, mem_total=None, clk_tck=100, udp_drops_a={}, udp_drops_b={})
    assert r.cpu_pct_one_cpu == pytest.approx(0.1)
    # without schedstat (the main thread's unread too) the process's CPU is unknown
    r = interval(proc(None, 1), proc(None, 2), 1e9, 1.0, ncpus=1, mem_total=None, clk_tck=100,
                 udp_drops_a={}, udp_drops_b={})  # fmt: skip
    assert r.cpu_pct_one_cpu is None


def test_live_reader_thread_counts_in_the_process_cpu(kern, tmp_path):
    """svc.pub reading a GPS byte by byte: the process's ns share includes its reader thread."""
    from boardlab.services.launch import start_role

    link = tmp_path / "gps"
    feeder = start_role("svc.nmea", {"duration_s": 3.0, "link": str(link), "start_delay_s": 0.2})
    pub = start_role(
        "svc.pub",
        {
            "rate_hz": 1,
            "duration_s": 3.5,
            "source": "nmea",
            "device": str(link),
            "read_mode": "byte",
            "port": 31777,
        },
    )
    mon = Monitor(pids=[pub.pid], interval_s=1.0)
    mon.run(duration_s=3)
    res = pub.result(20)["service"]
    feeder.result(20)
    threads = {t["tid"] for r in mon.rows for t in r.threads}
    assert len(threads) >= 2
    # an interval that ended as the service exited (its stat read, its schedstat gone: a loaded machine
    # stretches the monitor towards the service's 3.5 s) has no CPU share: compared over those that have one
    rows = [r for r in mon.rows if r.cpu_pct_one_cpu is not None]
    assert rows
    main_only = sum(t["cpu_pct_one_cpu"] or 0 for r in rows for t in r.threads if t["tid"] == pub.pid)
    total = sum(r.cpu_pct_one_cpu for r in rows)
    assert total > main_only and res["reader"]["reads"] > 100
