"""The restore journal: every system setting boardlab changes is written here first, with its old value.

Every exit path undoes what it changed; a run that was killed leaves its entries behind, and the next
start (or `boardlab restore`) undoes them. Processes boardlab started (stressors, loads) are journaled by
PID and start time, so a restore stops exactly those and never a recycled PID. A combined condition's parts
are journaled inside one entry of kind "unit": recovery undoes the unit's entries newest first, tries every
one of them whatever happens to the others, and drops the unit once it is empty.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from boardlab.errors import BoardlabError, InputError, MeasurementError, OSProblem, os_error
from boardlab.platform.locks import lock_unsupported, same_file
from boardlab.platform.sysroot import SysRoot

JOURNAL_SCHEMA = 1


def state_dir() -> Path:
    """BOARDLAB_STATE_DIR, else $XDG_STATE_HOME/boardlab, else ~/.local/state/boardlab."""
    env = os.environ.get("BOARDLAB_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "boardlab"


def _pid_start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat):
    PID + this = identity."""
    from boardlab.platform.sampling import pid_start_ticks

    return pid_start_ticks(pid)


def _pid_running(pid: object, start_ticks: object) -> bool:
    """Whether the boardlab a journal or lock file names still runs (a zombie, killed but not yet reaped by
    its parent, does not: it holds no lock and changes nothing)."""
    from boardlab.platform.sampling import pid_running

    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    return pid_running(pid, start_ticks if isinstance(start_ticks, int) else None)


@dataclass(frozen=True)
class Restored:
    what: str
    detail: str
    failed: str | None = None  # why it could not be undone, and the fix; its entry stays in the journal


def _root_key(root: SysRoot) -> str:
    """One journal and one lock per tree boardlab changes (/ or a board tree given with --root)."""
    return hashlib.sha256(os.path.realpath(root.root).encode()).hexdigest()[:12]


# what `_add` gives every entry, and what each kind's undo reads
_COMMON_KEYS: dict[str, type] = {"id": str, "kind": str, "owner_pid": int, "what": str}
_ENTRY_KEYS: dict[str, dict[str, type]] = {
    "setting": {"rel": str, "old": str, "new": str},
    "unbound": {"bus": str, "driver": str, "device": str},
    "process": {"pid": int, "argv": list},
    "directory": {"path": str},
    "netns": {"name": str},
    "unit": {"entries": list},
}


def _shape_error(entries, where: str = "entries") -> str | None:
    """The first entry's key that is missing or of the wrong type (`entries[2].pid: expected int`), or None
    when the undo and the recovery can read every entry."""
    if not isinstance(entries, list):
        return f"{where}: expected a list"
    for i, e in enumerate(entries):
        at = f"{where}[{i}]"
        if not isinstance(e, dict):
            return f"{at}: expected an object"
        if e.get("kind") not in _ENTRY_KEYS:
            return f"{at}.kind: expected one of {', '.join(_ENTRY_KEYS)}"
        for key, kind in {**_COMMON_KEYS, **_ENTRY_KEYS[e["kind"]]}.items():
            if not isinstance(e.get(key), kind) or isinstance(e.get(key), bool):
                return f"{at}.{key}: expected {kind.__name__}"
        if e["kind"] == "unit" and (inner := _shape_error(e["entries"], f"{at}.entries")):
            return inner
    return None


class RestoreJournal:
    def __init__(self, root: SysRoot, path: Path | None = None):
        self.root = root
        self.path = path or state_dir() / f"restore-{_root_key(root)}.json"
        self._next = 0
        self._unit: str | None = None  # the open unit new entries go into (a combined condition's)

    # ---- the file: rewritten atomically at every change, so a crash leaves the old or the new list ----

    def _load(self) -> dict:
        try:
            doc = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {"schema": JOURNAL_SCHEMA, "root": str(self.root.root), "entries": []}
        except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8 text
            raise InputError(
                f"{self.path}: unreadable restore journal ({exc}); inspect it, then delete it"
            ) from None
        if not isinstance(doc, dict) or doc.get("schema") != JOURNAL_SCHEMA:
            schema = doc.get("schema") if isinstance(doc, dict) else f"none (a JSON {type(doc).__name__})"
            raise InputError(f"{self.path}: restore journal schema {schema}, expected {JOURNAL_SCHEMA}")
        problem = _shape_error(doc.get("entries"))
        if problem:  # read as it is, its undo and recovery failed on it: an internal error in every run
            raise InputError(
                f"{self.path}: damaged restore journal ({problem}); inspect it (what it lists may still be "
                "changed on the board), then delete it"
            )
        return doc

    def _save(self, doc: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unwritable(exc) from None
        if not doc["entries"]:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".journal.", suffix=".tmp")
        except OSError as exc:
            raise self._unwritable(exc) from None
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException as exc:
            with contextlib.suppress(OSError):  # a full disk must not leave a half-written journal behind
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise self._unwritable(exc) from None
            raise

    def _unwritable(self, exc: OSError) -> OSProblem:
        """Nothing is changed on the board without its journal entry, so a journal that cannot be written
        stops the change; the message says where and how to fix it."""
        problem = os_error(exc, self.path.parent, "restore journal directory (BOARDLAB_STATE_DIR)")
        return OSProblem(f"{problem}; nothing was changed without its journal entry", problem.exit_code)

    def pending(self) -> list[dict]:
        return self._load()["entries"]

    def _add(self, entry: dict, *, in_unit: bool = True) -> str:
        doc = self._load()
        self._next += 1
        entry = {
            **entry,
            "id": f"{os.getpid()}-{time.monotonic_ns()}-{self._next}",
            "owner_pid": os.getpid(),
            "owner_start_ticks": _pid_start_ticks(os.getpid()),
            "unix_s": time.time(),
        }
        unit = _find(doc["entries"], self._unit) if self._unit and in_unit else None
        (unit["entries"] if unit is not None else doc["entries"]).append(entry)
        self._save(doc)
        return entry["id"]

    def _drop(self, entry_id: str) -> None:
        """Removes an entry, at the top or inside a unit; a closed unit left empty goes with it."""
        doc = self._load()
        kept = []
        for e in doc["entries"]:
            if e["id"] == entry_id:
                continue
            if e.get("kind") == "unit":
                e["entries"] = [c for c in e["entries"] if c["id"] != entry_id]
                if not e["entries"] and not e.get("open"):
                    continue
            kept.append(e)
        doc["entries"] = kept
        self._save(doc)

    # ---- a combined condition: one restore unit ----

    @contextlib.contextmanager
    def unit(self, what: str):
        """Every entry added inside goes into one journal entry (a combined condition's parts, applied
        in order): undone part by part as each part exits, or, after a crash, as one unit by recovery.
        A unit that still holds entries when it closes (an undo that failed, a scratch directory that
        outlives the run) stays until they are undone."""
        if self._unit is not None:  # a part cannot itself be combined (the plan refuses it)
            raise ValueError("restore units do not nest")
        token = self._add({"kind": "unit", "what": what, "entries": [], "open": True})
        self._unit = token
        try:
            yield token
        finally:
            self._unit = None
            doc = self._load()
            unit = _find(doc["entries"], token)
            if unit is not None:
                unit["open"] = False
                if not unit["entries"]:
                    doc["entries"].remove(unit)
                self._save(doc)

    # ---- settings ----

    def set(self, rel: str, value: str, *, what: str) -> str:
        """Journals the current value of `rel`, then writes `value`. Returns a token for `undo`."""
        old = self.root.read_text(rel)
        if old is None:
            raise InputError(f"{self.root.show(rel)}: cannot change {what}: the file does not exist")
        token = self._add({"kind": "setting", "rel": rel, "old": old.strip(), "new": value, "what": what})
        try:
            self.root.write_text(rel, value)
        except Exception:  # the write failed: nothing was changed
            self._drop(token)
            raise
        # A stop (Ctrl-C, SIGTERM) can land just after the write, before the caller holds the token: the
        # entry stays, and `undo_own` (the runner's last step) or the next start writes the old value back.
        return token

    # ---- drivers ----

    def unbound(self, bus: str, driver: str, device: str, *, what: str) -> str:
        """Journals that `device` is bound to `driver`, then unbinds it; undo (or recovery) binds it again."""
        from boardlab.platform import drivers

        token = self._add({"kind": "unbound", "bus": bus, "driver": driver, "device": device, "what": what})
        try:
            drivers.unbind(self.root, bus, driver, device)
        except BaseException as exc:
            # a failed unbind changed nothing; a stop keeps the entry (as in `set`) if the unbind landed
            if isinstance(exc, Exception) or device in drivers.bound_devices(self.root, bus, driver):
                self._drop(token)
            raise
        return token

    # ---- processes ----

    def started(self, pid: int, argv: list[str], *, what: str) -> str:
        return self._add(
            {
                "kind": "process",
                "pid": pid,
                "start_ticks": _pid_start_ticks(pid),
                "argv": argv[:8],
                "what": what,
            }
        )

    # ---- scratch directories ----

    def made_dir(self, path: Path, *, what: str, in_unit: bool = True) -> str:
        """A private scratch directory (stress-ng --temp-path, load files): removed by undo or recovery.
        `in_unit` False: it outlives an open unit (the campaign's, made by whichever part needs it first)."""
        return self._add({"kind": "directory", "path": str(path), "what": what}, in_unit=in_unit)

    # ---- network namespaces ----

    def made_netns(self, name: str, *, what: str) -> str:
        """A network namespace boardlab created (its veth links go with it): deleted by undo or recovery."""
        return self._add({"kind": "netns", "name": name, "what": what})

    def undo(self, token: str) -> Restored | None:
        entry = _find(self._load()["entries"], token)
        if entry is None:
            return None
        if entry["kind"] == "unit":  # its parts undo their own entries; a unit is undone whole by recovery
            raise ValueError("undo a unit's entries, not the unit")
        result = self._undo_entry(entry)
        self._drop(token)
        return result

    def forget(self, token: str) -> None:
        """A process that ended by itself (and was reaped) needs no undo."""
        self._drop(token)

    def _undo_entry(self, entry: dict) -> Restored:
        if entry["kind"] == "netns":
            name = entry["name"]
            if not name.startswith("boardlab-"):  # only ever a namespace boardlab made and named
                return Restored(entry["what"], f"left network namespace {name} alone: not boardlab's")
            import subprocess

            subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
            return Restored(entry["what"], f"deleted network namespace {name}")
        if entry["kind"] == "directory":
            path = Path(entry["path"])
            if not path.name.startswith("boardlab-"):  # only ever a directory boardlab made and named
                return Restored(entry["what"], f"left {path} alone: not a boardlab scratch directory")
            shutil.rmtree(path, ignore_errors=True)
            return Restored(entry["what"], f"removed {path}")
        if entry["kind"] == "unbound":
            from boardlab.platform import drivers

            try:
                drivers.bind(self.root, entry["bus"], entry["driver"], entry["device"])
            except (BoardlabError, OSError):
                # the kernel refuses to bind a bound device: an undo cut short after its bind is done
                if entry["device"] not in drivers.bound_devices(self.root, entry["bus"], entry["driver"]):
                    raise
                return Restored(entry["what"], f"{entry['device']} is bound to {entry['driver']}")
            return Restored(entry["what"], f"bound {entry['device']} to {entry['driver']} again")
        if entry["kind"] == "setting":
            self.root.write_text(entry["rel"], entry["old"])
            return Restored(
                entry["what"],
                f"{self.root.show(entry['rel'])} = {entry['old']!r} (was set to {entry['new']!r})",
            )
        pid = entry["pid"]
        if entry.get("start_ticks") is not None and _pid_start_ticks(pid) == entry["start_ticks"]:
            try:
                os.killpg(pid, signal.SIGKILL)  # each load runs as the leader of its own process group
            except ProcessLookupError:
                pass
            except PermissionError:
                os.kill(pid, signal.SIGKILL)
            return Restored(entry["what"], f"stopped leftover process {pid} ({' '.join(entry['argv'][:3])})")
        return Restored(entry["what"], f"process {pid} had already ended")

    # ---- recovery ----

    def _place(self, entry: dict) -> str:
        if entry.get("kind") == "setting":
            return (
                f"{self.root.show(entry.get('rel', '?'))} = {entry.get('old')!r} (set to "
                f"{entry.get('new')!r})"
            )
        return str(entry.get("path") or entry.get("name") or entry.get("pid") or "?")

    def recover(self) -> list[Restored]:
        """Undoes what dead boardlab processes left, newest first; refuses while the owner still runs."""
        entries = self.pending()
        alive = {
            e["owner_pid"]
            for e in entries
            if e["owner_pid"] != os.getpid() and _pid_running(e["owner_pid"], e.get("owner_start_ticks"))
        }
        if alive:
            raise InputError(
                f"another boardlab (pid {', '.join(map(str, sorted(alive)))}) is changing "
                f"{self.root.root} now; wait for it, or stop it and run `boardlab restore`"
            )
        return self._recover_all(entries)

    def undo_own(self) -> list[Restored]:
        """What this process still has journaled after its conditions were undone: a change whose token a
        stop (Ctrl-C, SIGTERM, SIGHUP) took away between the write and the condition's bookkeeping, or an
        undo cut short before its entry was dropped. Each is tried; what fails stays for
        `boardlab restore`."""
        me = os.getpid()
        return self._recover_all([e for e in self.pending() if e.get("owner_pid") == me])

    def _recover_all(self, entries: list[dict]) -> list[Restored]:
        done = []
        for entry in reversed(entries):  # every entry is tried: one that fails must not keep the others
            if entry.get("kind") == "unit":
                done += self._recover_unit(entry)
            else:
                done.append(self._recover_entry(entry))
        return done

    def _recover_entry(self, entry: dict, unit: str = "") -> Restored:
        what = f"{unit}: {entry.get('what', '?')}" if unit else entry.get("what", "?")
        try:
            r = self._undo_entry(entry)
        except (BoardlabError, OSError) as exc:
            return Restored(what, self._place(entry), _fix(entry, exc))
        self._drop(entry["id"])
        return Restored(what, r.detail)

    def _recover_unit(self, unit: dict) -> list[Restored]:
        """A combined condition's entries, newest first (its parts in reverse order), each tried; the
        unit leaves the journal with its last entry (a dead owner's unit is closed: nobody adds to it)."""
        unit["open"] = False
        doc = self._load()
        found = _find(doc["entries"], unit["id"])
        if found is not None:
            found["open"] = False
            if not found["entries"]:
                doc["entries"].remove(found)
            self._save(doc)
        return [self._recover_entry(e, unit.get("what", "")) for e in reversed(unit["entries"])]


# ---- the system lock: one boardlab at a time changes a tree's settings ----


class LockWaitInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM/SIGHUP) while waiting for the system lock: nothing ran, nothing was changed."""


class SystemLock:
    """An exclusive lock on a tree's settings (/ or a --root tree), held for a whole campaign, so that a
    second campaign waits for the first instead of finding its journal entries and giving up: two campaigns
    at once would also measure each other. flock(2) on <state dir>/restore-<key>.lock: the kernel drops it
    when its holder dies, however it dies, and the file names the holder (pid, what, since when) for the
    waiter's message. The descriptor is not inherited by the workers and loads boardlab starts."""

    def __init__(self, root: SysRoot, what: str, path: Path | None = None):
        self.root = root
        self.what = what
        self.path = path or state_dir() / f"restore-{_root_key(root)}.lock"
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, as the waiter says it ("boardlab pid 1234 (campaign quick, since
        21:50:03)")."""
        try:
            doc = json.loads(self.path.read_text() or "{}")
        except (OSError, json.JSONDecodeError):
            doc = {}
        if not isinstance(doc, dict) or not _pid_running(doc.get("pid"), doc.get("start_ticks")):
            return "another boardlab"  # the file names none, or one that has ended: not who holds it now
        since = time.strftime("%H:%M:%S", time.localtime(doc.get("since_unix_s", time.time())))
        return f"boardlab pid {doc['pid']} ({doc.get('what', '?')}, since {since})"

    def _try(self) -> bool:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            problem = os_error(exc, self.path, "system lock (BOARDLAB_STATE_DIR)")
            raise OSProblem(f"{problem}; nothing was changed", problem.exit_code) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # the holder before us removed the file it held (release): locked an orphan, try the new file
            if not same_file(fd, self.path):
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError):
            os.close(fd)
            return False
        except OSError as exc:
            raise self._unlockable(fd, exc) from None
        doc = {
            "schema": JOURNAL_SCHEMA,
            "pid": os.getpid(),
            "start_ticks": _pid_start_ticks(os.getpid()),  # with the pid, this process and no later one
            "what": self.what,
            "since_unix_s": time.time(),
        }
        # who holds it is for the waiter's message only: a full disk may lose it, the lock still holds
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(doc).encode(), 0)
        self._fd = fd
        return True

    def _unlockable(self, fd: int, exc: OSError) -> BoardlabError:
        """A flock the filesystem refuses (NFS without lockd): the error names the path and the filesystem;
        the empty file just made is removed (nobody can hold a lock there, and it names no holder)."""
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_size == 0:
                os.unlink(self.path)
        os.close(fd)
        where = "system lock (BOARDLAB_STATE_DIR)"
        unsupported = lock_unsupported(exc, self.path, where)
        if unsupported is not None:
            return InputError(f"{unsupported}; nothing was changed")
        problem = os_error(exc, self.path, where)
        return OSProblem(f"{problem}; nothing was changed", problem.exit_code)

    def check(self) -> None:
        """The lock still guards the board: the file at its path is the one this process locked. One
        removed (a cleanup of the state directory) or replaced lets a second boardlab lock the new file and
        change the same settings beside this one; this stops instead of measuring or changing on."""
        if self._fd is not None and not same_file(self._fd, self.path):
            raise MeasurementError(
                f"the system lock {self.path} was removed or replaced while this boardlab held it: another "
                f"boardlab may be changing the settings of {self.root.root} beside it now; stopped here "
                "(what this one changed is restored, finished runs are kept). Leave the state directory "
                "alone while boardlab runs, then run again"
            )

    def acquire(self, wait_s: float | None, say, *, poll_s: float = 0.2, every_s: float = 30.0) -> float:
        """Takes the lock, waiting at most `wait_s` seconds (None: as long as it takes; 0: not at all); says
        who holds it when it starts waiting, every `every_s` seconds, and when it got it. Returns the seconds
        waited. InputError (exit 2) when the wait ran out; LockWaitInterrupted on Ctrl-C while waiting."""
        t0 = time.monotonic()
        if self._try():
            return 0.0
        where = self.root.root
        holder = self.holder()
        if wait_s is not None and wait_s <= 0:
            raise InputError(
                f"the system settings of {where} are held by {holder} (--no-wait): run again when it has "
                "finished, or without --no-wait to wait for it"
            )
        next_say = t0 + every_s
        try:  # from the first word on: a Ctrl-C right after "waiting for" is a Ctrl-C while waiting
            say(f"waiting for {holder} to release the system settings of {where}")
            while True:
                waited = time.monotonic() - t0
                if wait_s is not None and waited >= wait_s:
                    raise InputError(
                        f"the system settings of {where} are held by {holder}; gave up after {waited:.0f} s "
                        f"(--wait {wait_s:g}): run again when it has finished, or with a longer --wait"
                    )
                time.sleep(min(poll_s, max(0.0, wait_s - waited)) if wait_s is not None else poll_s)
                if self._try():
                    break
                holder = self.holder()
                if time.monotonic() >= next_say:
                    next_say += every_s
                    say(f"still waiting for {holder}: {time.monotonic() - t0:.0f} s so far")
        except KeyboardInterrupt:
            raise LockWaitInterrupted() from None
        waited = time.monotonic() - t0
        say(f"waited {waited:.0f} s for {holder} to release the system settings of {where}")
        return waited

    def release(self) -> None:
        if self._fd is not None:
            # removed while still held, then closed (which drops the flock): a waiter that locks the removed
            # file sees that it is no longer the path's and tries again; the state directory is left clean.
            # Only our own file: one at the path now is another holder's, whose lock it is
            if same_file(self._fd, self.path):
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            os.close(self._fd)
            self._fd = None


def _find(entries: list[dict], entry_id: str | None) -> dict | None:
    """The entry with this id, at the top of the journal or inside a unit."""
    for e in entries:
        if e["id"] == entry_id:
            return e
        for c in e.get("entries", ()) if e.get("kind") == "unit" else ():
            if c["id"] == entry_id:
                return c
    return None


def failures(restored: list[Restored]) -> list[Restored]:
    return [r for r in restored if r.failed]


def not_restored(r: Restored) -> MeasurementError:
    """The error for an entry that could not be undone: it names the setting and the fix."""
    return MeasurementError(f"could not restore {r.what} ({r.detail}): {r.failed}")


def _fix(entry: dict, exc: BaseException) -> str:
    """Why an entry could not be undone, and what to do: it stays in the journal for the next try."""
    if entry.get("kind") == "setting":
        return (
            f"{exc}; write {entry.get('old')!r} there by hand (or fix what refused it, e.g. run as root), "
            "then run `boardlab restore` again"
        )
    return f"{exc}; undo it by hand, then run `boardlab restore` again"
