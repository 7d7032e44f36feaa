"""The satellite study's background script: dd creates a file, gzip compresses it, both are deleted, again.

Plan syntax:

    [[conditions]]
    name = "dd-gzip"
    kind = "ddgzip"
    params = { source = "urandom", size = "16M", level = 6, placement = "all" }

Each cycle runs the real `dd if=/dev/urandom (or /dev/zero) of=FILE bs=65536 count=N`, then `gzip -LEVEL -c
FILE > FILE.gz` (argv lists, no shell), then deletes both, in boardlab's private temporary directory;
`pause_s` waits between cycles. urandom makes dd spend kernel CPU and leaves gzip incompressible data (its
slowest case); zero makes dd nearly free and gzip fast. The state records cycles, bytes written and
compressed, and failures (a full disk is retried every 0.5 s, not in a busy loop).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from dataclasses import dataclass

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, DeclaredKind, param

SOURCES = {"urandom": "/dev/urandom", "zero": "/dev/zero"}
MIN_SIZE, MAX_SIZE = 4096, 4 << 30


@dataclass(frozen=True)
class DdgzipParams(background.BackgroundParams):
    source: str = param("enum", "urandom", choices=tuple(SOURCES), help="what dd reads")
    size_bytes: int = param(
        "int",
        "16M",
        key="size",
        min=MIN_SIZE,
        max=MAX_SIZE,
        unit="bytes",
        help='bytes per round, an integer or like "16M" (K, M, G: powers of 1024)',
    )
    level: int = param("int", 6, min=1, max=9, help="gzip's compression level")
    pause_s: float = param("float", 0.0, min=0, max=3600, unit="s", help="idle time between rounds")


def _missing_tools() -> str | None:
    """Which of the loop's programs this machine lacks, with the fix; None when it has both."""
    missing = [tool for tool in ("dd", "gzip") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found on PATH: apt-get install coreutils gzip" if missing else None


class Ddgzip(DeclaredKind[DdgzipParams]):
    name = "ddgzip"
    summary = (
        "the satellite study's loop: dd a file from /dev/urandom or /dev/zero, gzip it, delete both, repeat"
    )

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        return _missing_tools(), ()

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        missing = _missing_tools()
        if missing:
            return f"unsupported: {missing}"
        return background.placement_reason(self.typed(params).placement, ctx)

    @contextmanager
    def applied(self, p: DdgzipParams, ctx: ApplyContext):
        state = {"source": p.source, "size_bytes": p.size_bytes, "level": p.level, "pause_s": p.pause_s}
        config = {
            "dd": shutil.which("dd"),
            "gzip": shutil.which("gzip"),
            "source": SOURCES[p.source],
            "size_bytes": p.size_bytes,
            "level": p.level,
            "pause_s": p.pause_s,
            "dir": str(ctx.temp_dir),
        }
        with background.program_load(
            "ddgzip",
            config,
            p,
            ctx=ctx,
            what="ddgzip loop (dd + gzip)",
            state=state,
            health=ddgzip_health,
        ):
            yield state


def ddgzip_health(state: dict) -> str | None:
    """Why the loop did not load the run: more of its cycles failed than finished (a full disk). A failed
    cycle is followed by a 0.5 s pause, so a loop that mostly fails mostly sleeps: one cycle that fit before
    the disk filled does not make the run one under load."""
    cycles, errors = state.get("cycles"), state.get("errors")
    if not isinstance(cycles, int) or not isinstance(errors, int) or errors <= cycles:
        return None
    return (
        f"{cycles} cycles, {errors} failed ({errors} of {cycles + errors}): "
        f"{state.get('last_error') or 'no message'}"
    )


KIND = Ddgzip()
