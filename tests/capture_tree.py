"""Capture a fixture board tree (tests/fixtures/sysfs/NAME) from the running system: exactly the files of
/proc, /sys and /dev that boardlab's platform layer reads here, copied under OUT with the same layout.

    python3 tests/capture_tree.py OUT

It runs, in this process, what the fixture-tree tests run on a tree: `boardlab info --json` (the inventory,
its capabilities and checks), the monitor's system and per-process readers (platform.sampling,
platform.procacct) on this process, and the interrupt, DMA and network-counter readers. Every path asked of a
SysRoot (`SysRoot.path`) and every file opened or directory listed (Python's audit events `open`,
`os.listdir`, `os.scandir`) below /proc, /sys or /dev is recorded; then each recorded path that exists is
copied: a regular file with its content as read now, a directory as an empty directory, a symbolic link
as the same link (an absolute one made relative, so that every link resolves inside OUT), with its target
copied too.
Device files are left out except /dev/cpu_dma_latency, kept as a regular file holding the 4 bytes it reads
(as the vm tree has it). A file the kernel refuses to read (EIO, EACCES, EINVAL) is left out and listed.
What was left out is written to OUT/../NAME.capture.txt, not into the tree.

Needs only the standard library and an installed boardlab (the bundle's venv in the booted guest of
`make test-arm-system`, which runs it as root). Paths of other processes (/proc/PID other than this one)
are not copied: they would be a snapshot of whatever else ran.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import stat
import sys
from pathlib import Path

PREFIXES = ("/proc/", "/sys/", "/dev/")
MAX_BYTES = 1 << 20  # a larger file is not a kernel attribute boardlab parses (kcore, kallsyms...)
KEPT_DEVICES = {"/dev/cpu_dma_latency": 4}


class Recorder:
    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.on = True

    def add(self, path: object) -> None:
        if not self.on or not isinstance(path, str | bytes | os.PathLike):
            return
        p = os.fsdecode(os.fspath(path))
        if p.startswith(PREFIXES) or p in ("/proc", "/sys", "/dev"):
            self.paths.add(os.path.normpath(p))

    def audit(self, event: str, args: tuple[object, ...]) -> None:
        if event in ("open", "os.listdir", "os.scandir") and args:
            self.add(args[0])


def exercise(rec: Recorder) -> None:
    """What the fixture-tree tests read, run on the live system."""
    from boardlab.cli import main
    from boardlab.platform import dma, irq, procacct, sampling
    from boardlab.platform.sysroot import SysRoot

    real_path = SysRoot.path

    def recording_path(self: SysRoot, rel: str) -> Path:
        p = real_path(self, rel)
        rec.add(str(p))
        return p

    SysRoot.path = recording_path  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["info", "--json"])
        pid = os.getpid()
        src = sampling.resolve_sources("/")
        sampling.read_cpu_jiffies(src)
        sampling.read_status(src, pid)
        sampling.read_swap_pages(src)
        sampling.read_psi(src)
        sampling.read_tree(
            src, pid, count_root=True, children_files=sampling.has_children_files(src.proc, pid)
        )
        procacct.read_process("/", pid)
        procacct.mem_total_bytes("/")
        procacct.online_cpus("/")
        procacct.read_net_counters("/")
        procacct.read_udp_socket_drops("/")
        procacct.read_net_dev("/")
        irq.read_interrupts("/")
        irq.default_affinity("/")
        irq.read_affinities("/")
        dma.dma_channels("/")
    finally:
        SysRoot.path = real_path  # type: ignore[method-assign]


def other_process(path: str) -> bool:
    m = re.match(r"/proc/(\d+)(/|$)", path)
    return m is not None and int(m.group(1)) != os.getpid()


def copy_one(path: str, out: Path, skipped: list[str]) -> None:
    """Copies `path` to out/path, recreating each symbolic link on the way (and what it points to)."""
    parts = Path(path).parts[1:]
    cur = "/"
    for i, part in enumerate(parts):
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt):
            dest = out / nxt.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if not dest.is_symlink():
                target = os.readlink(nxt)
                if os.path.isabs(target):  # /proc/device-tree -> /sys/firmware/...: kept inside OUT
                    target = os.path.relpath(target, os.path.dirname(nxt))
                dest.symlink_to(target)
            target = os.path.realpath(nxt)
            if not target.startswith(PREFIXES) or other_process(target):
                return
            rest = os.path.join(target, *parts[i + 1 :])
            copy_one(rest, out, skipped)
            return
        cur = nxt
    dest = out / cur.lstrip("/")
    try:
        st = os.stat(cur)
    except OSError:
        return  # vanished since it was read, or never there (an existence probe)
    if stat.S_ISDIR(st.st_mode):
        dest.mkdir(parents=True, exist_ok=True)
        return
    if cur in KEPT_DEVICES:
        n = KEPT_DEVICES[cur]
    elif stat.S_ISREG(st.st_mode):
        n = MAX_BYTES + 1
    else:
        skipped.append(f"{cur}: a device, not copied")
        return
    try:
        with open(cur, "rb") as f:
            data = f.read(n)
    except OSError as e:
        skipped.append(f"{cur}: {e.strerror}")
        return
    if len(data) > MAX_BYTES:
        skipped.append(f"{cur}: over {MAX_BYTES} bytes, not copied")
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def capture(out: Path) -> list[str]:
    rec = Recorder()
    sys.addaudithook(rec.audit)
    exercise(rec)
    rec.on = False  # the copying below reads the same files: nothing more to record
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    skipped: list[str] = []
    for path in sorted(rec.paths):
        if path.startswith("/proc/self"):
            path = f"/proc/{os.getpid()}" + path[len("/proc/self") :]
        if other_process(path):
            continue
        copy_one(path, out, skipped)
    if (out / "proc").is_dir():  # /proc/net and the like point through it
        (out / "proc/self").symlink_to(str(os.getpid()))
    return skipped


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = Path(argv[0])
    skipped = capture(out)
    (out.parent / f"{out.name}.capture.txt").write_text("".join(f"{s}\n" for s in skipped))
    n = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"capture: {n} files under {out} ({len(skipped)} left out, listed in {out.name}.capture.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
