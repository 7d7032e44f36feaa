"""A board bundle: boardlab as a pure-Python wheel, a boardlab-kern built for the board's architecture, the
presets and an installer that needs neither a compiler nor a package index (`boardlab bundle`).

The wheel is made from this installed package's own files, so any install of boardlab can bundle itself;
only the native binary differs per architecture, and it is installed beside the venv's `boardlab` script,
where `boardlab.native.kern_path` looks for it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import struct
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boardlab.errors import InputError

BUNDLE_SCHEMA = 1
PACKAGE_DIR = Path(__file__).resolve().parent
# arch -> (ELF class: 1 = 32-bit, 2 = 64-bit; ELF e_machine; the wheel's platform and `uname -m` values)
ARCHES = {
    "armhf": (1, 40, ("armv7l", "armv8l", "aarch64")),  # an armhf userland may run on a 64-bit kernel
    "arm64": (2, 183, ("aarch64",)),
    "x86_64": (2, 62, ("x86_64",)),
}
MACHINE_ARCH = {
    "armv7l": "armhf",
    "armv8l": "armhf",
    "aarch64": "arm64",
    "arm64": "arm64",
    "x86_64": "x86_64",
}
# Shared libraries a full boardlab-kern links, and the Debian package that provides each on the board.
RUNTIME_LIBS = {
    "liblzma.so.5": "liblzma5",
    "libbz2.so.1.0": "libbz2-1.0",
    "libzstd.so.1": "libzstd1",
    "libz.so.1": "zlib1g",
    "libcrypto.so.3": "libssl3",
}


@dataclass(frozen=True)
class BundleResult:
    path: Path
    arch: str
    wheel: str
    kern: Path
    size_bytes: int
    libraries: tuple[str, ...]  # shared libraries the bundled boardlab-kern needs on the board


def native_arch() -> str:
    machine = os.uname().machine
    if machine not in MACHINE_ARCH:
        raise InputError(f"--arch native: no bundle for this machine ({machine}); use --arch armhf or arm64")
    return MACHINE_ARCH[machine]


def elf_arch(path: Path) -> str | None:
    """The bundle architecture an ELF executable was built for, from its header; None if not ELF."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[5] != 1:  # little-endian only
        return None
    (machine,) = struct.unpack_from("<H", head, 18)
    for arch, (elf_class, e_machine, _) in ARCHES.items():
        if head[4] == elf_class and machine == e_machine:
            return arch
    return None


def needed_libraries(path: Path) -> tuple[str, ...]:
    """The known shared libraries whose soname the binary names (its dynamic string table lists them)."""
    data = path.read_bytes()
    return tuple(lib for lib in RUNTIME_LIBS if b"\0" + lib.encode() + b"\0" in data)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _package_files() -> list[tuple[str, bytes]]:
    """(archive name, bytes) of every file of the installed package but the native binary, this host's
    extension modules and byte code."""
    files = []
    for path in sorted(PACKAGE_DIR.rglob("*")):
        rel = path.relative_to(PACKAGE_DIR)
        if (
            path.is_dir()
            or "__pycache__" in rel.parts
            or path.suffix in (".pyc", ".so")  # this host's extension modules: the wheel is pure Python
            or rel.name == "boardlab-kern"
        ):
            continue
        files.append((f"boardlab/{rel.as_posix()}", path.read_bytes()))
    return files


def build_wheel(version: str, libraries: tuple[str, ...]) -> tuple[str, bytes]:
    """A py3-none-any wheel of this installed package. `_build_config.py` is rewritten to describe the
    bundled binary (which libraries it links), not the machine that made the bundle."""
    name = f"boardlab-{version}-py3-none-any.whl"
    dist = f"boardlab-{version}.dist-info"
    entries = []
    for arc, data in _package_files():
        if arc == "boardlab/_build_config.py":
            data = _build_config(version, libraries).encode()
        entries.append((arc, data))
    entries += [
        (
            f"{dist}/METADATA",
            (
                f"Metadata-Version: 2.1\nName: boardlab\nVersion: {version}\nRequires-Python: >=3.11\n"
                "Summary: Performance characterization lab for embedded and edge Linux boards\n"
            ).encode(),
        ),
        (
            f"{dist}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: boardlab bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (f"{dist}/entry_points.txt", b"[console_scripts]\nboardlab = boardlab.cli:main\n"),
    ]
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in entries)
    record += f"{dist}/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in [*entries, (f"{dist}/RECORD", record.encode())]:
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return name, buf.getvalue()


def _build_config(version: str, libraries: tuple[str, ...]) -> str:
    have = {
        "LZMA": "liblzma.so.5",
        "BZIP2": "libbz2.so.1.0",
        "ZSTD": "libzstd.so.1",
        "ZLIB": "libz.so.1",
        "CRYPTO": "libcrypto.so.3",
    }
    lines = [
        '"""Written by `boardlab bundle`: what the bundled boardlab-kern was built with (the libraries '
        'it links)."""',
        "",
        f'VERSION = "{version}"',
    ]
    lines += [f"HAVE_{name} = {soname in libraries}" for name, soname in have.items()]
    lines += ["HAVE_PERF_EVENT = True", "HAVE_AF_ALG = True", ""]  # Linux headers: every Linux build has them
    return "\n".join(lines)


INSTALL_SH = r"""#!/bin/sh
# Installs boardlab from this bundle on a Debian board: a venv (python3-venv) with the system's site packages
# (Debian's python3-numpy/python3-scipy, where the board has them), the wheel installed with pip --no-index
# (no package index, no compiler), boardlab-kern beside the venv's boardlab script, and a `boardlab` link.
#   sh install.sh [--prefix DIR] [--bin DIR]
# DIR defaults: /opt/boardlab and /usr/local/bin as root, else ~/.local/share/boardlab and ~/.local/bin.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
arch=@ARCH@
if [ "$(id -u)" = 0 ]; then prefix=/opt/boardlab bindir=/usr/local/bin
else prefix=$HOME/.local/share/boardlab bindir=$HOME/.local/bin; fi
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --bin) bindir=${2:?--bin needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
machine=$(uname -m)
case " @MACHINES@ " in
  *" $machine "*) ;;
  *) echo "install.sh: this bundle is for $arch (uname -m one of: @MACHINES@), this machine is $machine" >&2; exit 2 ;;
esac
command -v python3 >/dev/null || { echo "install.sh: python3 missing: apt-get install python3 python3-venv" >&2; exit 1; }
# Every file against the sha256 bundle.json records, before anything runs or is installed: a truncated or
# altered copy (an interrupted scp, a full disk) is refused, not installed half-broken; so is a file the
# manifest does not list (a wheel added beside the listed one), and the wheel installed is the one it names.
command -v sha256sum >/dev/null || { echo "install.sh: sha256sum missing: apt-get install coreutils" >&2; exit 1; }
checked=$(python3 - "$here" <<'PY'
import json, os, re, sys
here = sys.argv[1]
manifest = os.path.join(here, "bundle.json")
try:
    with open(manifest, encoding="utf-8") as f:
        doc = json.load(f)
    files, wheel = doc["files"], doc["wheel"]
    lines = [f"{files[n]}  {n}" for n in sorted(files)]
    bad = [n for n in files if n.startswith("/") or ".." in n.split("/") or not re.fullmatch("[0-9a-f]{64}", files[n])]
    bad += [] if isinstance(wheel, str) and re.fullmatch(r"wheels/[A-Za-z0-9_.+-]+\.whl", wheel) and wheel in files else [f"wheel: {wheel!r}"]
except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
    sys.exit(f"install.sh: {manifest}: no readable manifest ({type(e).__name__}: {e}); the bundle is damaged: copy it again")
if bad or not lines:
    sys.exit(f"install.sh: {manifest}: the manifest lists no files or bad entries {bad[:3]}; copy the bundle again")
unlisted = []
for root, dirs, names in os.walk(here):
    for name in sorted(dirs + names):
        path = os.path.join(root, name)
        rel = os.path.relpath(path, here)
        if os.path.islink(path) or not (os.path.isdir(path) or os.path.isfile(path)):
            unlisted.append(f"{rel} (not a regular file)")
        elif os.path.isfile(path) and rel != "bundle.json" and rel not in files:
            unlisted.append(rel)
if unlisted:
    sys.exit(f"install.sh: the bundle holds what its manifest {manifest} does not list: {', '.join(unlisted[:5])}; "
             "nothing installed: remove them, or copy the bundle again")
print(wheel)
print("\n".join(lines))
PY
) || exit 2
wheel=$(printf '%s\n' "$checked" | head -n 1)
sums=$(printf '%s\n' "$checked" | tail -n +2)
if ! check=$(cd "$here" && printf '%s\n' "$sums" | sha256sum -c --strict 2>&1); then
  echo "install.sh: the bundle's files do not match the sha256 in bundle.json (a truncated or altered copy); nothing installed:" >&2
  printf '%s\n' "$check" | grep -v ': OK$' >&2
  echo "install.sh: fix: copy the bundle again and compare its sha256sum with the original's" >&2
  exit 2
fi
echo "install.sh: $(printf '%s\n' "$sums" | wc -l) files match the sha256 in bundle.json"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "install.sh: boardlab needs Python >= 3.11, this is $(python3 -V 2>&1) (Debian 12 or later has it)" >&2; exit 1; }
python3 -c 'import ensurepip, venv' 2>/dev/null || { echo "install.sh: python3-venv missing: apt-get install python3-venv" >&2; exit 1; }
# The binary must load here before anything is installed: a missing shared library is named with its package.
if ! out=$("$here/boardlab-kern" --version 2>&1); then
  echo "install.sh: boardlab-kern does not run on this machine: $out" >&2
  echo "install.sh: fix: apt-get install @DEBS@" >&2
  exit 1
fi
echo "install.sh: $out"
echo "install.sh: creating the venv $prefix"
python3 -m venv --system-site-packages "$prefix"
# the manifest's wheel by its file name: pip given a directory would take the highest version there
"$prefix/bin/python" -m pip install --no-index --no-cache-dir --disable-pip-version-check -q \
  --force-reinstall --no-deps "$here/$wheel"
install -m 0755 "$here/boardlab-kern" "$prefix/bin/boardlab-kern"
mkdir -p "$bindir"
ln -sf "$prefix/bin/boardlab" "$bindir/boardlab"
"$prefix/bin/boardlab" --version >/dev/null
echo "install.sh: boardlab $("$prefix/bin/boardlab" --version | cut -d' ' -f2) installed in $prefix; $bindir/boardlab -> $prefix/bin/boardlab"
case ":$PATH:" in *":$bindir:"*) ;; *) echo "install.sh: $bindir is not on PATH: run $bindir/boardlab, or add it to PATH" ;; esac
echo "install.sh: next: boardlab info; boardlab run --preset quick --db results.db; boardlab report --db results.db -o report.html"
"""


def _check_out(out: Path, inputs: list[Path]) -> None:
    """--out must be a new or regular .tar.gz file in an existing directory, and none of the inputs."""
    if not out.name.endswith(".tar.gz"):
        raise InputError(f"--out {out}: a bundle is a .tar.gz file; name it e.g. boardlab-armhf.tar.gz")
    if out.is_symlink() and not out.exists():
        raise InputError(f"--out {out}: is a dangling symbolic link; choose a new file")
    if out.exists():
        if not stat.S_ISREG(os.stat(out).st_mode):
            raise InputError(
                f"--out {out}: exists and is not a regular file (a device or directory); choose a new file"
            )
        for p in inputs:
            if p.exists() and os.path.samefile(out, p):
                raise InputError(f"--out {out}: is one of the bundle's inputs ({p}); choose another file")
    if PACKAGE_DIR in out.resolve().parents:
        raise InputError(f"--out {out}: lies inside the installed package {PACKAGE_DIR}; choose another file")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: the directory {out.parent} does not exist")


def make_bundle(arch: str, out: Path, kern: Path, version: str, progress=lambda msg: None) -> BundleResult:
    """Writes the bundle to `out` through a temporary file and a rename: complete or absent."""
    if not kern.is_file():
        what = "not a regular file (a directory, FIFO or device)" if kern.exists() else "no such file"
        raise InputError(f"--kern {kern}: {what}; give the boardlab-kern binary built for {arch}")
    built_for = elf_arch(kern)
    if built_for != arch:
        raise InputError(
            f"--kern {kern}: built for {built_for or 'an unknown architecture'}, not {arch}; "
            f"cross-build it for {arch} (`make cross` in boardlab's source tree)"
        )
    _check_out(out, [kern])
    libraries = needed_libraries(kern)
    progress(f"wheel: packing boardlab {version} from {PACKAGE_DIR}")
    wheel_name, wheel = build_wheel(version, libraries)
    presets = sorted((PACKAGE_DIR / "campaign" / "presets").glob("*.toml"))
    machines = ARCHES[arch][2]
    debs = " ".join(RUNTIME_LIBS[lib] for lib in libraries) or "libc6"
    install = INSTALL_SH.replace("@ARCH@", arch).replace("@MACHINES@", " ".join(machines))
    install = install.replace("@DEBS@", debs)
    manifest: dict[str, Any] = {
        "schema": BUNDLE_SCHEMA,
        "boardlab_version": version,
        "arch": arch,
        "machines": list(machines),
        "wheel": f"wheels/{wheel_name}",
        "kern": {"file": "boardlab-kern", "sha256": hashlib.sha256(kern.read_bytes()).hexdigest()},
        "libraries": list(libraries),
        "debian_packages": debs.split(),
        "created_unix_s": int(time.time()),
        "files": {},  # every file but this manifest: its sha256, checked by install.sh (sha256sum -c)
    }
    top = out.name[: -len(".tar.gz")]
    progress(f"bundle: writing {out} ({arch}, boardlab-kern from {kern})")
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:

            def add(name: str, data: bytes, mode: int = 0o644) -> None:
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size, info.mode, info.mtime = len(data), mode, manifest["created_unix_s"]
                tar.addfile(info, io.BytesIO(data))
                if name != "bundle.json":
                    manifest["files"][name] = hashlib.sha256(data).hexdigest()

            add("install.sh", install.encode(), 0o755)
            add("boardlab-kern", kern.read_bytes(), 0o755)
            add(f"wheels/{wheel_name}", wheel)
            for preset in presets:
                add(f"presets/{preset.name}", preset.read_bytes())
            add("bundle.json", (json.dumps(manifest, indent=2) + "\n").encode())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    return BundleResult(out, arch, wheel_name, kern, out.stat().st_size, libraries)
