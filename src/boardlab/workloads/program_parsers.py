"""Readers of the figures that programs a board's user already has print: `7zz b` (7-Zip's benchmark),
`ffmpeg -benchmark` (a decode to the null muxer), `openssl speed` (ciphers and digests) and `sysbench`.

A program workload names one with `metric = { parser = "7z", field = "rating_mips" }` (docs/extending.md).
Each parser reads the text the program printed and returns every figure it found, by field name, with its
unit and direction; the static `fields` are what a plan may pick as the run's metric, the others (7-Zip's
per-dictionary ratings, openssl's per-block rates) are stored beside it. Each was written against the
program's real output on Debian 12 (tests/fixtures/programs/).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# field -> (value, unit, higher_is_better)
Figures = dict[str, tuple[float, str, bool]]


@dataclass(frozen=True)
class Parser:
    name: str
    summary: str
    stream: str  # "stdout" or "stderr": where the program prints its figures
    fields: tuple[tuple[str, str, bool], ...]  # (field, unit, higher_is_better) a plan may choose
    parse: Callable[[str], Figures]
    debian_package: str


_NUM = r"[0-9]+(?:\.[0-9]+)?"


def parse_7z(text: str) -> Figures:
    """`7zz b`: one row per dictionary size ("22:  speed usage R/U rating | speed usage R/U rating"), the
    average row ("Avr:") and the total row ("Tot:  usage R/U rating"), whose rating is 7-Zip's rating."""
    out: Figures = {}
    four = rf"({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})"
    row = re.compile(rf"^(\d+|Avr):\s+{four}\s*\|\s*{four}\s*$", re.MULTILINE)
    for m in row.finditer(text):
        label = "" if m.group(1) == "Avr" else f"_d{m.group(1)}"
        out[f"compress{label}_speed_kib_s"] = (float(m.group(2)), "KiB/s", True)
        out[f"compress{label}_rating_mips"] = (float(m.group(5)), "MIPS", True)
        out[f"decompress{label}_speed_kib_s"] = (float(m.group(6)), "KiB/s", True)
        out[f"decompress{label}_rating_mips"] = (float(m.group(9)), "MIPS", True)
    tot = re.search(rf"^Tot:\s+({_NUM})\s+({_NUM})\s+({_NUM})\s*$", text, re.MULTILINE)
    if tot:
        out["usage_pct"] = (float(tot.group(1)), "%", True)
        out["rating_per_usage_mips"] = (float(tot.group(2)), "MIPS", True)
        out["rating_mips"] = (float(tot.group(3)), "MIPS", True)
    return out


def parse_ffmpeg_benchmark(text: str) -> Figures:
    """`ffmpeg -benchmark -i CLIP -f null -`: the last progress line's frame count and the "bench:" lines
    (utime, stime, rtime in s; maxrss in kB, as bench_*); the decode rate is frames / rtime."""
    out: Figures = {}
    bench = re.search(rf"bench: utime=({_NUM})s stime=({_NUM})s rtime=({_NUM})s", text)
    frames = re.findall(r"frame=\s*(\d+)", text)
    if bench:
        out["bench_user_s"] = (float(bench.group(1)), "s", False)
        out["bench_sys_s"] = (float(bench.group(2)), "s", False)
        out["bench_real_s"] = (float(bench.group(3)), "s", False)
    if frames:
        out["frames"] = (float(frames[-1]), "frames", True)
    if bench and frames and float(bench.group(3)) > 0:
        out["decode_fps"] = (float(frames[-1]) / float(bench.group(3)), "frames/s", True)
    rss = re.search(r"bench: maxrss=(\d+)kB", text)
    if rss:
        out["bench_maxrss_kib"] = (float(rss.group(1)), "KiB", False)
    return out


def parse_openssl_speed(text: str) -> Figures:
    """`openssl speed ALG...` (ciphers and digests): the table after "type  16 bytes  64 bytes ...", in 1000s
    of bytes per second ("k"). One algorithm gives `block_<N>B_kB_s` per block size and `largest_block_kB_s`;
    several are prefixed with the algorithm's name."""
    out: Figures = {}
    header = re.search(r"^type((?:\s+\d+ bytes)+)\s*$", text, re.MULTILINE)
    if not header:
        return out
    sizes = re.findall(r"(\d+) bytes", header.group(1))
    rows = []
    for line in text[header.end() :].splitlines():
        cells = re.findall(rf"({_NUM})k", line)
        if len(cells) == len(sizes):
            name = line[: line.find(cells[0])].strip()
            rows.append((name, [float(c) for c in cells]))
    for name, rates in rows:
        prefix = f"{re.sub(r'[^A-Za-z0-9]+', '_', name)}." if len(rows) > 1 else ""
        for size, rate in zip(sizes, rates, strict=True):
            out[f"{prefix}block_{size}B_kB_s"] = (rate, "kB/s", True)
        out[f"{prefix}largest_block_kB_s"] = (rates[-1], "kB/s", True)
    if rows:
        out["largest_block_kB_s"] = (rows[0][1][-1], "kB/s", True)
    return out


def parse_sysbench(text: str) -> Figures:
    """`sysbench TEST run`: events per second (cpu), MiB/s (memory), and the latency block (ms)."""
    out: Figures = {}
    patterns = (
        ("events_per_s", rf"events per second:\s*({_NUM})", "events/s", True),
        ("mib_per_s", rf"\(({_NUM}) MiB/sec\)", "MiB/s", True),
        ("total_events", r"total number of events:\s*(\d+)", "events", True),
        ("latency_avg_ms", rf"^\s*avg:\s*({_NUM})", "ms", False),
        ("latency_max_ms", rf"^\s*max:\s*({_NUM})", "ms", False),
        ("latency_p95_ms", rf"95th percentile:\s*({_NUM})", "ms", False),
    )
    for name, pattern, unit, hib in patterns:
        m = re.search(pattern, text, re.MULTILINE)
        if m:
            out[name] = (float(m.group(1)), unit, hib)
    return out


PARSERS: dict[str, Parser] = {
    p.name: p
    for p in (
        Parser(
            "7z",
            "7-Zip's benchmark (`7zz b`): its rating, total and per dictionary size",
            "stdout",
            (
                ("rating_mips", "MIPS", True),
                ("compress_rating_mips", "MIPS", True),
                ("decompress_rating_mips", "MIPS", True),
                ("compress_speed_kib_s", "KiB/s", True),
                ("decompress_speed_kib_s", "KiB/s", True),
            ),
            parse_7z,
            "7zip",
        ),
        Parser(
            "ffmpeg",
            "a decode with `ffmpeg -benchmark -i CLIP -f null -`",
            "stderr",
            (("decode_fps", "frames/s", True), ("bench_real_s", "s", False), ("bench_user_s", "s", False)),
            parse_ffmpeg_benchmark,
            "ffmpeg",
        ),
        Parser(
            "openssl",
            "`openssl speed` of a cipher or digest",
            "stdout",
            (("largest_block_kB_s", "kB/s", True),),
            parse_openssl_speed,
            "openssl",
        ),
        Parser(
            "sysbench",
            "`sysbench cpu|memory|threads|mutex run`",
            "stdout",
            (
                ("events_per_s", "events/s", True),
                ("mib_per_s", "MiB/s", True),
                ("latency_avg_ms", "ms", False),
                ("latency_p95_ms", "ms", False),
            ),
            parse_sysbench,
            "sysbench",
        ),
    )
}
