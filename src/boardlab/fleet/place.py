"""One place's process (`python -m boardlab.fleet.place SPEC.json EVENT_FD`): reserve and acquire the
place, put the bundle for the board's architecture, run the campaign detached, wait, fetch, verify, release.

One process per place because labgrid is not thread-safe; the controller starts it in its own session and
stops it with SIGTERM, on which it stops the board's campaign (its restore journal runs) and releases the
place. Events go to the controller as JSON lines on EVENT_FD; labgrid's own chatter goes to the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from boardlab.bundle import MACHINE_ARCH
from boardlab.fleet.board import BOARD_SH, RESULT_FILES, SCRIPT_NAME, parse_poll
from boardlab.fleet.names import path_name, remote_place_dir


class Stop(BaseException):
    """Ctrl-C or SIGTERM from the controller, or the controller went away."""


class BoardDead(Exception):
    """SSH to the board fails (and a reconnect failed too)."""


class AttemptFailed(Exception):
    def __init__(self, message: str, *, final: bool = False):
        super().__init__(message)
        self.final = final  # retrying cannot help (no bundle for the board, the board refused the plan)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class Worker:
    def __init__(self, spec: dict, emit):
        self.spec = spec
        self.place = spec["place"]
        self.emit = emit
        self.dir = remote_place_dir(spec["remote_root"], self.place)
        self.work = Path(spec["workdir"])
        self.parent = os.getppid()
        self.ssh: Any = None  # labgrid's SSHDriver, once connected (labgrid has no types)
        self.target: Any = None
        self.started = False  # a campaign of ours may be running on the board
        self.attempts: list[dict] = []
        self.power_cycles = 0
        self.arch: str | None = None
        self.stopping = False  # a signal asked this place to stop (on_signal)

    def on_signal(self, signum, frame) -> None:
        """SIGTERM, SIGINT, SIGHUP: the first one stops; cleanup is not interrupted by a second."""
        if not self.stopping:
            self.stopping = True
            raise Stop

    def say(self, message: str) -> None:
        self.emit({"kind": "progress", "place": self.place, "message": message})

    def check_stop(self) -> None:
        if self.stopping or os.getppid() != self.parent:
            raise Stop

    # ---- ssh ----

    def run(self, verb: str, arg: str = "", timeout_s: float = 60.0) -> tuple[list[str], list[str], int]:
        """One verb of the board script: (stdout lines, stderr lines, exit code)."""
        script = shlex.quote(f"{self.dir}/{SCRIPT_NAME}")
        return self._ssh(f"sh {script} {verb}" + (f" {shlex.quote(arg)}" if arg else ""), timeout_s)

    def raw(self, cmd: str, timeout_s: float = 60.0) -> tuple[list[str], int]:
        out, err, rc = self._ssh(cmd, timeout_s)
        return out + err, rc

    def _ssh(self, cmd: str, timeout_s: float) -> tuple[list[str], list[str], int]:
        """A command over the place's SSHDriver; an SSH failure (not the command's) is a dead board."""
        from labgrid.driver.exception import ExecutionError

        try:
            out, err, rc = self.ssh.run(cmd, timeout=timeout_s)
        except (ExecutionError, subprocess.TimeoutExpired) as exc:
            raise BoardDead(f"ssh failed: {str(exc).splitlines()[0][:200]}") from None
        if rc == 255:
            raise BoardDead(f"ssh failed: {' '.join(err)[:200]}")
        return out, err, rc

    def connect(self, timeout_s: float) -> None:
        """(Re)opens the SSH ControlMaster, retrying until `timeout_s` (a board that is booting)."""
        from labgrid.driver import SSHDriver

        if self.ssh is not None:
            with contextlib.suppress(Exception):
                self.target.deactivate(self.ssh)
        self.ssh = self.target.get_driver(SSHDriver, activate=False)
        self.ssh.connection_timeout = float(timeout_s)
        try:
            self.target.activate(self.ssh)
        except Exception as exc:  # noqa: BLE001 - labgrid raises a bare Exception on its timeout
            raise BoardDead(f"no SSH connection within {timeout_s:g} s ({str(exc)[:160]})") from None

    def power_cycle(self) -> bool:
        from labgrid.exceptions import NoDriverFoundError
        from labgrid.protocol import PowerProtocol

        try:
            power = self.target.get_driver(PowerProtocol)
        except NoDriverFoundError:
            return False
        self.say("power-cycling through its labgrid power driver")
        try:
            power.cycle()
        except Exception as exc:  # noqa: BLE001 - the next attempt then finds the board as it is
            self.say(f"power cycle failed: {str(exc)[:200]}")
            return False
        self.power_cycles += 1
        return True

    # ---- one attempt ----

    def prepare(self) -> None:
        out, rc = self.raw("uname -m")
        machine = out[0].strip() if out else "?"
        arch = MACHINE_ARCH.get(machine)
        bundles = self.spec["bundles"]
        if arch not in bundles:
            raise AttemptFailed(
                f"no bundle for this board's architecture ({machine}); give one made by "
                f"`boardlab bundle --arch {arch or '...'}` with --bundle",
                final=True,
            )
        self.arch = arch
        self.raw(f"mkdir -p {shlex.quote(self.dir)}")
        local_sh = self.work / SCRIPT_NAME
        local_sh.write_text(BOARD_SH)
        plan = self.work / "plan.toml"
        plan.write_text(self.spec["plan_text"])
        self.ssh.put(str(local_sh), f"{self.dir}/{SCRIPT_NAME}")
        self.ssh.put(str(plan), f"{self.dir}/plan.toml")
        label = self.work / "label.txt"  # empty: no --label (and none left from an earlier fleet run)
        label.write_text(self.spec.get("label") or "")
        self.ssh.put(str(label), f"{self.dir}/label.txt")
        args = self.work / "run-args.txt"  # one argument a line (--commit=SHA ...), as label.txt never split
        args.write_text("".join(f"{a}\n" for a in self.spec.get("run_args") or ()))
        self.ssh.put(str(args), f"{self.dir}/run-args.txt")
        bundle = Path(bundles[arch])
        sha = _sha256(bundle)
        _, _, rc = self.run("installed", sha)
        if rc != 0:
            self.say(f"installing the {arch} bundle ({machine})")
            self.ssh.put(str(bundle), f"{self.dir}/bundle.tar.gz")
            _, err, rc = self.run("install", sha, timeout_s=600)
            if rc != 0:
                raise AttemptFailed(f"bundle install failed: {' '.join(err)[-300:]}")

    def wait(self, deadline: float) -> str:
        """Waits for the campaign with `fleet.sh poll` (sh + tail on the board) every poll_s; returns the
        campaign's exit code. A failing poll gets one reconnect before the board is called dead."""
        last = ""
        while True:
            self.check_stop()
            if time.monotonic() > deadline:
                raise TimeoutError
            try:
                out, _, _ = self.run("poll", timeout_s=30)
            except BoardDead:
                self.connect(min(15.0, self.spec["boot_timeout_s"]))  # raises BoardDead when it fails again
                out, _, _ = self.run("poll", timeout_s=30)
            state, detail = parse_poll(out)
            if state == "done":
                return detail
            if state == "gone":
                raise AttemptFailed(
                    "the campaign stopped without finishing (the board rebooted or killed it)"
                )
            if state == "running" and detail and detail != last:
                last = detail
                self.say(f"runs {detail}")
            end = time.monotonic() + self.spec["poll_s"]
            while time.monotonic() < end:
                self.check_stop()
                time.sleep(min(0.5, self.spec["poll_s"]))

    def fetch(self) -> Path | None:
        """The board's results database (and its -wal file, if a killed campaign left one), checkpointed.
        Only the files the protocol names are copied: a board that lists any other name is not trusted."""
        from boardlab.fleet.verify import checkpoint

        out, _, _ = self.run("files")
        names = result_files(out)
        if "results.db" not in names:
            return None
        local = self.work / "fetched"
        shutil.rmtree(local, ignore_errors=True)
        local.mkdir()
        for name in names:
            target = local / path_name(name, "result file")
            self.ssh.get(f"{self.dir}/{name}", str(target))
            if target.is_symlink() or not target.is_file():  # scp -r copies a directory whole
                raise AttemptFailed(f"the board's {name} is not a regular file", final=True)
        db = local / "results.db"
        checkpoint(db)
        return db

    def stop_remote(self) -> None:
        if self.started and self.ssh is not None:
            with contextlib.suppress(Exception):
                self.run("stop", "30", timeout_s=90)
                self.say("stopped its campaign (conditions reverted by its restore journal)")

    def attempt(self, n: int) -> Path:
        self.prepare()
        self.started = True  # from here a stop must reach the board (`stop` does nothing if none runs)
        out, _, rc = self.run("start")
        if rc != 0 or not out or out[0] not in ("started", "running"):
            raise AttemptFailed(f"could not start the campaign: {' '.join(out)[:200]}")
        self.say(f"campaign {'resumed' if n > 1 else 'started'} detached (attempt {n})")
        code = self.wait(time.monotonic() + self.spec["board_timeout_s"])
        self.started = False
        db = self.fetch()
        if code == "2":  # boardlab run refused its input on this board: the same again would be refused too
            log, _ = self.raw(f"tail -n 2 {shlex.quote(self.dir + '/run.log')}")
            raise AttemptFailed(f"the board refused the plan (exit 2): {' '.join(log)[:300]}", final=True)
        if db is None:
            log, _ = self.raw(f"tail -n 3 {shlex.quote(self.dir + '/run.log')}")
            raise AttemptFailed(f"campaign exited {code} without a results database: {' '.join(log)[:300]}")
        return db

    # ---- the place ----

    def main(self) -> dict:
        from boardlab.fleet.coordinator import Coordinator

        result = {"kind": "result", "place": self.place, "status": "failed", "reason": None}
        coord = None
        token = None
        acquired = False
        try:
            coord = Coordinator(self.spec["coordinator"])
            self.say("reserving")
            token = coord.reserve(
                self.place, self.spec["tags"], self.spec["reserve_timeout_s"], self.check_stop
            )
            self.emit({"kind": "held", "place": self.place, "held": True})  # before: a kill may come between
            coord.acquire(self.place)
            acquired = True
            self.say("acquired")
            self.target = self._target(coord)
            result.update(self._attempts())
        except Stop:
            self.stop_remote()
            result.update(status="interrupted", reason="interrupted (Ctrl-C)")
        except Exception as exc:  # noqa: BLE001 - reported per board, the other boards go on
            result["reason"] = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
        finally:
            if self.ssh is not None:
                with contextlib.suppress(Exception):
                    self.target.deactivate(self.ssh)
            if coord is not None:
                with contextlib.suppress(Exception):
                    if acquired:
                        coord.release(self.place)
                        self.emit({"kind": "held", "place": self.place, "held": False})
                        self.say("released")
                with contextlib.suppress(Exception):
                    if token:
                        coord.cancel(token)
                coord.close()
        result.update(attempts=self.attempts, power_cycles=self.power_cycles, arch=self.arch)
        return result

    def _target(self, coord):
        """One labgrid Environment for this place: RemotePlace + SSHDriver (+ the drivers the user's labgrid
        environment gives this place, e.g. its power driver). Its RemotePlace uses this process's session:
        the coordinator refuses a second stream from the same connection."""
        import yaml
        from labgrid import Environment
        from labgrid.resource.remote import RemotePlaceManager

        manager = RemotePlaceManager.get()
        manager.session, manager.loop = coord.session, coord.loop

        ssh = {"connection_timeout": float(self.spec["boot_timeout_s"])}
        if self.spec.get("keyfile"):
            ssh["keyfile"] = self.spec["keyfile"]
        drivers = [{"SSHDriver": ssh}, *self.spec.get("drivers", [])]
        config = {
            "targets": {
                self.place: {"resources": [{"RemotePlace": {"name": self.place}}], "drivers": drivers}
            },
            "options": {"coordinator_address": self.spec["coordinator"]},
        }
        path = self.work / "labgrid-env.yaml"
        path.write_text(yaml.safe_dump(config))
        return Environment(config_file=str(path)).get_target(self.place)

    def _attempts(self) -> dict:
        from boardlab.campaign.plan import parse_plan, plan_catalog
        from boardlab.fleet.verify import expected_cells, verify
        from boardlab.workloads import all_workloads

        catalog = {w.name: w for w in all_workloads()}
        plan = parse_plan(self.spec["plan_text"], self.spec["plan_source"], catalog)
        catalog = plan_catalog(plan, catalog)
        expected = expected_cells(plan, catalog)
        budget = 1 + self.spec["retries"]
        db = None
        verified = None
        for n in range(1, budget + 1):
            self.check_stop()
            outcome: dict[str, Any] = {"attempt": n}
            try:
                if self.ssh is None or n > 1:
                    self.connect(self.spec["boot_timeout_s"] if n > 1 else 30.0)
                db = self.attempt(n)
                verified = verify(db, plan, expected)
                if verified.ok:
                    outcome.update(outcome="done")
                    self.attempts.append(outcome)
                    break
                raise AttemptFailed(f"verification: {verified.problem}")
            except TimeoutError:
                reason = f"timed out after {self.spec['board_timeout_s']:g} s (--board-timeout)"
                self.stop_remote()
                cycled = self.power_cycle()
                outcome.update(outcome="timeout", reason=reason, power_cycled=cycled)
            except BoardDead as exc:
                self.say(f"dead: {exc}")
                cycled = self.power_cycle()
                self.started = False
                outcome.update(outcome="dead", reason=str(exc), power_cycled=cycled)
            except Stop:
                self.attempts.append({**outcome, "outcome": "interrupted"})
                raise
            except AttemptFailed as exc:
                outcome.update(outcome="failed", reason=str(exc))
                if exc.final:
                    self.attempts.append(outcome)
                    return {"status": "failed", "reason": str(exc)}
            self.attempts.append(outcome)
            self.say(f"attempt {n} {outcome['outcome']}: {outcome.get('reason')}")
        else:
            # out of retries: whatever the board committed is kept (ingested), the rest marked unfinished
            with contextlib.suppress(Exception):
                self.connect(min(30.0, self.spec["boot_timeout_s"]))
                self.started = True  # a campaign may still run there: stopped before its file is copied
                self.stop_remote()
                db = self.fetch()
            verified = verify(db, plan, expected) if db is not None else None
            last = self.attempts[-1].get("reason") if self.attempts else None
            return {
                "status": "failed",
                "reason": f"{budget} attempts failed; last: {last}",
                "db": str(db) if db else None,
                "verified": _verified_dict(verified),
            }
        return {"status": "done", "reason": None, "db": str(db), "verified": _verified_dict(verified)}


def result_files(listed: list[str]) -> list[str]:
    """The protocol's names among what `fleet.sh files` printed, as our own strings; any other line is a
    board that lists what it should not (`../../etc/x`): the attempt fails naming it, nothing is copied."""
    unknown = [line for line in listed if line not in RESULT_FILES]
    if unknown:
        raise AttemptFailed(
            f"the board listed a file the fleet protocol does not name: {unknown[0][:100]!r} (only "
            f"{', '.join(RESULT_FILES)} are fetched); nothing was copied: check what runs on the board",
            final=True,
        )
    return [name for name in RESULT_FILES if name in listed]


def _verified_dict(v) -> dict | None:
    if v is None:
        return None
    return {
        "ok": v.ok,
        "problem": v.problem,
        "campaign_status": v.campaign_status,
        "runs": v.runs,
        "valid_runs": v.valid_runs,
        "cells": v.cells,
        "unfinished": v.unfinished,
    }


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    events = os.fdopen(int(argv[1]), "w", buffering=1)

    def emit(doc: dict) -> None:
        with contextlib.suppress(OSError):
            events.write(json.dumps(doc) + "\n")

    worker = Worker(spec, emit)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, worker.on_signal)
    emit(worker.main())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
