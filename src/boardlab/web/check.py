"""The store's full check for `boardlab serve`, run once in a thread of its own after the server listens.

The check (`Store.verify`: every value of every table has the type boardlab writes) reads the whole file:
about 4 minutes for ten million runs with monitor series on a loaded two-core VM. Run before listening, it
kept a lab's pages away for that long; run beside the pages, the server answers at once, every page says the
check is still running, and a damage it finds turns every page into the 503 naming the table, column and row
(as a damaged store did at start before). Until then a page may show what a damaged row holds: the banner says
so.

The check runs in a process of its own (`python -m boardlab.web.check DB`, which prints one JSON line): in a
thread it held the interpreter's lock through its row-by-row Python, and a page that took 0.9 s alone took
8 s beside it. The process dies with serve (platform.spawn's parent-death signal); a thread of serve only
waits for it. A check that could not finish (killed, out of memory) is said as such, not as a damage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

CheckStateName = Literal["checking", "passed", "damaged", "unfinished"]
CHECK_SCHEMA = 1  # the child's one JSON line: {"schema": 1, "problem": null | "what is damaged"}


@dataclass(frozen=True)
class CheckState:
    state: CheckStateName
    started_unix_s: float
    took_s: float | None = None  # None while checking
    problem: str | None = None  # what the check found: the damaged table.column and row, or the read error

    def as_json(self) -> dict:
        return {"state": self.state, "started_unix_s": self.started_unix_s, "took_s": self.took_s,
                "problem": self.problem}  # fmt: skip


class StoreCheck:
    """The check of the store at `db`, started by `start()`; `state()` is what it has found so far.
    `on_done(state)` is called once from the check's thread when it ends (serve prints it)."""

    def __init__(self, db: str, on_done: Callable[[CheckState], None] | None = None) -> None:
        self._db, self._on_done = db, on_done
        self._state = CheckState("checking", time.time())
        self._thread = threading.Thread(target=self._run, name="boardlab-store-check", daemon=True)

    def start(self) -> StoreCheck:
        self._thread.start()
        return self

    def state(self) -> CheckState:
        return self._state  # replaced whole, once: a reader sees the old record or the new one

    def wait(self, timeout_s: float | None = None) -> CheckState:
        self._thread.join(timeout_s)
        return self._state

    def _run(self) -> None:
        t0 = time.monotonic()
        state, problem = _checked_in_child(self._db)
        done = CheckState(state, self._state.started_unix_s, time.monotonic() - t0, problem)
        self._state = done
        if self._on_done is not None:
            self._on_done(done)


def _checked_in_child(db: str) -> tuple[CheckStateName, str | None]:
    """("passed", None), ("damaged", what), or ("unfinished", why) from `python -m boardlab.web.check DB`."""
    import json
    import sys

    from boardlab.platform.spawn import boardlab_child_env, spawn

    try:  # -P: the boardlab this serve runs, never one in the current directory
        proc = spawn([sys.executable, "-P", "-m", "boardlab.web.check", db], env=boardlab_child_env())
        out, err = proc.communicate()
    except OSError as exc:
        return "unfinished", f"the check could not start: {exc}"
    try:
        doc = json.loads(out.decode().strip().splitlines()[-1])
        if doc.get("schema") == CHECK_SCHEMA:
            problem = doc.get("problem")
            return ("damaged", str(problem)) if problem else ("passed", None)
    except (ValueError, IndexError, AttributeError):
        pass
    tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return "unfinished", f"the check's process ended with exit code {proc.returncode} {tail[0]}".rstrip()


def check_store(db: str) -> str | None:
    """What is damaged in the store at `db` (its full check, one connection), or None."""
    from boardlab.errors import BoardlabError
    from boardlab.store import Store, driver_error

    try:
        # one connection, one core: the pages keep the other (Store.verify's second scanner would take it)
        with Store.open(db, create=False, verify=False) as store:
            store.verify(beside=False)
    except BoardlabError as exc:
        return str(exc)
    except Exception as exc:  # a driver's error: named as the store names it, never a traceback
        error = driver_error(exc, db)
        return str(error) if error is not None else f"{db}: the check failed ({type(exc).__name__})"
    return None


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps({"schema": CHECK_SCHEMA, "problem": check_store(sys.argv[1])}), flush=True)
