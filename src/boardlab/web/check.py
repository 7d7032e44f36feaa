"""The store's full check for `boardlab serve`, run once in a thread of its own after the server listens.

The check (`Store.verify`: every value of every table has the type boardlab writes) reads the whole file: about
4 minutes for ten million runs with monitor series on a loaded two-core VM. Run before listening, it kept a
lab's pages away for that long; run beside the pages, the server answers at once, every page says the check
is still running, and a damage it finds turns every page into the 503 naming the table, column and row (as a
damaged store did at start before). Until then a page may show what a damaged row holds: the banner says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

CheckStateName = Literal["checking", "passed", "damaged"]


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
        from boardlab.errors import BoardlabError
        from boardlab.store import Store, driver_error

        t0 = time.monotonic()
        problem = None
        try:
            # one connection, one core: the pages keep the other (Store.verify's second scanner would take it)
            with Store.open(self._db, create=False, verify=False) as store:
                store.verify(beside=False)
        except BoardlabError as exc:
            problem = str(exc)
        except Exception as exc:  # a driver's error: named as the store names it, never a traceback
            error = driver_error(exc, self._db)
            problem = (
                str(error) if error is not None else f"{self._db}: the check failed ({type(exc).__name__})"
            )
        done = CheckState(
            "damaged" if problem else "passed", self._state.started_unix_s, time.monotonic() - t0, problem
        )
        self._state = done
        if self._on_done is not None:
            self._on_done(done)
