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

import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, validate_params
from boardlab.model.workload import ParamSpec

SOURCES = {"urandom": "/dev/urandom", "zero": "/dev/zero"}
_SIZE = re.compile(r"(\d+)([KMG]?)")
MIN_SIZE, MAX_SIZE = 4096, 4 << 30
PARAMS = (
    ParamSpec("source", "enum", "urandom", choices=tuple(SOURCES), help="what dd reads"),
    ParamSpec(
        "size",
        "int",
        "16M",
        min=MIN_SIZE,
        max=MAX_SIZE,
        unit="bytes",
        help='bytes per round, an integer or like "16M" (K, M, G: powers of 1024)',
    ),
    ParamSpec("level", "int", 6, min=1, max=9, help="gzip's compression level"),
    ParamSpec("pause_s", "float", 0.0, min=0, max=3600, unit="s", help="idle time between rounds"),
    *background.COMMON_PARAMS,
)


def parse_size(value: int | str) -> int | None:
    """16777216, "16M", "512K", "1G" -> bytes (powers of 1024); None when malformed."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return None
    return int(m[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[m[2]]


@dataclass(frozen=True)
class DdgzipParams:
    source: str
    size_bytes: int
    level: int
    pause_s: float
    placement: str
    warmup_s: float

    @classmethod
    def of(cls, params: dict, ctx: ApplyContext) -> DdgzipParams:
        return cls(
            source=params.get("source", "urandom"),
            size_bytes=parse_size(params.get("size", "16M")) or 0,
            level=params.get("level", 6),
            pause_s=float(params.get("pause_s", 0.0)),
            placement=params.get("placement", background.DEFAULT_PLACEMENT),
            warmup_s=background.warmup_of(params, ctx),
        )


@dataclass(frozen=True)
class Ddgzip:
    name: str = "ddgzip"
    summary: str = (
        "the satellite study's loop: dd a file from /dev/urandom or /dev/zero, gzip it, delete both, repeat"
    )
    params: tuple[ParamSpec, ...] = PARAMS

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        missing = [tool for tool in ("dd", "gzip") if shutil.which(tool) is None]
        reason = (
            f"{' and '.join(missing)} not found on PATH: apt-get install coreutils gzip" if missing else None
        )
        return reason, ()

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        bad = validate_params(self.params, params)
        if bad:
            return bad
        size = parse_size(params.get("size", "16M"))
        if size is None or not MIN_SIZE <= size <= MAX_SIZE:
            return "size", f'expected bytes in [4K, 4G] as an integer or like "16M", found {params["size"]!r}'
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        missing = [tool for tool in ("dd", "gzip") if shutil.which(tool) is None]
        if missing:
            return f"unsupported: {' and '.join(missing)} not found on PATH: apt-get install coreutils gzip"
        return background.placement_reason(DdgzipParams.of(params, ctx).placement, ctx)

    def apply(self, params: dict, ctx: ApplyContext):
        return self._apply(DdgzipParams.of(params, ctx), ctx)

    @contextmanager
    def _apply(self, p: DdgzipParams, ctx: ApplyContext):
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
            ctx=ctx,
            placement=p.placement,
            warmup_s=p.warmup_s,
            what="ddgzip loop (dd + gzip)",
            state=state,
            health=ddgzip_health,
        ):
            yield state


def ddgzip_health(state: dict) -> str | None:
    """Why the loop did not load the run: no cycle finished and at least one failed (a full disk)."""
    if state.get("cycles") == 0 and state.get("errors"):
        return f"0 cycles, {state['errors']} failed: {state.get('last_error') or 'no message'}"
    return None


KIND = Ddgzip()
