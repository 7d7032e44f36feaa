"""The runner's own cost per run, this install against an earlier revision's Python, alternated.

A change to the run loop saves tens of microseconds a run; this VM's speed drifts by a third within an hour,
so two figures taken minutes apart cannot show it. This bench alternates, in the same minutes: A = the
installed boardlab (`make install` of the working tree), B = the Python sources of `--base REV` (its
`git archive` in a temporary directory, with the installed native parts, boardlab-kern and the compiled
statistics, copied in: what is compared is the Python). Each side runs `boardlab run` of a plan of RUNS
runs of a program workload (`/bin/true` unless `--program PATH`), gates off, into its own new database.

Per side it takes the run loop's time per run (the `loop_s` of `run --json`) and the CPU time per run of the
whole command and everything it started (the interpreter's start-up and the program's own CPU are the same
on both sides, so the difference of the pair is the runner's). It prints each pair, then the median of the
pairwise differences B - A per run (positive: this install is cheaper), with the 1-minute load beside.

    .venv/bin/python bench/bench_revisions.py [--base REV (HEAD)] [--pairs 10] [--runs 1000] [--program PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import boardlab
from boardlab.xcheck.pairs import alternate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runner import PROGRAM_RUNS, program_plan  # noqa: E402  (the program bench's plan, beside this file)

INSTALLED = Path(boardlab.__file__).parent
NATIVE = ("boardlab-kern", "stats/_splits*.so")  # what `make install` builds: copied into the base's tree


def base_tree(repo: Path, rev: str, tmp: Path) -> Path:
    """REV's sources under `tmp` (git archive: nothing written into the repository), with this install's
    native parts copied in."""
    tree = tmp / "base"
    tree.mkdir()
    got = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev, "src/boardlab"],
                         capture_output=True)  # fmt: skip
    if got.returncode != 0:
        why = got.stderr.decode(errors="replace").strip()
        print(f"--base {rev}: git archive failed: {why}", file=sys.stderr)
        raise SystemExit(2)
    archive = got.stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # our own repository's archive; the "data" filter where this Python has it (3.11.4 and later)
        tar.extractall(tree, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    for pattern in NATIVE:
        for built in INSTALLED.glob(pattern):
            shutil.copy2(built, tree / "src" / "boardlab" / built.relative_to(INSTALLED))
    # compiled once, as the install's are: with PYTHONDONTWRITEBYTECODE set, each run would compile every
    # module of the base again, 0.6 s of CPU a campaign counted against it
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "src")], check=True)
    return tree / "src"


def one_side(tmp: Path, plan: Path, pythonpath: str | None, n: list[int]) -> tuple[float, float, float]:
    """(the loop's s per run, CPU s per run of the command and its children, the 1-minute load)."""
    n[0] += 1
    db = tmp / f"side-{n[0]}.db"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from boardlab.cli import main; sys.exit(main())",
         "run", str(plan), "--db", str(db), "--json", "--quiet"],
        capture_output=True, text=True, env=env, cwd=tmp,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        side = pythonpath or "installed"
        raise SystemExit(f"boardlab run ({side}) exited {out.returncode}: {out.stderr[-500:]}")
    doc = json.loads(out.stdout)
    runs = doc["runs_done"]
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return doc["loop_s"] / runs, cpu / runs, os.getloadavg()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD", help="the revision compared against, B (default HEAD: what the "
                    "uncommitted change saves, once installed)")  # fmt: skip
    ap.add_argument("--pairs", type=int, default=10, help="alternated pairs (even: as many in each order)")
    ap.add_argument("--runs", type=int, default=1000, help="program runs per campaign")
    ap.add_argument("--program", default="/bin/true", help="the program each run starts")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        plan = tmp / "plan.toml"
        runs = f"repetitions = {args.runs}"
        plan.write_text(program_plan(args.program).replace(f"repetitions = {PROGRAM_RUNS}", runs))
        src = base_tree(repo, args.base, tmp)
        n = [0]
        done = alternate(args.pairs, lambda: one_side(tmp, plan, None, n),
                         lambda: one_side(tmp, plan, str(src), n), on_pair=said)  # fmt: skip
    loop = statistics.median(b[0] - a[0] for a, b, _ in done) * 1e3
    cpu = statistics.median(b[1] - a[1] for a, b, _ in done) * 1e3
    loads = [x for a, b, _ in done for x in (a[2], b[2])]
    print(f"{args.program}, {args.runs} runs a campaign, {args.pairs} pairs; B = {args.base}, A = installed")
    print(f"B - A per run, median of the pairs: loop {loop:+.3f} ms, CPU {cpu:+.3f} ms "
          f"(positive: the installed boardlab costs less); load {statistics.median(loads):.2f} "
          f"({min(loads):.2f} to {max(loads):.2f})")  # fmt: skip
    return 0


def said(i: int, a, b, order: str) -> None:
    print(f"pair {i + 1} ({order}): A loop {a[0] * 1e3:.3f} ms/run, CPU {a[1] * 1e3:.3f} ms/run | B loop "
          f"{b[0] * 1e3:.3f} ms/run, CPU {b[1] * 1e3:.3f} ms/run; load {a[2]:.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
