"""Progress of a campaign on the terminal: a bar with ETA on a TTY, one plain line per run otherwise."""

from __future__ import annotations

import shutil
import sys
import time

from boardlab.analysis.format import cell_label, fmt_scaled
from boardlab.report.escape import term


def _name(cell) -> str:
    """A run's cell as reports name it: the workload with the parameters it sets, in their units, and the
    condition ("mibench.sha1 @ baseline", "mem.latency (pattern=random, size 4 KiB) @ baseline"); the
    store's key (`mibench.sha1[]@baseline`) is for the store."""
    return f"{cell_label(cell.workload, cell.params_dict)} @ {cell.condition}"


def _fmt_s(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return (
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


class TerminalProgress:
    def __init__(self, stream=None, *, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.quiet = quiet
        self.t0 = time.monotonic()
        self.done0 = 0
        self.failures = 0
        self.succeeded = 0  # runs with a result (valid or not): measured, whatever else went wrong

    def _print(self, line: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(term(line) + "\n")  # names come from the plan: no raw control characters
        self.stream.flush()

    def start(self, campaign: str, total: int, done: int, resumed: bool) -> None:
        self.t0 = time.monotonic()
        self.done0 = done
        verb = f"resuming ({done} of {total} runs already stored)" if resumed else f"{total} runs"
        self._print(f"campaign {campaign}: {verb}")

    def gate(self, run, detail: str) -> None:
        pass

    def note(self, message: str) -> None:
        """A note on its own line; on a terminal wrapped to its width with a hanging indent (a reason such as
        energy's, 300 characters, otherwise breaks mid-word), in a log or pipe one line, for grep."""
        import textwrap

        width = max(40, shutil.get_terminal_size().columns - 1)
        wrap = textwrap.TextWrapper(
            width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        )
        for line in (wrap.wrap(message) or [""]) if self.tty else [message]:  # a path is never cut
            self._print(line)

    @property
    def measured_nothing(self) -> bool:
        """Every run this command made failed: it exits 1, not 0 (a script's `run && report` must not go on
        as if a campaign of failed runs had measured something)."""
        return self.failures > 0 and self.succeeded == 0

    def finished(self, run, result, done: int, total: int) -> None:
        if result.ok:
            self.succeeded += 1
        else:
            self.failures += 1
        elapsed = time.monotonic() - self.t0
        new = done - self.done0
        eta = elapsed / new * (total - done) if new > 0 else 0.0
        unit = next((m.unit for m in result.metrics if m.name == run.cell.metric), "")
        value = fmt_scaled(result.value, unit)
        status = (
            "ok"
            if result.valid
            else ("INVALID: " + (result.invalid_reason or ""))
            if result.ok
            else f"FAILED: {result.error}"
        )
        if self.tty:
            width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 60))
            filled = int(width * done / total) if total else width
            bar = "#" * filled + "-" * (width - filled)
            if not result.valid:
                self._print(f"  {_name(run.cell)} rep {run.repetition}: {status}")
            self.stream.write(
                f"\r\x1b[K[{bar}] {done}/{total} {_fmt_s(elapsed)} ETA {_fmt_s(eta)}  "
                f"{term(_name(run.cell)[:40])} {value}"
            )
            self.stream.flush()
            if done == total:
                self.stream.write("\n")
        elif not self.quiet or not result.valid:
            self._print(
                f"[{done}/{total}] {_name(run.cell)} rep {run.repetition}: {value} ({status}) ETA "
                f"{_fmt_s(eta)}"
            )
