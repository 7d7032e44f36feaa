"""`boardlab bundle`: one tarball that installs boardlab on a board without a compiler or a package index."""

from __future__ import annotations

import sys
from pathlib import Path

DESCRIPTION = (
    "Write FILE.tar.gz holding boardlab as a pure-Python wheel, boardlab-kern built for the board's "
    "architecture, the campaign presets and install.sh. On the board (Debian with python3-venv): "
    "`tar xzf FILE.tar.gz && sh DIR/install.sh`, then `boardlab run`. No compiler, no network."
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--arch",
        required=True,
        choices=("armhf", "arm64", "native"),
        help="the board's Debian architecture (native: this machine's)",
    )
    parser.add_argument("--out", required=True, metavar="FILE.tar.gz", help="the bundle to write")
    parser.add_argument(
        "--kern",
        metavar="PATH",
        help="boardlab-kern built for --arch (default for native: the installed one; for armhf/arm64: "
        "build-arm/ARCH/src/boardlab/kern/boardlab-kern, as `make cross` in the source tree leaves it)",
    )


def run(args) -> int:
    from boardlab import __version__
    from boardlab.bundle import make_bundle, native_arch
    from boardlab.errors import InputError

    arch = native_arch() if args.arch == "native" else args.arch
    if args.kern:
        kern = Path(args.kern)
    elif args.arch == "native":
        from boardlab.native import kern_path

        kern = kern_path()
    else:
        kern = Path("build-arm") / arch / "src/boardlab/kern/boardlab-kern"
        if not kern.is_file():
            raise InputError(
                f"--arch {arch}: no cross-built boardlab-kern at {kern}; run `make cross` in boardlab's "
                "source tree, or pass --kern PATH"
            )
    result = make_bundle(
        arch, Path(args.out), kern, __version__, progress=lambda m: print(m, file=sys.stderr)
    )
    libs = ", ".join(result.libraries) or "libc only"
    print(
        f"wrote {result.path} ({result.size_bytes / 1e6:.1f} MB): {result.wheel}, boardlab-kern for "
        f"{result.arch} (needs {libs}), presets, install.sh"
    )
    print(f"on the board: tar xzf {result.path.name} && sh {result.path.name[:-7]}/install.sh")
    return 0
