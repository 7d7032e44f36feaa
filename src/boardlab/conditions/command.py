"""A user command beside the workload, e.g. the compressor or daemon a board also runs in the field.

Plan syntax:

    [[conditions]]
    name = "gzip-other"
    kind = "command"
    params = { argv = ["gzip", "-9", "-c", "/var/log/syslog"], placement = "other", restart = true }

`argv` is a list: the program and its arguments, run as they are, never through a shell (so no pipes,
redirections or globs; the command's stdout is discarded). It runs in boardlab's working directory, on the
placement's CPUs, in a process group of its own. `restart` (default true): a command that ends while the
run goes on is started again, at once after a success and with a growing pause (0.1 s up to 2 s) after a
quick failure, so that a short command is a steady load and a broken one is not a busy loop; the state
records how often it started and how it exited. With `restart = false` a command that ends during the run
is recorded as `load_exited_early` (and one that ends during the warm-up stops the campaign). A command that
detaches into a new session of its own escapes the stop: give its foreground form.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.conditions.programs import QUICK_FAILURE_S

_EXAMPLE = 'e.g. argv = ["gzip", "-c", "/usr/share/dict/words"]'


@dataclass(frozen=True)
class CommandParams(background.BackgroundParams):
    argv: tuple[str, ...] = param(
        "list",
        None,
        required=True,
        help="the program, then its arguments, run as they are (no shell), " + _EXAMPLE,
    )
    restart: bool = param("bool", True, help="start the command again whenever it ends")


def _executable(name: str) -> str | None:
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name)


class Command(DeclaredKind[CommandParams]):
    name = "command"
    summary = "a command of yours (an argv list, no shell) running beside the workload, restarted if it ends"

    def refuse(self, p: CommandParams, params: dict) -> tuple[str | None, str] | None:
        argv = p.argv
        if not argv:
            return "argv", f"expected the command as a non-empty list, {_EXAMPLE}"
        if not all(a and "\0" not in a for a in argv):
            return (
                "argv",
                f"expected a list of non-empty strings (the program, then its arguments), {_EXAMPLE}",
            )
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        return self.check_params(self.typed(params), ctx)

    def check_params(self, p: CommandParams, ctx: ApplyContext) -> str | None:
        """`check` of typed parameters (the workload kind's command comes from its own)."""
        if _executable(p.argv[0]) is None:
            where = "is not an executable file" if "/" in p.argv[0] else "is not found on PATH"
            return f"unsupported: command {p.argv[0]!r} {where}; install it (argv runs as it is, no shell)"
        return background.placement_reason(p.placement, ctx)

    @contextmanager
    def applied(self, p: CommandParams, ctx: ApplyContext):
        """(Also the workload kind's, whose command comes from its own parameters.)"""
        state: dict[str, Any] = {"argv": list(p.argv), "restart": p.restart}
        config = {"argv": [_executable(p.argv[0]) or p.argv[0], *p.argv[1:]], "restart": p.restart}
        with background.program_load(
            "command",
            config,
            p,
            ctx=ctx,
            what=f"background command {p.argv[0]}",
            state=state,
            health=command_health,
        ):
            yield state
        if "starts" in state:
            state["restarts"] = max(0, state["starts"] - 1)


def command_health(state: dict) -> str | None:
    """Why the command did not load the run: it could not start, or every start ended in failure."""
    if state.get("error"):
        return str(state["error"])
    codes = state.get("exit_codes")
    starts = state.get("starts")
    if not isinstance(codes, dict) or not isinstance(starts, int) or starts == 0:
        return None
    ended = sum(n for n in codes.values() if isinstance(n, int))
    running_s = state.get("stopped_running_s")
    # the start the run's stop ended had run for less than a quick failure lasts: no sign it loaded the board
    just_restarted = (
        ended == starts - 1 and isinstance(running_s, int | float) and running_s < QUICK_FAILURE_S
    )
    if ended >= 1 and (ended == starts or just_restarted) and "0" not in codes:  # none succeeded
        how = ", ".join(f"exit {c}" for c in sorted(codes))
        tail = str(state.get("stderr_tail") or "").strip()[-200:]
        return f"{state['argv'][0]} failed at every one of its {starts} starts ({how})" + (
            f": {tail}" if tail else ""
        )
    return None


KIND = Command()
