"""hyperfine's `--export-json` brought into a store (`boardlab ingest results.json --db ...`), so that a
user's old results come along: each file becomes one campaign of the plan `boardlab bench` writes for the
same commands (campaign.benchplan: same plan name, same cells), so `history` sets it beside later bench
campaigns of those commands. Each of a command's `times` is a run (its value in seconds, valid when its exit
code was 0); hyperfine ran each command's runs one after the other, unpinned, so the plan says
`order = "sequential"` and `cpu = "none"`, and its analysis says what that costs. The campaign is attributed
to the board that ingests it (hyperfine's file names no machine) and dated by the file's modification time.

The campaign is written into a results file of its own (`write_campaign_file`), which `ingest` then copies
as it copies a board's; its identity is the file's content hash, so importing the same file twice adds it
once."""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from boardlab.errors import InputError

if TYPE_CHECKING:
    from boardlab.model.run import RunResult

MAX_BYTES = 256 * 1024 * 1024
MAX_TIMES = 1_000_000


@dataclass(frozen=True)
class Result:
    command: str
    times_s: tuple[float, ...]
    exit_codes: tuple[int | None, ...]


def looks_like_hyperfine(path: Path) -> bool:
    """A JSON object (not a SQLite file): a regular file whose first non-blank byte is '{'. A FIFO or a
    device is neither, and is not waited on: ingest names it."""
    from boardlab.userfile import head_of_regular_file

    head = head_of_regular_file(path, 64)
    return head is not None and head.lstrip().startswith(b"{")


def read_results(path: Path) -> list[Result]:
    """The `results` of a hyperfine export; InputError naming the file and the key where it is not one."""
    return _results(_read_export(path), path)


def _read_export(path: Path) -> bytes:
    from boardlab.userfile import read_user_file

    return read_user_file(
        path, what="hyperfine export", give="a hyperfine --export-json file", max_bytes=MAX_BYTES
    )


def _results(data: bytes, path: Path) -> list[Result]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a hyperfine --export-json file ({exc})") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not results:
        raise InputError(
            f"{path}: no `results` list: not a hyperfine --export-json file (nor a results database)"
        )
    out = []
    for i, r in enumerate(results):
        where = f"{path}: results[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("command"), str) or not r["command"]:
            raise InputError(f"{where}: no command")
        times = r.get("times")
        if (
            not isinstance(times, list)
            or not 1 <= len(times) <= MAX_TIMES
            or not all(
                isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and 0 <= t < 1e9
                for t in times
            )
        ):
            raise InputError(f"{where}.times: expected the runs' times in seconds (hyperfine 1.12 and later)")
        codes = r.get("exit_codes") or [0] * len(times)
        if not isinstance(codes, list) or len(codes) != len(times):
            raise InputError(f"{where}.exit_codes: expected one per time")
        out.append(Result(r["command"], tuple(float(t) for t in times), tuple(_exit_code(c) for c in codes)))
    if len({r.command for r in out}) != len(out):
        raise InputError(f"{path}: the same command twice in `results`")
    return out


def _exit_code(code) -> int | None:
    """A process's exit code, else None (not known): an integer beyond 32 bits is none, and the store's
    64-bit column could not hold every such one (the driver's OverflowError was an internal error)."""
    if isinstance(code, int) and not isinstance(code, bool) and -(2**31) <= code < 2**31:
        return code
    return None


def write_campaign_file(source: Path, dest: Path) -> int:
    """The campaign of the hyperfine export `source` in a new results file `dest`; its run count."""
    from boardlab import __version__
    from boardlab.campaign.benchplan import BenchPlan, plan_text
    from boardlab.campaign.facts import store_cell_facts, store_facts
    from boardlab.campaign.plan import PlanError, parse_plan, plan_catalog
    from boardlab.campaign.runner import board_fingerprint, plan_hash
    from boardlab.campaign.schedule import build_cells
    from boardlab.platform.inventory import inventory
    from boardlab.store import Store
    from boardlab.workloads import all_workloads

    data = _read_export(source)  # once: the campaign's identity is the hash of what was read
    results = _results(data, source)
    started = os.path.getmtime(source)
    text = plan_text(BenchPlan(commands=tuple(r.command for r in results),
                               repetitions=max(len(r.times_s) for r in results),
                               cpu="none", order="sequential", allocation="equal",
                               comment=f"imported from hyperfine's export {source.name}: "
                                       "not run by boardlab"))  # fmt: skip
    catalog = {w.name: w for w in all_workloads()}
    try:
        plan = parse_plan(text, f"hyperfine:{source.name}", catalog)
    except PlanError as exc:
        raise InputError(_in_export(exc, source, results)) from None
    catalog = plan_catalog(plan, catalog)
    cells = {c.params_dict["command"]: c for c in build_cells(plan, catalog)}
    info = inventory("/").to_dict()
    uid = hashlib.sha256(data + board_fingerprint(info).encode()).hexdigest()[:32]
    with Store.open(dest) as store:
        board_id = store.upsert_board(
            board_fingerprint(info), info.get("model") or info.get("hostname") or "?", info
        )
        cid = store.create_campaign(
            name=plan.name, plan_hash=plan_hash(plan), plan_source=f"hyperfine:{source.name}", plan_text=text,
            board_id=board_id, boardlab_version=__version__, kern_version=None, root="/",
            environment={"imported": {"from": "hyperfine --export-json", "file": str(source)}}, uid=uid,
        )  # fmt: skip
        store_cell_facts(store, cid, plan, list(cells.values()))
        store_facts(store, cid, catalog, "/")
        units = {c.key: ("s", False) for c in cells.values()}
        ids = store.ensure_cells(cid, list(cells.values()), {c.name: c for c in plan.conditions}, units)
        made: list[
            tuple[int, RunResult]
        ] = []  # (cell id, run), stored in one transaction rather than a commit per run
        for r in results:
            cell = cells[r.command]
            for rep, (t, code) in enumerate(zip(r.times_s, r.exit_codes, strict=True), start=1):
                seq = len(made) + 1
                made.append((ids[cell.key], _run(cell.key, rep, seq, started + seq * 1e-3, t, code)))
        store.record_runs(cid, made)
        store.set_campaign_context(cid, label=None, inventory=info, runs_planned=len(made))
        store.set_campaign_status(cid, "complete", notes={"imported": "hyperfine"})
    return len(made)


def _in_export(exc, source: Path, results: list[Result]) -> str:
    """A refusal of the plan the import generates, in the export's words: the plan's one workload takes every
    command as a parameter, and the refusal names the command (its repr), so the result it came from is
    named instead of a plan line the user never saw."""
    if exc.path != ("workloads", 0, "command"):
        return str(exc)
    i = next((i for i, r in enumerate(results) if repr(r.command) in exc.detail), None)
    if i is None:
        return str(exc)
    return f"{source}: results[{i}].command: {exc.detail} (boardlab keeps it as a program's words)"


def _run(key: str, rep: int, seq: int, started: float, t: float, code: int | None):
    from boardlab.model.run import GateResult, MetricResult, RunResult

    ok = code == 0
    metric = MetricResult("wall_s", "s", False, (t,), t, t, t, t)
    return RunResult(
        cell_key=key, repetition=rep, attempt=1, seq=seq, started_unix_s=started, wall_ns=round(t * 1e9),
        cpu=None, exit_code=code if code is not None else -1, ok=ok, valid=ok,
        invalid_reason=None if ok else "failed", value=t if ok else None, metrics=(metric,) if ok else (),
        iterations_ns=(round(t * 1e9),), warmup_iterations=None, warmup_capped=None, rusage={},
        gate=GateResult(0.0, False, "imported from hyperfine: no gate"),
        condition_state={"condition": "baseline"}, monitor={}, error=None if ok else f"exited {code}",
        worker_json=None,
    )  # fmt: skip
