"""The compress family and the sensor-like corpus it works on (the satellite study: a computer compressing
telemetry, logs and camera frames before a narrow downlink)."""

from __future__ import annotations

import bz2
import json
import lzma
import os
import re
import shutil
import stat
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from helpers import assert_plausible, kern_json, run_cli, run_kern

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
KERNELS = ["compress.lzma", "compress.bzip2", "compress.zstd", "compress.zlib"]
STREAMS = ["telemetry", "logs", "image", "random"]
DEFAULT_MIX = "telemetry=40,logs=30,image=20,random=10"
SEGMENT = 8192  # corpus.h: BK_CORPUS_SEGMENT


def fnv1a(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def run(kern: Path, name: str, *params: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, name, *FAST, *args, *extra)


def ok_run(kern: Path, name: str, *params: str) -> dict:
    rc, res = run(kern, name, *params)
    assert rc == 0 and res["ok"] and res["verified"], res.get("errors")
    return res


def write_corpus(kern: Path, path: Path, nbytes: int | str, *extra: str) -> bytes:
    proc = run_kern(kern, "corpus", "--bytes", str(nbytes), "--out", str(path), *extra)
    assert proc.returncode == 0, proc.stderr
    return path.read_bytes()


# ---- the kernels ----


@pytest.mark.parametrize("mix", [f"{s}=100" for s in STREAMS] + [DEFAULT_MIX])
@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_round_trips_each_stream_alone_and_the_default_mix(kern, name, mix):
    res = ok_run(kern, name, "bytes=96k", f"mix={mix}")
    assert res["params"]["mix"] == mix and res["info"]["corpus_bytes"] == 96 * 1024
    assert res["phases_ns"].keys() == {"compress", "decompress"}
    for metric in ("compress_mb_s", "decompress_mb_s"):
        m = res["metrics"][metric]
        assert m["unit"] == "MB/s" and m["higher_is_better"] is True
        assert len(m["values"]) == 2
        assert_plausible(m["values"], 0.01, 1e5)
    ratio = res["metrics"]["ratio"]
    assert ratio["unit"] == "x" and ratio["higher_is_better"] is True
    assert ratio["value"] == pytest.approx(96 * 1024 / res["info"]["compressed_bytes"])


def test_rates_follow_from_the_phase_times(kern):
    res = ok_run(kern, "compress.zlib", "bytes=200k")
    for phase in ("compress", "decompress"):
        for ns, v in zip(res["phases_ns"][phase], res["metrics"][f"{phase}_mb_s"]["values"], strict=True):
            assert v == pytest.approx(200 * 1024 / (ns * 1e-9) * 1e-6, rel=1e-9)


def test_ratios_are_ordered_as_the_data_suggests(kern):
    ratio = {
        (name, s): ok_run(kern, name, "bytes=128k", f"mix={s}=100")["metrics"]["ratio"]["value"]
        for name in KERNELS
        for s in ("logs", "random")
    }
    for name in KERNELS:
        # Random bytes (an encrypted payload) do not compress; the format's overhead is all there is.
        assert 0.97 < ratio[name, "random"] <= 1.0
        # Repetitive text does.
        assert ratio[name, "logs"] > 4
    default = {name: ok_run(kern, name, "bytes=512k")["metrics"]["ratio"]["value"] for name in KERNELS}
    assert default["compress.lzma"] > default["compress.zlib"] > 1.2
    assert default["compress.lzma"] > default["compress.zstd"]


def test_higher_levels_compress_smaller(kern):
    def size(name, *p):
        return ok_run(kern, name, "bytes=128k", *p)["info"]["compressed_bytes"]

    assert size("compress.lzma", "preset=9") <= size("compress.lzma", "preset=0")
    assert size("compress.zstd", "level=19") < size("compress.zstd", "level=1")
    assert size("compress.zlib", "level=9") < size("compress.zlib", "level=1")


def test_library_versions_are_recorded(kern):
    info = {name: ok_run(kern, name, "bytes=4k")["info"] for name in KERNELS}
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", info["compress.lzma"]["lzma_version"])
    assert info["compress.bzip2"]["bzip2_version"].startswith("1.")
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["compress.zstd"]["zstd_version"])
    assert info["compress.zlib"]["zlib_version"] == zlib.ZLIB_RUNTIME_VERSION


# ---- the streams are the formats the standard tools write ----


@pytest.fixture(scope="module")
def corpus_file(kern, tmp_path_factory) -> tuple[Path, bytes]:
    path = tmp_path_factory.mktemp("corpus") / "corpus.bin"
    return path, write_corpus(kern, path, 300 * 1024)


def compressed(kern, corpus_file, name, *params) -> dict:
    return ok_run(kern, name, f"input={corpus_file[0]}", *params)["info"]


@pytest.mark.parametrize(
    ("name", "params", "reference"),
    [
        ("compress.lzma", (), lambda d: lzma.compress(d, preset=6)),
        (
            "compress.lzma",
            ("preset=1", "extreme=1"),
            lambda d: lzma.compress(d, preset=1 | lzma.PRESET_EXTREME),
        ),
        ("compress.bzip2", (), lambda d: bz2.compress(d, 9)),
        ("compress.bzip2", ("level=3",), lambda d: bz2.compress(d, 3)),
        ("compress.zlib", (), lambda d: zlib.compress(d, 6)),
        ("compress.zlib", ("level=1",), lambda d: zlib.compress(d, 1)),
    ],
)
def test_streams_are_byte_identical_to_pythons_bindings_of_the_same_libraries(
    kern, corpus_file, name, params, reference
):
    info = compressed(kern, corpus_file, name, *params)
    expected = reference(corpus_file[1])
    assert info["compressed_bytes"] == len(expected)
    assert info["compressed_fnv1a"] == fnv1a(expected)


@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd tool is not installed")
def test_zstd_stream_is_the_zstd_tools_frame(kern, corpus_file):
    info = compressed(kern, corpus_file, "compress.zstd")
    ref = subprocess.run(
        ["zstd", "-3", "-q", "-c", str(corpus_file[0])], capture_output=True, check=True
    ).stdout
    assert info["compressed_fnv1a"] == fnv1a(ref) and info["compressed_bytes"] == len(ref)


@pytest.mark.skipif(not (shutil.which("pbzip2") and shutil.which("bzip2")), reason="pbzip2 or bzip2 missing")
def test_parallel_bzip2_writes_pbzip2s_concatenated_streams_that_bzip2_reads(kern, tmp_path):
    # pbzip2 cuts its input into blocks of -b x 100 kB and compresses each at -LEVEL as its own stream; the
    # kernel cuts at level x 100 kB, so it matches pbzip2 -L -bL (at the default level 9 that is plain pbzip2
    # -9).
    path = tmp_path / "c.bin"
    data = write_corpus(kern, path, 350 * 1024)
    res = ok_run(kern, "compress.bzip2", f"input={path}", "level=1", "threads=2")
    assert res["info"]["bzip2_streams"] == 4  # 3 x 100 000 bytes + the rest
    ref = subprocess.run(
        ["pbzip2", "-1", "-b1", "-p2", "-c", str(path)], capture_output=True, check=True
    ).stdout
    assert res["info"]["compressed_fnv1a"] == fnv1a(ref)
    assert subprocess.run(["bzip2", "-d", "-c"], input=ref, capture_output=True, check=True).stdout == data
    # threads=1 writes a single stream, as bzip2 does: no per-stream overhead.
    single = ok_run(kern, "compress.bzip2", f"input={path}", "level=1")["info"]
    assert "bzip2_streams" not in single and single["compressed_bytes"] < res["info"]["compressed_bytes"]


def test_parallel_bzip2_uses_more_threads_than_blocks_or_cpus_safely(kern):
    res = ok_run(kern, "compress.bzip2", "bytes=1M", "level=1", "threads=64")
    assert res["info"]["bzip2_streams"] == 11  # ceil(1 MiB / 100 000)


# ---- verification ----


@pytest.mark.parametrize(
    ("name", "params"), [(k, ()) for k in KERNELS] + [("compress.bzip2", ("threads=2",))]
)
def test_a_corrupted_restored_copy_is_an_error_not_a_time(kern, name, params):
    rc, res = run(kern, name, "bytes=1M" if params else "bytes=64k", *params, extra=("--corrupt",))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any("differ from the input" in e for e in res["errors"])


# ---- parameters ----


@pytest.mark.parametrize(
    ("name", "param"),
    [
        ("compress.lzma", "preset=10"),
        ("compress.lzma", "extreme=2"),
        ("compress.bzip2", "level=0"),
        ("compress.bzip2", "threads=257"),
        ("compress.bzip2", "threads=0"),
        ("compress.zstd", "level=20"),
        ("compress.zlib", "level=0"),
        ("compress.zlib", "bytes=0"),
        ("compress.zlib", "bytes=2G"),
        ("compress.zlib", "seed=-1"),
    ],
)
def test_out_of_range_parameters_are_usage_errors(kern, name, param):
    proc = run_kern(kern, name, "--param", param)
    assert proc.returncode == 2
    assert "out of range" in proc.stderr and param.split("=")[0] in proc.stderr


def test_a_missing_input_file_fails_naming_the_path(kern, tmp_path):
    missing = tmp_path / "no-such-dir" / "telemetry.raw"
    rc, res = run(kern, "compress.zstd", f"input={missing}")
    assert rc == 2 and res["ok"] is False  # bad input: exit 2
    assert any(str(missing) in e and "input" in e for e in res["errors"])


@pytest.mark.parametrize("what", ["fifo", "directory"])
def test_an_input_that_is_no_regular_file_is_bad_input_exit_2(kern, tmp_path, what):
    """`boardlab kern compress.* input=FIFO` (or a directory): refused at once with exit 2 and a message
    naming the parameter and the path, not waited on for a writer, not a run failure (exit 1)."""
    path = tmp_path / "in put"
    if what == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    rc, res = run(kern, "compress.zlib", f"input={path}")
    assert rc == 2 and res["ok"] is False
    assert any("'input'" in e and str(path) in e and "not a regular file" in e for e in res["errors"])
    proc = run_cli("kern", "compress.zlib", "--param", f"input={path}", timeout=30)
    assert proc.returncode == 2 and "not a regular file" in proc.stdout + proc.stderr


def test_an_empty_input_file_fails(kern, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    rc, res = run(kern, "compress.zlib", f"input={empty}")
    assert rc == 2 and any("empty" in e or "0 bytes" in e for e in res["errors"])


@pytest.mark.parametrize(
    "mix",
    [
        "telemetry=50,logs=30",  # sums to 80
        "telemetry=40,logs=30,image=20,video=10",  # unknown stream
        "telemetry=60,telemetry=40",  # twice
        "telemetry",  # no percentage
        "telemetry=abc,logs=100",
        "telemetry=-10,logs=110",
        "telemetry=100,",
        "",
    ],
)
def test_a_malformed_mix_fails_naming_the_parameter_and_the_expected_form(kern, mix):
    rc, res = run(kern, "compress.zlib", f"mix={mix}")
    assert rc == 1 and res["ok"] is False
    (error,) = res["errors"]
    assert "parameter 'mix'" in error and "NAME=PERCENT" in error and DEFAULT_MIX in error


def test_catalog_declares_the_family_and_says_why_a_library_is_missing(kern):
    catalog = json.loads(run_kern(kern, "--list", "--json").stdout)
    specs = {k["name"]: k for k in catalog["kernels"] if k["family"] == "compress"}
    assert set(specs) == set(KERNELS)
    # The binary's own record of the libraries its build found (it may be a cross-built one).
    have = {lib: lib in catalog["build"]["libraries"] for lib in ("lzma", "bzip2", "zstd", "zlib")}
    package = {"lzma": "liblzma-dev", "bzip2": "libbz2-dev", "zstd": "libzstd-dev", "zlib": "zlib1g-dev"}
    for name, spec in specs.items():
        lib = name.split(".")[1]
        assert spec["phases"] == ["compress", "decompress"]
        assert [m["name"] for m in spec["metrics"]] == ["compress_mb_s", "decompress_mb_s", "ratio"]
        assert {"bytes", "mix", "seed", "input"} <= {p["name"] for p in spec["params"]}
        assert spec["supported"] is have[lib]
        if not have[lib]:
            assert package[lib] in spec["reason"]


# ---- the corpus ----


def test_corpus_subcommand_writes_exactly_n_bytes_the_same_every_time(kern, tmp_path):
    a = write_corpus(kern, tmp_path / "a", 100_003)
    b = write_corpus(kern, tmp_path / "b", 100_003)
    assert len(a) == 100_003 and a == b
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no FILE.tmp left behind
    assert write_corpus(kern, tmp_path / "c", 100_003, "--seed", "2") != a
    # A shorter corpus is a prefix of a longer one, whatever the chunking of the writes (1 MiB chunks here).
    long = write_corpus(kern, tmp_path / "d", "3M")
    assert len(long) == 3 * 1024 * 1024 and long.startswith(a)


def test_kernels_compress_exactly_the_bytes_the_corpus_subcommand_writes(kern, tmp_path):
    # More than the subcommand's 1 MiB write chunk, and not a multiple of anything: the kernel generates its
    # corpus in one piece, the subcommand in chunks, and the bytes must not depend on that.
    mix, n = "telemetry=25,logs=25,image=25,random=25", 1_500_001
    data = write_corpus(kern, tmp_path / "c", n, "--mix", mix, "--seed", "7")
    generated = ok_run(kern, "compress.zstd", f"bytes={n}", f"mix={mix}", "seed=7")
    from_file = ok_run(kern, "compress.zstd", f"input={tmp_path / 'c'}")
    assert generated["checksum"] == from_file["checksum"] == fnv1a(data)
    assert generated["info"]["compressed_fnv1a"] == from_file["info"]["compressed_fnv1a"]
    assert from_file["info"]["corpus"] == str(tmp_path / "c")
    assert generated["info"]["corpus"] == "generated" and generated["info"]["corpus_seed"] == 7


def test_the_mix_interleaves_each_stream_unchanged_in_segments_in_proportion(kern, tmp_path):
    n = 64 * SEGMENT
    mixed = write_corpus(kern, tmp_path / "mix", n)
    pure = {s: write_corpus(kern, tmp_path / s, n, "--mix", f"{s}=100") for s in STREAMS}
    taken = Counter()
    for i in range(0, n, SEGMENT):
        seg = mixed[i : i + SEGMENT]
        # Each segment is the next piece of one stream: a stream's bytes do not depend on the mix.
        owner = [s for s in STREAMS if pure[s][taken[s] * SEGMENT : (taken[s] + 1) * SEGMENT] == seg]
        assert len(owner) == 1, f"segment {i // SEGMENT} is no stream's next piece"
        taken[owner[0]] += 1
        # Every prefix keeps each stream within one segment of its share.
        k = i // SEGMENT + 1
        for s, pct in zip(STREAMS, (40, 30, 20, 10), strict=True):
            assert abs(taken[s] - pct * k / 100) <= 1
    assert sum(taken.values()) == 64 and set(taken) == set(STREAMS)


def test_telemetry_is_little_endian_int16_frames_with_a_sequence_counter(kern, tmp_path):
    data = write_corpus(kern, tmp_path / "t", 8 * 16 * 1000, "--mix", "telemetry=100")
    frames = [
        [int.from_bytes(data[f + 2 * c : f + 2 * c + 2], "little", signed=c > 0) for c in range(8)]
        for f in range(0, len(data), 16)
    ]
    seq = [f[0] for f in frames]
    assert all((b - a) % 65536 == 1 for a, b in zip(seq, seq[1:], strict=False))
    for c in range(1, 8):
        values = [f[c] for f in frames]
        # Sensors vary, slowly: steps are small against the channel's range.
        steps = [abs(b - a) for a, b in zip(values, values[1:], strict=False)]
        assert len(set(values)) > 20
        assert sorted(steps)[len(steps) // 2] < (max(values) - min(values)) / 4


def test_logs_are_syslog_like_lines_in_time_order(kern, tmp_path):
    text = write_corpus(kern, tmp_path / "l", 200_000, "--mix", "logs=100").decode("ascii")
    lines = text.split("\n")[:-1]  # the last line is cut at the corpus size
    line_re = re.compile(
        r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) andesite-obc "
        r"(kernel: \[ *\d+\.\d{6}\] |[a-z-]+\[\d+\]: (DEBUG|INFO|NOTICE|WARNING|ERR) )\S.*"
    )
    stamps = []
    for line in lines:
        m = line_re.fullmatch(line)
        assert m, line
        stamps.append(m.group(1))
    assert stamps == sorted(stamps) and len(set(stamps)) > len(stamps) / 2
    assert {"eps", "adcs", "comms", "cdh"} <= {m.group(1) for m in re.finditer(r" ([a-z-]+)\[\d+\]: ", text)}


def test_random_stream_looks_uniform_and_image_stream_is_smooth(kern, tmp_path):
    rnd = write_corpus(kern, tmp_path / "r", 256 * 1024, "--mix", "random=100")
    counts = Counter(rnd)
    expected = len(rnd) / 256
    chi2 = sum((counts.get(b, 0) - expected) ** 2 / expected for b in range(256))
    assert chi2 < 400  # 255 degrees of freedom: p < 1e-7 above this
    img = write_corpus(kern, tmp_path / "i", 640 * 480, "--mix", "image=100")
    # Neighbouring pixels of a camera frame mostly differ by little (noise), sometimes a lot (edges, stars).
    diffs = [abs(a - b) for a, b in zip(img, img[1:], strict=False)]
    assert sorted(diffs)[len(diffs) // 2] <= 4 and max(diffs) > 100


@pytest.mark.parametrize(
    "args",
    [
        ("--bytes", "0", "--out", "{out}"),
        ("--bytes", "2G", "--out", "{out}"),
        ("--bytes", "ten", "--out", "{out}"),
        ("--bytes", "10"),
        ("--out", "{out}"),
        ("--bytes", "10", "--out", "{out}", "--mix", "logs=99"),
        ("--bytes", "10", "--out", "{out}", "--seed", "-1"),
        ("--bytes", "10", "--out", "{out}", "--frobnicate", "1"),
        ("--bytes", "10", "--out"),
    ],
)
def test_corpus_subcommand_rejects_bad_arguments_with_exit_2(kern, tmp_path, args):
    out = tmp_path / "c.bin"
    proc = run_kern(kern, "corpus", *(a.format(out=out) for a in args))
    assert proc.returncode == 2 and proc.stderr
    assert not any(tmp_path.iterdir())


def test_corpus_subcommand_leaves_no_partial_file_when_it_cannot_write(kern, tmp_path):
    # a directory that is not there is bad input, named with the path (before: exit 1)
    proc = run_kern(kern, "corpus", "--bytes", "1k", "--out", str(tmp_path / "missing-dir" / "c.bin"))
    assert proc.returncode == 2 and f"--out '{tmp_path / 'missing-dir' / 'c.bin'}'" in proc.stderr
    assert "existing directory you can write" in proc.stderr
    (tmp_path / "a-file").write_bytes(b"x")
    proc = run_kern(kern, "corpus", "--bytes", "1k", "--out", str(tmp_path / "a-file" / "c.bin"))
    assert proc.returncode == 2 and "a-file/c.bin" in proc.stderr and "Not a directory" in proc.stderr
    (tmp_path / "a-file").unlink()
    # a directory as --out is refused before anything is written (bad input: exit 2)
    target = tmp_path / "occupied"
    target.mkdir()
    (target / "keep").write_bytes(b"x")
    proc = run_kern(kern, "corpus", "--bytes", "1k", "--out", str(target))
    assert proc.returncode == 2 and str(target) in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["occupied"]
    assert [p.name for p in target.iterdir()] == ["keep"]


def test_corpus_writes_through_no_link_and_over_no_file_at_out_tmp(kern, tmp_path):
    """Before: the corpus went to the fixed name OUT.tmp, opened with fopen "wb": a symlink planted there was
    written through (its target overwritten) and then renamed to OUT; an OUT.tmp of the user's was lost."""
    target = tmp_path / "precious.txt"
    target.write_bytes(b"precious\n")
    (tmp_path / "c3.bin.tmp").symlink_to(target)
    (tmp_path / "c4.bin.tmp").write_bytes(b"the user's own file\n")
    old = os.umask(0o022)
    try:
        for name in ("c3.bin", "c4.bin"):
            proc = run_kern(kern, "corpus", "--bytes", "4k", "--out", str(tmp_path / name))
            assert proc.returncode == 0, proc.stderr
    finally:
        os.umask(old)
    assert target.read_bytes() == b"precious\n"
    assert os.readlink(tmp_path / "c3.bin.tmp") == str(target)
    assert (tmp_path / "c4.bin.tmp").read_bytes() == b"the user's own file\n"
    for name in ("c3.bin", "c4.bin"):
        out = tmp_path / name
        assert not out.is_symlink() and out.stat().st_size == 4096
        assert stat.S_IMODE(out.stat().st_mode) == 0o644  # as fopen made it under umask 022, not 0600
    assert out.read_bytes() == (tmp_path / "c3.bin").read_bytes()  # the same corpus both times
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["c3.bin", "c3.bin.tmp", "c4.bin", "c4.bin.tmp", "precious.txt"]  # no temporary left
