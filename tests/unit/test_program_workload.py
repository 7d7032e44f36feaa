"""The user's program as a workload: its declaration in a plan, one measured run, and the bundled parsers on
the real output of 7-Zip, ffmpeg, openssl and sysbench (captured on Debian 12, tests/fixtures/programs/)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.campaign.plan import parse_plan, plan_catalog
from boardlab.errors import InputError
from boardlab.model.workload import LaunchOptions
from boardlab.workloads import all_workloads, program
from boardlab.workloads.program_parsers import PARSERS

from helpers import rows, run_cli, tagged_env

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

OUTPUTS = Path(__file__).parent.parent / "fixtures" / "programs"


def _catalog() -> dict:
    return {w.name: w for w in all_workloads() if w.runner == "python"}


def _plan(body: str, tmp_path: Path, catalog: dict | None = None):
    path = tmp_path / "plan.toml"
    path.write_text('name = "p"\n[[workloads]]\nkind = "program"\n' + body)
    plan = parse_plan(path.read_text(), str(path), _catalog() if catalog is None else catalog)
    return plan, plan_catalog(plan, _catalog() if catalog is None else catalog)


def _run_once(spec, params: dict) -> dict:
    """One measured run as the runner starts it: the spec's argv, a fresh worker, its JSON on stdout."""
    argv = spec.measured_argv(params, LaunchOptions(iterations=1))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)  # a loaded machine is slow
    return json.loads(proc.stdout)


def test_7z_parser_reads_the_rating_total_and_per_dictionary_size():
    got = PARSERS["7z"].parse((OUTPUTS / "7zz-b-mmt1-md22.txt").read_text())
    assert got["rating_mips"] == (290.0, "MIPS", True)  # "Tot:  10  2907  290": the 7-Zip rating
    assert got["rating_per_usage_mips"][0] == 2907.0 and got["usage_pct"][0] == 10.0
    assert got["compress_d22_rating_mips"][0] == 255.0 and got["decompress_d22_rating_mips"][0] == 325.0
    assert got["compress_speed_kib_s"] == (261.0, "KiB/s", True)  # the "Avr:" row


def test_7z_parser_reads_every_dictionary_size_of_a_longer_benchmark():
    got = PARSERS["7z"].parse((OUTPUTS / "7zz-b-mmt1-md19.txt").read_text())
    assert got["compress_d18_rating_mips"][0] == 345.0 and got["compress_d19_rating_mips"][0] == 447.0
    assert got["decompress_d18_rating_mips"][0] == 341.0 and got["decompress_d19_rating_mips"][0] == 431.0
    assert got["compress_rating_mips"][0] == 396.0 and got["rating_mips"][0] == 391.0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("7zz") is None, reason="needs 7-Zip's 7zz (Debian: apt-get install 7zip)")
def test_a_real_7zip_benchmark_gives_its_rating_through_the_program_workload(tmp_path):
    _, catalog = _plan(
        'name = "7z"\nargv = ["7zz", "b", "1", "-mmt1", "-md18"]\nmetric = { parser = "7z" }\n', tmp_path
    )
    doc = _run_once(catalog["7z"], {})
    assert doc["ok"], doc
    assert (
        doc["metrics"]["rating_mips"]["median"] > 0
        and doc["metrics"]["compress_d18_rating_mips"]["median"] > 0
    )


def test_ffmpeg_parser_reads_frames_and_benchmark_times_of_a_decode():
    got = PARSERS["ffmpeg"].parse((OUTPUTS / "ffmpeg-benchmark-decode.txt").read_text())
    assert got["frames"][0] == 50.0 and got["bench_real_s"][0] == 0.246
    assert got["decode_fps"][0] == pytest.approx(50 / 0.246) and got["bench_maxrss_kib"][0] == 61376.0


def test_openssl_and_sysbench_parsers_read_their_tables():
    ssl = PARSERS["openssl"].parse((OUTPUTS / "openssl-speed-sha256.txt").read_text())
    assert ssl["block_16B_kB_s"][0] == 70505.07 and ssl["largest_block_kB_s"][0] == 1433302.11
    sb = PARSERS["sysbench"].parse((OUTPUTS / "sysbench-cpu.txt").read_text())
    assert sb["events_per_s"] == (3224.94, "events/s", True) and sb["latency_p95_ms"] == (0.04, "ms", False)
    assert PARSERS["sysbench"].parse("no figures here") == {}


def test_a_program_entry_becomes_a_workload_with_its_params_metric_and_inputs(tmp_path):
    (tmp_path / "data.bin").write_bytes(b"x" * 100)
    plan, catalog = _plan(
        'name = "my.wc"\nargv = ["sh", "-c", "echo n={n} $(wc -c < {data})"]\nparams = { n = [1, 2] }\n'
        'inputs = { data = "data.bin" }\n'
        'metric = { regex = "n=\\\\d+ (?P<bytes>\\\\d+)", name = "bytes", unit = "B", better = "higher" }\n',
        tmp_path,
    )
    spec = catalog["my.wc"]
    assert plan.workloads[0].name == "my.wc" and plan.workloads[0].params == {"n": [1, 2]}
    assert spec.primary_metric.name == "bytes" and spec.primary_metric.higher_is_better
    assert spec.param("data").default == str(tmp_path / "data.bin")  # runs.drop_caches evicts it
    doc = _run_once(spec, {"n": 2})
    assert doc["ok"], doc
    assert doc["metrics"]["bytes"]["median"] == 100.0 and doc["info"]["argv"][2].startswith("echo n=2 ")
    assert doc["metrics"]["wall_s"]["median"] > 0 and len(doc["iterations_ns"]) == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('name = "x"\nargv = ["echo", "{nope}"]\n', "plan.toml:5: workloads[0].argv: {nope} is neither"),
        ('name = "x"\nargv = ["echo"]\nparams = { n = 3 }\n', "workloads[0].params.n: not used in argv"),
        ('name = "x"\nargv = ["echo"]\ninputs = { f = "missing.bin" }\n', "workloads[0].inputs.f: "),
        (
            'name = "x"\nargv = ["echo"]\nmetric = { regex = "(?P<v>\\\\d+)" }\n',
            "workloads[0].metric.unit: missing",
        ),
        (
            'name = "x"\nargv = ["echo"]\nmetric = { regex = "(?P<v>1)", unit = "s" }\n',
            "metric.better: expected",
        ),
        (
            'name = "x"\nargv = ["echo"]\nmetric = { regex = "(?P<v>1)", unit = "s", better = "lower", '
            "tail = 1 }\n",
            "metric.tail: expected true or false",
        ),
        (
            'name = "x"\nargv = ["echo"]\nmetric = { parser = "7z", field = "speed" }\n',
            "7z has no field 'speed'",
        ),
        ('name = "x"\nargv = ["echo"]\nmetric = { wall = true, rusage = "user_s" }\n', "exactly one of"),
        ('name = "x"\nargv = "echo"\n', "workloads[0].argv: expected a non-empty list"),
        ('name = "noop"\nargv = ["echo"]\n', "'noop' is already a workload"),
        ('name = "x"\nargv = ["echo"]\ntimeout_s = 0\n', "workloads[0].timeout_s: expected seconds"),
    ],
)
def test_plan_errors_name_the_file_line_and_key(tmp_path, body, expected):
    catalog = {**_catalog(), "noop": next(w for w in all_workloads() if w.name == "noop")}
    with pytest.raises(InputError) as exc:
        _plan(body, tmp_path, catalog)
    assert expected in str(exc.value) and str(tmp_path / "plan.toml") in str(exc.value)


def test_a_missing_program_is_unsupported_with_the_debian_package(tmp_path):
    body = 'name = "x"\nargv = ["boardlab-no-such-program", "b"]\nmetric = { parser = "7z" }\n'
    why = "boardlab-no-such-program: not found on PATH (Debian: apt-get install 7zip)"
    with pytest.raises(
        InputError, match="plan.toml:4: workloads\\[0\\].name: x is unsupported here: "
    ) as exc:
        _plan(body, tmp_path)
    assert str(exc.value).endswith(why)
    path = tmp_path / "skip.toml"  # under runs.unsupported = "skip" the runner skips it and says why
    path.write_text(f'name = "p"\n[runs]\nunsupported = "skip"\n[[workloads]]\nkind = "program"\n{body}')
    plan = parse_plan(path.read_text(), str(path), _catalog())
    assert plan_catalog(plan, _catalog())["x"].unsupported_reason == why


def test_a_failed_exit_a_missing_figure_and_a_timeout_fail_the_run_with_the_stderr_tail(tmp_path):
    body = 'name = "x"\nargv = ["sh", "-c", "{script}"]\nparams = { script = "x" }\ntimeout_s = 1\n'
    regex = 'metric = { regex = "rate=(?P<r>[0-9.]+)", name = "rate", unit = "MB/s", better = "higher" }\n'
    _, catalog = _plan(body + regex, tmp_path)
    spec = catalog["x"]
    failed = _run_once(spec, {"script": "echo rate=5; echo disk on fire >&2; exit 3"})
    assert not failed["ok"] and failed["errors"] == ["sh exited 3; stderr: disk on fire"]
    missing = _run_once(spec, {"script": "echo speed=5; echo warn >&2"})
    assert (
        not missing["ok"]
        and "regex" in missing["errors"][0]
        and "no match; stderr: warn" in missing["errors"][0]
    )
    hung = _run_once(spec, {"script": "echo started >&2; sleep 30"})
    assert not hung["ok"] and hung["errors"][0].startswith("timed out after 1 s")
    assert "started" in hung["errors"][0]
    ok = _run_once(spec, {"script": "echo rate=12.5"})
    assert ok["ok"] and ok["metrics"]["rate"]["median"] == 12.5


def test_a_figure_is_a_tail_when_the_plan_says_so_not_because_of_its_name(tmp_path):
    figure = 'metric = {{ regex = "(?P<v>\\\\d+)", name = "{}", unit = "ms", better = "lower"{} }}\n'
    for name, extra, tail in (("p99_ms", "", False), ("slowest_ms", ", tail = true", True)):
        _, catalog = _plan('name = "t"\nargv = ["echo", "1"]\n' + figure.format(name, extra), tmp_path)
        assert catalog["t"].primary_metric.tail is tail, name
    _, catalog = _plan('name = "m"\nargv = ["true"]\nmetric = { rusage = "maxrss_kib" }\n', tmp_path)
    assert catalog["m"].primary_metric.tail  # a maximum


def test_a_json_pointer_and_rusage_are_figures_too(tmp_path):
    plan_json = 'name = "j"\nargv = ["sh", "-c", "echo \'{{\\"r\\": [{{\\"a/b\\": 7}}]}}\'"]\n'
    _, catalog = _plan(
        plan_json + 'metric = { json = "/r/0/a~1b", unit = "ops", better = "higher" }\n', tmp_path
    )
    doc = _run_once(catalog["j"], {})
    assert doc["ok"], doc
    assert doc["metrics"]["value"]["median"] == 7.0
    _, catalog = _plan('name = "u"\nargv = ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]\n'
                       'metric = { rusage = "cpu_s" }\n', tmp_path)  # fmt: skip
    doc = _run_once(catalog["u"], {})
    assert doc["ok"] and doc["metrics"]["cpu_s"]["median"] > 0


def test_prepare_runs_once_into_the_scratch_directory_the_argv_reads(tmp_path):
    _, catalog = _plan(
        'name = "prep"\nprepare = ["sh", "-c", "echo 41 > {scratch}/in.txt"]\n'
        'argv = ["sh", "-c", "echo $(( $(cat {scratch}/in.txt) + 1 ))"]\n'
        'metric = { regex = "(?P<v>\\\\d+)", unit = "count", better = "higher" }\n',
        tmp_path,
    )
    spec = catalog["prep"]
    notes = []
    spec.prepare({}, notes.append)
    assert notes and "preparing" in notes[0]
    assert _run_once(spec, {})["metrics"]["value"]["median"] == 42.0


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg (Debian: apt-get install ffmpeg)")
def test_ffmpeg_decode_of_a_clip_made_at_prepare_time_is_read_by_its_parser(tmp_path):
    _, catalog = _plan(
        'name = "decode"\nprepare = ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", '
        '"testsrc=duration=1:size=160x120:rate=25", "-pix_fmt", "yuv420p", "-y", "{scratch}/clip.mp4"]\n'
        'argv = ["ffmpeg", "-hide_banner", "-benchmark", "-i", "{scratch}/clip.mp4", "-f", "null", "-"]\n'
        'metric = { parser = "ffmpeg", field = "decode_fps" }\n',
        tmp_path,
    )
    catalog["decode"].prepare({}, lambda _: None)
    doc = _run_once(catalog["decode"], {})
    assert doc["ok"], doc
    assert doc["metrics"]["frames"]["median"] == 25.0 and doc["metrics"]["decode_fps"]["median"] > 0


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench (apt-get install sysbench)")
def test_sysbench_cpu_is_read_by_its_parser(tmp_path):
    _, catalog = _plan(
        'name = "sb"\nargv = ["sysbench", "cpu", "--cpu-max-prime=500", "--time=1", "run"]\n'
        'metric = { parser = "sysbench" }\n',
        tmp_path,
    )
    doc = _run_once(catalog["sb"], {})
    assert doc["ok"] and doc["metrics"]["events_per_s"]["median"] > 0


def test_the_program_workload_is_listed_and_a_plan_cannot_name_it_without_its_kind(tmp_path):
    assert program.SPEC.name in _catalog()
    path = tmp_path / "plan.toml"
    path.write_text('name = "p"\n[[workloads]]\nname = "program"\n')
    with pytest.raises(InputError, match='declare it with kind = "program"'):
        parse_plan(path.read_text(), str(path), _catalog())


def test_the_runners_default_timeout_leaves_room_for_the_programs_own(tmp_path):
    from boardlab.campaign.runner import Runner
    from boardlab.campaign.schedule import build_cells

    plan, catalog = _plan(
        'name = "slow"\nargv = ["sleep", "1"]\ntimeout_s = 3000\niterations = 2\n', tmp_path
    )
    assert catalog["slow"].run_timeout_s == 6000
    runner = Runner(plan, catalog, None, progress=None)  # only the timeout rule is asked here
    cell = build_cells(plan, catalog)[0]
    assert runner._timeout_s(cell) == 6000 + 120  # not the 1800 s default, which would cut it short


def test_placeholders_are_replaced_and_doubled_braces_are_literal():
    argv = ("awk", "{{ s += $1 }} END {{ print s / {n} }}", "{data}", "${{HOME}}")
    assert program.substitute(argv, {"n": 4, "data": "/d/x.csv"}) == [
        "awk",
        "{ s += $1 } END { print s / 4 }",
        "/d/x.csv",
        "${HOME}",
    ]
    assert program.substitute(("--fast={on}",), {"on": True}) == ["--fast=true"]


def test_the_decode_example_of_the_docs_is_a_valid_plan(tmp_path):
    docs = (Path(__file__).parents[2] / "docs" / "extending.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", docs, re.DOTALL)
    example = next(b for b in blocks if 'name = "decode.h264"' in b)
    path = tmp_path / "decode.toml"
    path.write_text('name = "decode"\n[runs]\nunsupported = "skip"\n' + example)
    plan = parse_plan(path.read_text(), str(path), _catalog())
    assert [w.name for w in plan.workloads] == ["decode.h264"] and plan.conditions[-1].kind == "ddgzip"
    (spec,) = plan.declared
    assert spec.primary_metric.name == "decode_fps" and spec.prepare is not None


def test_nothing_the_program_leaves_running_in_the_background_outlives_its_execution(tmp_path):
    marker = f"59.{os.getpid()}"  # a sleep of 59.PID seconds: an argv no other process has
    _, catalog = _plan(f'name = "bg"\nargv = ["sh", "-c", "sleep {marker} & echo started"]\n', tmp_path)
    doc = _run_once(catalog["bg"], {})
    assert doc["ok"], doc
    time.sleep(0.2)
    assert [p for p in os.listdir("/proc") if p.isdigit() and _argv(p)[:2] == ["sleep", marker]] == []


def _argv(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


# ---- the program's output: read through pipes, bounded, and said when read in part ----

RATE = 'metric = { regex = "rate=(?P<r>[0-9.e+]+)", name = "rate", unit = "MB/s", better = "higher" }\n'


# Starts the command and prints its peak resident set (KiB, wait4) on stderr. A child's peak counts the memory
# of the process it was forked from (Linux keeps the high-water mark across exec): forked from this small
# interpreter, not from the test's, the figure is the worker's own.
PEAK_RSS = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:])\n"
    "_, _, ru = os.wait4(p.pid, 0)\n"
    "print(ru.ru_maxrss, file=sys.stderr)\n"
)


def _run_measured(spec, params: dict) -> tuple[dict, int]:
    """One measured run as `_run_once`, and the worker's peak resident set in KiB."""
    argv = spec.measured_argv(params, LaunchOptions(iterations=1))
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *argv], capture_output=True, text=True, timeout=900
    )
    return json.loads(proc.stdout), int(proc.stderr.split()[-1])


@pytest.mark.parametrize("where", ["end", "start"])
def test_a_figure_in_100_mib_of_output_is_found_in_bounded_memory_and_said_read_in_part(tmp_path, where):
    """100 MiB of output around the figure: it is read through pipes into the first and the last 4 MiB, so
    the worker stays small and the figure is found at either end; the run says its figure was read from part
    of the output. The whole output once went to a TMPDIR file of which the first 64 MiB were read."""
    body = 'name = "chatty"\nargv = ["sh", "-c", "{script}"]\nparams = { script = "x" }\n'
    _, catalog = _plan(body + RATE, tmp_path)
    filler = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 104857600"
    script = f"{filler}; echo rate=7.5" if where == "end" else f"echo rate=7.5; {filler}"
    doc, rss_kib = _run_measured(catalog["chatty"], {"script": script})
    assert doc["ok"], doc["errors"]
    assert doc["metrics"]["rate"]["median"] == 7.5
    (warning,) = doc["warnings"]
    assert warning.startswith("metric rate was read from part of the output: stdout: 100.0 MiB of output")
    assert "searched in its first 4.0 MiB and its last 4.0 MiB" in warning
    assert rss_kib < 80 * 1024, f"the worker's peak resident set was {rss_kib} KiB for 100 MiB of output"


def test_a_program_s_figure_is_read_with_tmpdir_full(tmp_path):
    """Output no longer goes through TMPDIR: a full one (a 64 KiB tmpfs, filled) changes nothing. It once
    lost the output and said "(no stderr)"."""
    from reliability.util import in_namespace, namespace_prefix

    prefix = namespace_prefix()
    if prefix is None:
        pytest.skip("a tiny tmpfs as TMPDIR needs a private mount namespace (root, or user namespaces)")
    body = (
        'name = "t"\nargv = ["sh", "-c", "head -c 200000 /dev/zero | tr \\"\\\\\\\\0\\" x; echo; '
        'echo rate=3"]\n'
    )
    _, catalog = _plan(body + RATE, tmp_path)
    argv = catalog["t"].measured_argv({}, LaunchOptions(iterations=1))
    (tmp_path / "full").mkdir()
    proc = in_namespace(
        prefix,
        'mount -t tmpfs -o size=64k boardlab-full "$TMPDIR"; head -c 1M /dev/zero > "$TMPDIR/fill" || true\n'
        f"exec {shlex.join(argv)}",
        env={"TMPDIR": str(tmp_path / "full")},
    )
    doc = json.loads(proc.stdout)
    assert doc["ok"] and doc["metrics"]["rate"]["median"] == 3.0, (doc, proc.stderr)
    assert doc["warnings"] == []


JSON_R = 'metric = { json = "/r", unit = "ops", better = "higher" }\n'
HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    "script, metric, why",
    [
        ("echo rate=1e400", RATE, "rate: inf is not a finite number of at most 1e+100 in size"),
        ("echo rate=1e101", RATE, "rate: 1e+101 is not a finite number of at most 1e+100 in size"),
        ('echo "{\\"r\\": ' + HUGE + '}"', JSON_R, f"value: {HUGE[:40]} is not a finite number"),
    ],
)
def test_a_figure_no_statistic_can_hold_fails_the_run_with_the_reason(tmp_path, script, metric, why):
    """A figure of 10**400 (a float's infinity as text, or a 400-digit JSON integer) once ended the worker in
    an "internal error" or an OverflowError's traceback: it is the run's failure, naming the figure."""
    body = 'name = "big"\nargv = ["sh", "-c", "{script}"]\nparams = { script = "x" }\n'
    _, catalog = _plan(body + metric, tmp_path)
    doc = _run_once(catalog["big"], {"script": script})
    assert not doc["ok"] and len(doc["errors"]) == 1, doc
    assert doc["errors"][0].startswith(f"metric {why}"), doc["errors"][0]


def test_a_campaign_says_once_per_cell_that_a_figure_was_read_from_part_of_the_output(tmp_path):
    """The warning reaches the terminal once per cell, and every run's stored result keeps its own."""
    (tmp_path / "plan.toml").write_text(
        'name = "chatty"\n[runs]\nrepetitions = 2\nwarmup_max_iterations = 0\n[gates]\nidle = false\n'
        'temperature = false\n[[workloads]]\nkind = "program"\nname = "sh.chatty"\n'
        'argv = ["sh", "-c", "yes 0123456789 | head -c 12582912; echo rate=4"]\n' + RATE
    )
    db = tmp_path / "r.db"
    env = tagged_env(f"chatty-{os.getpid()}", BOARDLAB_STATE_DIR=str(tmp_path / "state"))
    proc = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(db), timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("metric rate was read from part of the output: stdout: 12.0 MiB") == 1, (
        proc.stderr
    )
    stored = [json.loads(w) for (w,) in rows(db, "SELECT worker_json FROM run_results")]
    assert len(stored) == 2 and all("12.0 MiB of output" in doc["warnings"][0] for doc in stored)
    assert {doc["metrics"]["rate"]["median"] for doc in stored} == {4.0}


def test_a_stream_kept_in_part_keeps_whole_lines_and_a_failed_read_is_said():
    from boardlab.workloads.program_output import OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, Kept

    kept = Kept("stdout")
    line = b"x" * 99 + b"\n"
    for _ in range((OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) // len(line) + 1000):
        kept.add(line)
    kept.add(b"rate=1\n")
    text, note = kept.text()
    assert note is not None and note.startswith("stdout: ") and "between were not read" in note
    assert text.endswith("rate=1\n") and all(ln in ("x" * 99, "rate=1") for ln in text.splitlines())
    whole = Kept("stderr")
    whole.add(b"all of it\n")
    assert whole.text() == ("all of it\n", None)
    whole.error = "Input/output error"
    text, note = whole.text()
    assert (
        text == "all of it\n"
        and note == "stderr could not be read whole (Input/output error): 10 bytes were read"
    )
    ex = program.Execution(0, {}, "", "", None, {"stderr": "stderr could not be read whole (EIO)"})
    assert ex.stderr_tail() == "(none read: stderr could not be read whole (EIO))"


def test_a_command_string_is_split_after_its_placeholders_are_filled_and_runs_without_a_shell(tmp_path):
    plan, catalog = _plan(
        'name = "words"\ncommand = "{cmd}"\n'
        "params = { cmd = [\"printf '%s|' 'a b' c\", \"printf '$HOME'\"] }\n"
        'metric = { regex = "(?P<v>.*)", name = "v", unit = "text", better = "higher" }\n',
        tmp_path,
    )
    spec = catalog["words"]
    argv = spec.measured_argv({"cmd": "printf '%s|' 'a b' c"}, LaunchOptions(iterations=1))
    decl = json.loads(argv[argv.index("--param") + 1].split("=", 1)[1])
    assert decl["argv"] == ["printf", "%s|", "a b", "c"]  # quoted words kept whole, as a shell splits them
    decl = json.loads(
        spec.measured_argv({"cmd": "printf '$HOME'"}, LaunchOptions(iterations=1))[5].split("=", 1)[1]
    )
    assert decl["argv"] == ["printf", "$HOME"]  # no shell: nothing is expanded
    with pytest.raises(InputError, match=r"command: .*cannot be split into words .*balance its quotes"):
        _plan('name = "bad"\ncommand = "{cmd}"\nparams = { cmd = ["echo \'unbalanced"] }\n', tmp_path)
    with pytest.raises(InputError, match="give argv .* or command .*, not both"):
        _plan('name = "both"\ncommand = "true"\nargv = ["true"]\n', tmp_path)


def test_prepare_each_runs_before_every_execution_outside_its_time(tmp_path):
    flag = tmp_path / "flag"
    plan, catalog = _plan(
        f'name = "each"\nargv = ["rm", "{flag}"]\nprepare_each = ["sh", "-c", "sleep 0.3; touch {flag}"]\n'
        "iterations = 3\n",
        tmp_path,
    )
    doc = _run_once(catalog["each"], {})
    assert doc["ok"], doc["errors"]  # each rm found the flag: made again before each of the three
    assert (
        len(doc["iterations_ns"]) == 3 and max(doc["iterations_ns"]) < 0.25e9
    )  # the 0.3 s sleep is not timed
    assert doc["launched"]["executions"] == 3 and doc["launched"]["wall_ns"] == sum(doc["iterations_ns"])


def test_a_plan_pins_the_worker_to_a_set_of_cpus(tmp_path):
    path = tmp_path / "set.toml"
    path.write_text('name = "s"\n[runs]\ncpu = [3, 1]\n[[workloads]]\nname = "noop"\n')
    plan = parse_plan(path.read_text(), str(path), {w.name: w for w in all_workloads()})
    assert plan.runs.cpu_set == (1, 3) and plan.runs.cpu == 3  # the set's last is the measured CPU
    path.write_text('name = "s"\n[runs]\ncpu = [1, 1]\n[[workloads]]\nname = "noop"\n')
    with pytest.raises(InputError, match=r"runs.cpu.*expected a list of distinct CPU numbers"):
        parse_plan(path.read_text(), str(path), {w.name: w for w in all_workloads()})
