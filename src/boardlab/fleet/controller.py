"""The controller of a fleet run: one worker process per place, their events, the ingest of each board's
verified database into the shared store (here, one file at a time), and the summary."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from boardlab.fleet.names import UnsafeName, path_name

FLEET_SCHEMA = 1
STOP_GRACE_S = 150.0  # a worker stops its board's campaign (30 s + SSH) and releases its place


@dataclass
class BoardResult:
    place: str
    status: str  # done | failed | interrupted
    reason: str | None = None
    arch: str | None = None
    attempts: list[dict] = field(default_factory=list)
    power_cycles: int = 0
    runs: int | None = None  # runs in the board's database (attempts included)
    valid_runs: int | None = None
    unfinished: dict[str, list[int]] = field(default_factory=dict)  # cell key -> repetitions not done
    ingest: dict | None = None
    dir: str | None = None  # its directory's name in --keep and under --remote-dir (fleet/names.py)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FleetSpec:
    coordinator: str
    tags: dict[str, str]
    plan_text: str
    plan_source: str
    db: str
    bundles: dict[str, str]  # arch -> bundle path
    remote_root: str
    keyfile: str | None
    drivers: dict[str, list]  # place -> extra labgrid driver entries (a power driver)
    poll_s: float
    board_timeout_s: float
    boot_timeout_s: float
    reserve_timeout_s: float
    retries: int
    keep: str | None
    label: str | None = None  # `run --label` on every board: what changed since the last campaign
    run_args: tuple[str, ...] = ()  # more `boardlab run` arguments for every board (--commit, --branch)


def _worker_spec(spec: FleetSpec, place: str, workdir: Path) -> dict:
    return {
        "coordinator": spec.coordinator,
        "place": place,
        "tags": spec.tags,
        "plan_text": spec.plan_text,
        "plan_source": spec.plan_source,
        "bundles": spec.bundles,
        "remote_root": spec.remote_root,
        "keyfile": spec.keyfile,
        "drivers": spec.drivers.get(place, []),
        "poll_s": spec.poll_s,
        "board_timeout_s": spec.board_timeout_s,
        "boot_timeout_s": spec.boot_timeout_s,
        "reserve_timeout_s": spec.reserve_timeout_s,
        "retries": spec.retries,
        "label": spec.label,
        "run_args": list(spec.run_args),
        "workdir": str(workdir),
    }


def _ssh_scratch() -> Path:
    """The workers' TMPDIR: labgrid's SSHDriver makes a directory (lg-ssh-*) there for every try of a
    connection to a booting board and removes only the last one, so the controller gives the workers a
    directory of their own and removes it with whatever they left. labgrid puts its ssh control socket in
    it, and a Unix socket's path holds 107 bytes: TMPDIR/blXXXXXXXX/lg-ssh-XXXXXXXX/control-ADDRESS and the
    17 bytes ssh adds while it binds. A TMPDIR of at most 12 bytes (/tmp, /var/tmp, /dev/shm), else /tmp,
    leaves at least 42 for the board's address (an IPv6 literal has up to 39)."""
    parent = tempfile.gettempdir()
    return Path(tempfile.mkdtemp(prefix="bl", dir=parent if len(parent) <= 12 else "/tmp"))


def _stop_left_behind(scratch: Path) -> None:
    """labgrid starts each SSH ControlMaster in a session of its own (`ssh -f`, ControlPersist 300 s): a
    worker that deactivates its driver ends it, a SIGKILLed one (a second Ctrl-C, the OOM killer) leaves it
    up for five minutes. Its control socket's path is below `scratch`, which names no other process."""
    from boardlab.platform.process import pids_naming

    for pid in pids_naming("/", f"{scratch}/"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


def _release_held(address: str, places: list[str], say) -> None:
    """The places of workers killed while they held them (a second Ctrl-C): the coordinator keeps a place
    acquired until it is released, and the next run would wait for it."""
    if not places:
        return
    from boardlab.fleet.coordinator import Coordinator

    try:
        coord = Coordinator(address)
    except Exception as exc:  # noqa: BLE001 - said with the fix; nothing else is left to do
        say(None, f"{exc}: release {', '.join(places)} with labgrid-client -p PLACE release")
        return
    try:
        for place in places:
            try:
                coord.release(place)
                say(place, "released")
            except Exception as exc:  # noqa: BLE001 - one place's failure does not keep the others
                say(place, f"not released ({exc}): labgrid-client -p {place} release")
    finally:
        coord.close()


class _Running:
    def __init__(self, place: str, proc: subprocess.Popen, events, log: Path, name: str):
        self.place, self.proc, self.events, self.log, self.name = place, proc, events, log, name
        self.buf = b""
        self.result: dict | None = None
        self.holds = False  # the worker may hold its place (it said so before acquiring, until released)


def run_fleet(spec: FleetSpec, places: list[str], say, ingest) -> tuple[list[BoardResult], bool]:
    """Runs every place to its end; `say(place, message)` reports progress, `ingest(path)` stores a board's
    database and returns its record. Ctrl-C stops every worker (each stops its board's campaign and
    releases its place); then the results so far are returned with interrupted = True."""
    base = Path(spec.keep) if spec.keep else Path(tempfile.mkdtemp(prefix="boardlab-fleet-"))
    scratch = _ssh_scratch()
    running: list[_Running] = []
    results: dict[str, BoardResult] = {}
    sel = selectors.DefaultSelector()
    try:
        for place in places:
            try:
                name = path_name(place, "place")
            except UnsafeName as exc:  # a hostile or mistaken place: never touched; the others go on
                results[place] = BoardResult(place, "failed", str(exc))
                say(place, f"FAILED: {exc}")
                continue
            work = base / name
            work.mkdir(exist_ok=True)
            (work / "worker.json").write_text(json.dumps(_worker_spec(spec, place, work)))
            r, w = os.pipe()
            log = work / "worker.log"
            with open(log, "ab") as logf:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "boardlab.fleet.place", str(work / "worker.json"), str(w)],
                    pass_fds=(w,),
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=logf,
                    start_new_session=True,  # Ctrl-C reaches the controller only; it stops them in order
                    env={**os.environ, "TMPDIR": str(scratch)},
                )
            os.close(w)
            run = _Running(place, proc, os.fdopen(r, "rb", buffering=0), log, name)
            sel.register(run.events, selectors.EVENT_READ, run)
            running.append(run)
        try:
            _pump(sel, running, results, say, ingest, deadline=None)
        except KeyboardInterrupt:
            say(None, "interrupted: stopping every board's campaign and releasing the places")
            for run in running:
                if run.proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        run.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: kill them (finally below)
                _pump(sel, running, results, say, None, deadline=time.monotonic() + STOP_GRACE_S)
            interrupted = True
        else:
            interrupted = False
        for p in places:
            results.setdefault(p, BoardResult(p, "interrupted", "interrupted (Ctrl-C)"))
        return [results[p] for p in places], interrupted
    finally:
        for run in running:
            if run.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(run.proc.pid, signal.SIGKILL)  # anything it left in its group (an ssh)
            run.events.close()
        sel.close()
        _stop_left_behind(scratch)
        _release_held(spec.coordinator, [run.place for run in running if run.holds], say)
        shutil.rmtree(scratch, ignore_errors=True)
        if not spec.keep:
            shutil.rmtree(base, ignore_errors=True)


def _pump(sel, running, results, say, ingest, deadline) -> None:
    """Reads events until every worker has closed its event pipe (it exits right after)."""
    while sel.get_map():
        if deadline is not None and time.monotonic() > deadline:
            return
        for key, _ in sel.select(timeout=1.0):
            run = key.data
            chunk = run.events.read(65536)
            if chunk:
                run.buf += chunk
                while b"\n" in run.buf:
                    line, run.buf = run.buf.split(b"\n", 1)
                    _event(json.loads(line), run, results, say, ingest)
                continue
            sel.unregister(run.events)
            run.proc.wait()
            if run.place not in results:
                tail = run.log.read_text(errors="replace").strip().splitlines()[-3:]
                results[run.place] = BoardResult(
                    run.place,
                    "failed",
                    f"worker exited {run.proc.returncode}: {' | '.join(tail)[:300]}",
                    dir=run.name,
                )
                say(run.place, f"FAILED: {results[run.place].reason}")


def _event(doc: dict, run: _Running, results, say, ingest) -> None:
    if doc["kind"] == "held":
        run.holds = bool(doc["held"])
        return
    if doc["kind"] == "progress":
        say(doc["place"], doc["message"])
        return
    v = doc.get("verified") or {}
    res = BoardResult(
        place=doc["place"],
        status=doc["status"],
        reason=doc.get("reason"),
        arch=doc.get("arch"),
        attempts=doc.get("attempts", []),
        power_cycles=doc.get("power_cycles", 0),
        runs=v.get("runs"),
        valid_runs=v.get("valid_runs"),
        unfinished=v.get("unfinished") or {},
        dir=run.name,
    )
    if doc.get("db") and ingest is not None:
        try:
            res.ingest = ingest(Path(doc["db"]))
            say(run.place, f"ingested {res.ingest.get('runs_added')} runs ({res.ingest.get('runs_skipped')} "
                "already stored)")  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - one board's ingest failing does not stop the others
            res.status = "failed"
            res.reason = f"ingest failed: {exc}"
    elif doc.get("db"):
        res.reason = (res.reason or "") + " (interrupted before its ingest)"
    results[res.place] = res
    word = {"done": "done", "failed": "FAILED", "interrupted": "interrupted"}.get(res.status, res.status)
    say(run.place, f"{word}" + (f": {res.reason}" if res.reason else ""))


def summary(spec: FleetSpec, places: dict[str, dict], results: list[BoardResult]) -> dict:
    return {
        "schema": FLEET_SCHEMA,
        "coordinator": spec.coordinator,
        "tags": spec.tags,
        "plan": spec.plan_source,
        "db": spec.db,
        "boards": [{**r.to_dict(), "tags": places.get(r.place, {})} for r in results],
        "done": sum(r.status == "done" for r in results),
        "failed": sum(r.status != "done" for r in results),
    }
