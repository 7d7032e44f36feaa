"""io.storage against fio on the same job: the fio job file written from the same description."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from boardlab.errors import MeasurementError
from boardlab.xcheck import pairs
from boardlab.xcheck.jsonrobust import parse
from boardlab.xcheck.pairs import whole_run_rate

METRICS = ("bandwidth_mb_s", "iops", "latency_p50_ns", "latency_p99_ns")
RATIO_METRICS = ("bandwidth_mb_s", "iops", "latency_p50_ns")


@dataclass(frozen=True)
class StorageJob:
    path: str
    op: str = "read"  # read | write | randrw
    pattern: str = "seq"  # seq | rand
    bs_bytes: int = 128 * 1024
    size_bytes: int = 64 * 1024 * 1024
    direct: bool = True
    engine: str = "psync"  # psync | io_uring
    iodepth: int = 1
    fsync: str = "none"  # none | each | end
    runtime_s: float = 3.0
    destructive: bool = False
    cpu: int | None = None

    @property
    def runtime_ms(self) -> int:
        """The runtime both tools get, in whole milliseconds: fio reads `runtime=0.5s` as 0 (a 10 ms pass
        with a warning) and 1.5s as 1 s, but takes an `ms` suffix exactly."""
        return max(1, round(self.runtime_s * 1000))

    def timed_iterations(self) -> int:
        """boardlab-kern's timed iterations of at least pairs.ITERATION_MS each: about fio's runtime."""
        return pairs.iterations_for(self.runtime_ms)

    def fio_rw(self) -> str:
        if self.op == "randrw":
            return "randrw"
        return ("rand" if self.pattern == "rand" else "") + self.op

    def fio_job(self) -> str:
        """The equivalent fio job: same file, region, block size, engine, depth, O_DIRECT, cache drop."""
        lines = [
            "; written by boardlab xcheck io.storage: the job boardlab-kern io.storage runs, for fio",
            "[global]",
            f"filename={self.path.replace(':', chr(92) + ':')}",
            f"size={self.size_bytes}",
            f"bs={self.bs_bytes}",
            f"rw={self.fio_rw()}",
            "rwmixread=50",
            f"direct={int(self.direct)}",
            f"ioengine={self.engine}",
            f"iodepth={self.iodepth}",
            "invalidate=1",
            "norandommap=1",  # uniform random offsets with repeats, as boardlab draws them
            "randrepeat=1",
            "time_based=1",
            f"runtime={self.runtime_ms}ms",
            "percentile_list=50:99:99.9",
        ]
        if self.fsync == "each":
            lines.append("fdatasync=1")
        elif self.fsync == "end":
            lines.append("end_fsync=1")
        lines += ["", "[boardlab]"]
        return "\n".join(lines) + "\n"

    def kern_params(self) -> list[str]:
        params = {
            "path": self.path,
            "op": self.op,
            "pattern": self.pattern,
            "bs": self.bs_bytes,
            "size_bytes": self.size_bytes,
            "direct": int(self.direct),
            "engine": self.engine,
            "iodepth": self.iodepth,
            "fsync": self.fsync,
            "destructive": int(self.destructive),
        }
        return [a for k, v in params.items() for a in ("--param", f"{k}={v}")]


def kern_command(kern: Path, job: StorageJob) -> list[str]:
    return pairs.kern_command(kern, "io.storage", job.kern_params(), job.timed_iterations())


def run_boardlab(kern: Path, job: StorageJob) -> dict[str, float | None]:
    res = pairs.run_kern(kern_command(kern, job), "io.storage", job.cpu, job.runtime_ms / 1000 + 600)
    m = res["metrics"]
    return {
        "bandwidth_mb_s": whole_run_rate(res, job.bs_bytes / 1e6),
        "iops": whole_run_rate(res, 1.0),
        "latency_p50_ns": m["latency_p50_ns"]["value"],
        "latency_p99_ns": m["latency_p99_ns"]["value"],
    }


def layout(kern: Path, job: StorageJob) -> None:
    """Writes the region once with boardlab's pattern and keeps the file, as fio lays out a missing file
    before its job: then neither side's timed run follows a fresh write of the whole region."""
    cmd = [str(kern), "io.storage", "--json", "--iterations", "1", "--warmup-max-iterations", "0",
           "--param", f"path={job.path}", "--param", f"size_bytes={job.size_bytes}",
           "--param", f"bs={job.bs_bytes}", "--param", "op=write", "--param", "keep_file=1",
           "--param", f"direct={int(job.direct)}"]  # fmt: skip
    proc = pairs.run_tool(cmd, None, 600)
    res = parse(proc.stdout, "boardlab-kern io.storage") if proc.stdout.strip() else {}
    if res.get("supported") is False:
        raise MeasurementError(f"io.storage unsupported here: {res.get('reason')}")
    if not res.get("ok"):
        raise MeasurementError(f"laying out {job.path} failed: {res.get('errors') or proc.stderr.strip()}")


def fio_command(job_file: Path) -> list[str]:
    return ["fio", "--output-format=json", str(job_file)]


def fio_metrics(doc: dict) -> dict[str, float | None]:
    """bandwidth (bw_bytes, 1e6 B = 1 MB), IOPS and clat percentiles from fio's JSON (read and write summed;
    latency from reads when the job reads)."""
    jobs = doc.get("jobs") or []
    if not jobs:
        raise MeasurementError("fio's JSON has no jobs")
    j = jobs[0]
    if j.get("error"):
        raise MeasurementError(f"fio reported error {j['error']}")
    sides = [j[s] for s in ("read", "write") if j.get(s, {}).get("io_bytes", 0) > 0]
    if not sides:
        raise MeasurementError("fio moved no data")
    pct = (sides[0].get("clat_ns") or {}).get("percentile") or {}

    def p(q: str) -> float | None:
        v = pct.get(q)
        return float(v) if v is not None else None

    return {
        "bandwidth_mb_s": sum(float(s.get("bw_bytes", 0)) for s in sides) / 1e6,
        "iops": sum(float(s.get("iops", 0)) for s in sides),
        "latency_p50_ns": p("50.000000"),
        "latency_p99_ns": p("99.000000"),
    }


def run_fio(job_file: Path, job: StorageJob) -> dict[str, float | None]:
    proc = pairs.run_tool(fio_command(job_file), job.cpu, job.runtime_ms / 1000 + 600)
    if proc.returncode != 0:
        raise MeasurementError(
            f"fio failed (exit {proc.returncode}): {proc.stderr.strip()[:300] or proc.stdout[:300]}"
        )
    try:
        doc = parse(proc.stdout, "fio")
    except ValueError as exc:
        raise MeasurementError(str(exc)) from None
    return fio_metrics(doc)
