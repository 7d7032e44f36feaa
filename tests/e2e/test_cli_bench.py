"""`boardlab bench CMD [CMD ...]`: commands benchmarked head to head as an ordinary campaign: each command's
median with its CI under each condition, B against A and each condition against the baseline with their
verdicts, a campaign `report` renders, hyperfine's spellings (--prepare, parameter scans and lists), its
exports, and `ingest` of hyperfine's JSON export into the same plan's history."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3

import pytest

from boardlab.campaign.benchplan import bench_name

from helpers import run_cli

pytestmark = pytest.mark.skipif(
    shutil.which("xz") is None, reason="xz is not installed (apt-get install xz-utils)"
)


@pytest.fixture
def data(tmp_path):
    f = tmp_path / "F"
    f.write_text(
        "".join(f"{i},{i * 7 % 1013},{i % 17}\n" for i in range(8000))
    )  # ~100 KiB of sensor-like text
    return tmp_path


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed")
def test_two_commands_under_a_stressor_give_medians_ratios_verdicts_and_a_campaign_report_renders(data):
    db = data / "bench.db"
    p = run_cli("bench", "xz -6 -c F", "xz -9 -c F", "--under", "stressor:cpu", "--runs", "6",
                "--db", str(db), "--export-json", str(data / "b.json"),
                "--export-markdown", str(data / "b.md"), cwd=data, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for name in ("xz -6 -c F", "xz -9 -c F"):
        block = out.split(f"{name}:\n", 1)[1]
        for condition in ("baseline", "stressor:cpu"):
            assert re.search(
                rf"{re.escape(condition)}\s+median [0-9.]+ s\s+95% CI \[[0-9.]+, [0-9.]+\]\s+\(6 runs\)",
                block,
            )
    sentence = r" is [0-9.]+ \[[0-9.]+, [0-9.]+\] times (slower|faster) than "
    verdict = r": (slowdown|speedup|no change|inconclusive)$"
    assert re.search(rf"^xz -9 -c F{sentence}xz -6 -c F \(under baseline\){verdict}", out, re.M)
    assert re.search(rf"^xz -6 -c F under stressor:cpu{sentence}under baseline{verdict}", out, re.M)
    assert "pinned to one CPU" in p.stderr and "6 runs each (--runs)" in p.stderr
    d = json.loads((data / "b.json").read_text())
    assert len(d["cells"]) == 4 and len(d["comparisons"]) == 4 and len(d["results"]) == 4
    assert all(len(r["times"]) == 6 and r["median"] > 0 for r in d["results"])  # hyperfine's layout
    assert "| xz -9 -c F @ baseline | xz -6 -c F @ baseline |" in (data / "b.md").read_text()
    r = run_cli("report", "--db", str(db), "--campaign", str(d["campaign_id"]), "--format", "md", "-o",
                str(data / "r.md"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "command=xz -9 -c F" in (data / "r.md").read_text()


def test_prepare_runs_before_each_execution_and_parameters_expand_as_hyperfine_spells_them(data):
    db = data / "p.db"
    p = run_cli("bench", "rm flag{n}", "--prepare", "touch flag1 flag2", "--parameter-list", "n", "1,2",
                "--runs", "3", "--threads", "none", "--db", str(db), "--json",
                cwd=data, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    # each `rm` needs its flag made again by --prepare before it: every run succeeded
    assert sorted(c["command"] for c in d["cells"]) == ["rm flag1", "rm flag2"]
    assert all(c["n"] == 3 and c["failed"] == 0 for c in d["cells"])
    assert "not pinned" in d["pinning"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs WHERE ok = 1").fetchone()[0] == 6
    cpus = sorted(os.sched_getaffinity(0))[-2:]  # --threads 2: the last two CPUs (one on a 1-CPU machine)
    p = run_cli("bench", "sleep {t}", "-P", "t", "0", "0.02", "-D", "0.01", "--runs", "2", "--db",
                str(data / "s.db"), "--json", "--threads", str(len(cpus)), cwd=data, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert [c["command"] for c in json.loads(p.stdout)["cells"]] == ["sleep 0", "sleep 0.01", "sleep 0.02"]
    with sqlite3.connect(data / "s.db") as conn:
        pinned = {
            json.dumps(json.loads(s)["worker_cpus"])
            for (s,) in conn.execute("SELECT condition_state_json FROM runs")
        }
    assert pinned == {json.dumps(cpus)}  # every execution on that set


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("xz -c F | wc -c",), "uses shell syntax (|) but no shell runs it: give --shell sh"),
        (("no-such-program-here F",), "no-such-program-here: not found on PATH"),
        (("xz -c F", "--under", "nosuchkind:x"), "unknown condition kind 'nosuchkind'"),
        (("xz -c F", "--under", "no-such-condition"), "no preset has a condition of that name"),
        (("xz -c F", "--threads", "4096"), "--threads 4096: this board has"),
        (("xz -{n} -c F", "-L", "m", "1,2"), "parameter m: no command uses {m}"),
        (("xz -c F", "--runs", "1"), "--runs 1: expected 2 to 10000"),
        # refused before the campaign, not after its runs; the fix names the option typed
        (("xz -c F", "--runs", "2", "--export-json", "/dev/null"), "use --export-json - for stdout"),
        (("xz -c F", "--runs", "2", "--export-markdown", "no/r.md"), "the directory no does not exist"),
        (("xz -c F", "--runs", "2", "--plan-out", "/dev/null"), "use --plan-out - for stdout"),
        (("xz -{n} -c F", "-P", "n", "1", "nan"), "MIN, MAX (and -D STEP) must be numbers"),  # was internal
        # a name given twice: its second values were dropped, and fewer commands ran than asked for
        (
            ("xz -{n} -c F", "-L", "n", "1,2", "-L", "n", "3", "--runs", "2"),
            "parameter n: given twice (--parameter-list n and --parameter-list n)",
        ),
        (
            ("xz -{n} -c F", "-L", "n", "3", "-P", "n", "1", "2", "--runs", "2"),
            "parameter n: given twice (--parameter-scan n and --parameter-list n)",
        ),
        # checked as `run` checks it: -5 was taken for --no-wait (the message named it), nan waited for ever
        (("xz -c F", "--wait", "-5"), "--wait -5: expected 0 to 2592000 seconds"),
        (("xz -c F", "--wait", "nan"), "--wait nan: expected 0 to 2592000 seconds"),
        # a place in the generated plan is named by the --under it came from (was "bench (generated):
        # conditions[2].params.workers", a plan the user never saw)
        (
            ("xz -c F", "--under", "stressor:cpu", "--under", "stressor:cpu,workers=0"),
            "--under stressor:cpu,workers=0: params.workers: expected an integer in [1, 1024], found 0",
        ),
    ],
)
def test_bad_input_is_exit_2_naming_the_place_and_the_fix(data, args, said):
    p = run_cli("bench", *args, "--db", str(data / "x.db"), cwd=data)
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (data / "x.db").exists()


@pytest.mark.parametrize(
    ("outputs", "said"),
    [
        # was exit 0 with two JSON documents on stdout, one after the other
        (("--json", "--export-json", "-"), "--export-json - and --json each write a document to stdout"),
        (("--json", "--export-markdown", "-"), "--export-markdown - and --json each write a document"),
        (("--json", "--plan-out", "-"), "--plan-out - and --json each write a document to stdout"),
        (("--export-json", "-", "--export-markdown", "-"), "give --export-markdown a FILE"),
        # was exit 0 leaving only the last written (the Markdown, the store)
        (
            ("--export-json", "o", "--export-markdown", "o"),
            "--export-json o and --export-markdown o are the same",
        ),
        (("--plan-out", "o", "--export-json", "./o"), "--plan-out o and --export-json ./o are the same file"),
        (("--export-markdown", "x.db"), "--export-markdown x.db and --db x.db are the same file"),
    ],
)
def test_outputs_that_would_overwrite_each_other_are_refused_before_the_campaign(data, outputs, said):
    p = run_cli("bench", "xz -c F", "--runs", "2", *outputs, "--db", "x.db", cwd=data)
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == "" and os.listdir(data) == ["F"]  # no store, no output


def test_outputs_linked_to_one_file_are_refused_and_one_output_on_stdout_is_that_document_alone(data):
    (data / "a.json").write_text("")
    os.link(data / "a.json", data / "b.json")
    p = run_cli("bench", "xz -c F", "--runs", "2", "--export-json", "a.json", "--plan-out", "b.json",
                "--db", "x.db", cwd=data)  # fmt: skip
    assert p.returncode == 2 and "--plan-out b.json and --export-json a.json are the same file" in p.stderr
    assert (data / "a.json").read_text() == "" and not (data / "x.db").exists()
    p = run_cli("bench", "xz -c F", "--runs", "2", "--export-json", "-", "--db", "x.db", cwd=data)
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["results"]) == 1  # the result's text went to stderr
    assert "campaign 1 in x.db" in p.stderr


def test_a_postgresql_store_is_refused_as_run_refuses_it(data):
    # was a campaign written into the shared store (or, unreachable, "cannot connect")
    p = run_cli("bench", "xz -c F", "--db", "postgresql://lab@127.0.0.1:1/lab", cwd=data)
    assert p.returncode == 2 and "a campaign writes a SQLite file on the board" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_ingest_reads_hyperfines_json_into_the_plan_bench_writes_for_the_same_commands(data):
    export = data / "hf.json"
    results = [{"command": c, "mean": 0.2, "stddev": 0.01, "median": 0.2, "user": 0.1, "system": 0.01,
                "min": 0.19, "max": 0.21, "times": [0.19, 0.2, 0.21, 0.2, 0.2, 0.205], "exit_codes": [0] * 6}
               for c in ("xz -6 -c F", "xz -9 -c F")]  # fmt: skip
    export.write_text(json.dumps({"results": results}))
    db = data / "lab.db"
    p = run_cli("ingest", str(export), "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert "12 runs added" in p.stdout and "hyperfine export: 12 runs" in p.stderr
    again = run_cli("ingest", str(export), "--db", str(db))
    assert "0 runs added, 12 already in" in again.stdout  # the same file twice is one campaign
    plan = bench_name(("xz -6 -c F", "xz -9 -c F"))
    h = run_cli("history", "--db", str(db), "--plan", plan, "--json")
    assert h.returncode == 0, h.stderr
    cells = {c["params"]["command"]: c["points"][0] for c in json.loads(h.stdout)["boards"][0]["cells"]}
    assert cells["xz -6 -c F"]["n"] == 6 and cells["xz -6 -c F"]["median"] == pytest.approx(0.2)
    export.write_text('{"results": [{"command": "x"}]}')
    bad = run_cli("ingest", str(export), "--db", str(db))
    assert bad.returncode == 2 and "results[0].times" in bad.stderr


def test_an_export_checked_again_after_the_runs_is_named_by_its_option(tmp_path):
    """The outputs are checked before the campaign and again when written (the path may have changed during
    the runs): the second refusal names the option too, not `-o`, which bench does not have."""
    from boardlab.cli.bench import _write
    from boardlab.errors import InputError

    with pytest.raises(InputError, match="--export-markdown writes a new file"):
        _write(os.devnull, "text", str(tmp_path / "x.db"), "--export-markdown")
