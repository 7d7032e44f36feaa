"""Who the system lock's holder is, beyond its pid: a campaign that holds the lock names its results database
and campaign id in a file beside the lock, so a campaign waiting for it says how far along it is and when it
should end (the pace so far, as `boardlab serve`'s /running page computes it: Store.campaign_progress).

The lock itself (conditions.journal.SystemLock) names the holder's pid, what it is and since when; this file
adds the store. It is written once the holder's campaign exists and removed before the lock is released; a
file left by a killed holder names a pid that no longer holds the lock and is not believed."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from pathlib import Path


def _sidecar(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".campaign")


def announce(lock_path: Path, db: str, campaign_id: int) -> None:
    """Names this process's campaign beside the lock it holds. A file that cannot be written costs only the
    waiter's detail."""
    doc = {"pid": os.getpid(), "db": str(Path(db).resolve()), "campaign_id": campaign_id}
    tmp = _sidecar(lock_path).with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, _sidecar(lock_path))
    except OSError:  # a full state directory: no file is left half-written there
        with contextlib.suppress(OSError):
            tmp.unlink()


def withdraw(lock_path: Path) -> None:
    """Removes this process's file (before the lock is released); never another holder's."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(_sidecar(lock_path).read_text()).get("pid") == os.getpid():
            _sidecar(lock_path).unlink()


def _read(path: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(path.read_text() or "{}")
        if isinstance(doc, dict):
            return doc
    return {}


def holder_progress(lock_path: Path, now_s: float | None = None) -> str | None:
    """'its campaign 4 in /x/lab.db: 37 of 150 runs stored (...), ETA 12 min ...' for the campaign holding the
    lock at `lock_path`, or None when the holder is no campaign (a `governor run`, a `restore`), names none,
    or its store cannot be read now."""
    holder, campaign = _read(lock_path), _read(_sidecar(lock_path))
    pid, db, cid = campaign.get("pid"), campaign.get("db"), campaign.get("campaign_id")
    if pid is None or pid != holder.get("pid") or not isinstance(db, str) or not isinstance(cid, int):
        return None
    from boardlab.errors import BoardlabError
    from boardlab.store import Store

    try:  # a campaign writes a SQLite file (`run` refuses a PostgreSQL URL); read without the full scan
        with Store.open(db, create=False, verify=False) as store:
            progress = store.campaign_progress(store.campaign(cid), time.time() if now_s is None else now_s)
    except (BoardlabError, OSError, sqlite3.Error) as exc:  # only the waiter's detail is lost
        return f"its campaign {cid} in {db} cannot be read now ({exc})"
    return f"its campaign {cid} in {db}: {progress.sentence()}"


def with_progress(lock_path: Path, say):
    """`say` for SystemLock.acquire, each line of the wait followed by the holder's progress where known."""

    def said(line: str) -> None:
        detail = None if line.startswith("waited") else holder_progress(lock_path)
        say(f"{line}; {detail}" if detail else line)

    return said
