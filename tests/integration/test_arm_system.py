"""A booted ARM Linux: the board bundle installed and a cut quick campaign run in a full-system qemu (KVM off)
booting Debian 12 with Debian's own kernel, arm64 (`-cpu cortex-a72,pmu=on`) and armhf (`-cpu cortex-a15`).

`make test-arm-system` runs it (root): cross/rootfs.sh makes (or reuses) the root filesystems with the
kernel, cross/system.sh boots each with cross/system-guest.sh as init, and the guest writes each step's output
and exit code onto a second disk; these tests read that on the host. Only correctness is checked: the
timings of an emulated CPU mean nothing (the --help and info times are printed as a ratio to the host's).

BOARDLAB_ARM_SYSTEM_ROOTFS: the trees are ROOTFS-arm64 and ROOTFS-armhf; BOARDLAB_ARM_SYSTEM_KERN: one holding
arm64/ and armhf/ cross builds (build-arm); BOARDLAB_ARM_SYSTEM_OUT: where each guest's results are kept
(OUT/ARCH/out: the report, the database, the captured fixture tree; OUT/ARCH/console.log).
BOARDLAB_ARM_SYSTEM_RUN_ARGS: the plan options that cut the quick campaign; BOARDLAB_ARM_SYSTEM_DEADLINE_S:
each boot's deadline (qemu is killed then).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers import FLAGS, chromium, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOTFS = os.environ.get("BOARDLAB_ARM_SYSTEM_ROOTFS")
KERN = os.environ.get("BOARDLAB_ARM_SYSTEM_KERN")
OUT = os.environ.get("BOARDLAB_ARM_SYSTEM_OUT")
RUN_ARGS = os.environ.get("BOARDLAB_ARM_SYSTEM_RUN_ARGS", "--repetitions 1 --scale 0.2")
DEADLINE_S = int(os.environ.get("BOARDLAB_ARM_SYSTEM_DEADLINE_S", "1800"))
REPO = Path(__file__).resolve().parents[2]
QEMU = {"arm64": "qemu-system-aarch64", "armhf": "qemu-system-arm"}
CORE = {"arm64": "Cortex-A72", "armhf": "Cortex-A15"}
MACHINE = {"arm64": "aarch64", "armhf": "armv7l"}
STEPS = (
    "no_compiler unpack install help_cold help info info_json list run report report_text export "
    "restore capture"
).split()


def _skip_reason(arch: str) -> str | None:
    if not ROOTFS or not KERN or not OUT:
        return "run by `make test-arm-system` (needs BOARDLAB_ARM_SYSTEM_ROOTFS, _KERN and _OUT)"
    if os.geteuid() != 0:
        return "needs root (the root filesystem's files belong to root)"
    if not Path(f"{ROOTFS}-{arch}", ".boardlab-rootfs-ok").exists():
        return f"{ROOTFS}-{arch} is not a finished root filesystem: run `make test-arm-system`"
    if not shutil.which(QEMU[arch]):
        return f"{QEMU[arch]} missing: apt-get install qemu-system-arm"
    if not shutil.which("mke2fs"):
        return "mke2fs missing: apt-get install e2fsprogs"
    return None


def _kern(arch: str) -> Path:
    return Path(KERN or "", arch, "src/boardlab/kern/boardlab-kern")


@pytest.fixture(scope="module", params=["arm64", "armhf"])
def guest(request):
    """Boots ARCH's guest once and returns its output directory; the boot's wall time is printed."""
    arch = request.param
    reason = _skip_reason(arch)
    if reason:
        pytest.skip(reason)
    work = Path(OUT or "", arch)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bundle = work / f"boardlab-{arch}.tar.gz"
    made = run_cli("bundle", "--arch", arch, "--kern", str(_kern(arch)), "--out", str(bundle))
    assert made.returncode == 0, made.stderr
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(REPO / "cross/system.sh"), arch, f"{ROOTFS}-{arch}", str(bundle), str(work), str(DEADLINE_S)],
        capture_output=True,
        text=True,
        env={**os.environ, "RUN_ARGS": RUN_ARGS},
        timeout=DEADLINE_S + 600,  # the image is made before the deadline starts
    )
    took = time.monotonic() - t0
    print(f"== {arch}: {took:.0f} s\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    assert proc.returncode == 0, (
        f"{arch}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return arch, work / "out"


def steps(out: Path) -> dict[str, tuple[int, float]]:
    """name -> (exit code, seconds) from the guest's steps.txt."""
    result = {}
    for line in (out / "steps.txt").read_text().splitlines():
        name, rc, t0, t1 = line.split()
        result[name] = (int(rc), float(t1) - float(t0))
    return result


def test_every_step_ran_in_the_guest_and_exited_zero(guest):
    arch, out = guest
    done = steps(out)
    assert list(done) == STEPS
    failed = {n: (out / f"{n}.err").read_text()[-2000:] for n, (rc, _) in done.items() if rc != 0}
    assert not failed, f"{arch}: {failed}"


def test_the_guest_is_debian_s_arm_kernel_with_no_compiler(guest):
    arch, out = guest
    uname = (out / "uname.txt").read_text()
    assert MACHINE[arch] in uname and ("arm64" in uname or "armmp-lpae" in uname)
    assert (
        "installed in /opt/boardlab" in (out / "install.out").read_text() + (out / "install.err").read_text()
    )


def test_no_step_printed_a_traceback(guest):
    arch, out = guest
    for f in sorted(out.glob("*.err")) + sorted(out.glob("*.out")):
        assert "Traceback" not in f.read_text(errors="replace"), f"{arch}: {f.name}"


def test_info_names_the_core_its_cluster_and_the_pmu_events(guest):
    arch, out = guest
    doc = json.loads((out / "info_json.out").read_text())
    assert doc["machine"] == MACHINE[arch]
    assert [c["name"] for c in doc["clusters"]] == [CORE[arch]]
    assert doc["clusters"][0]["cpus"] == [0, 1]
    assert doc["compatible"] and doc["compatible"][0] == "linux,dummy-virt"  # QEMU's device tree
    perf = doc["perf"]
    events = {e["name"]: e for e in perf["events"]}
    assert set(events) == {"cycles", "instructions"}
    for name, ev in events.items():
        assert ev["opened"] or ev["reason"], f"{arch}: {name} neither opened nor explained"
    # arm64, pmu=on: the emulated PMUv3 counts cycles; QEMU offers INST_RETIRED only with -icount
    if arch == "arm64":
        assert perf["core_pmus"] == ["armv8_pmuv3"]
        assert events["cycles"]["opened"]
        assert (
            events["instructions"]["opened"]
            or "does not map this generic event" in events["instructions"]["reason"]
        )
    else:  # QEMU's virt machine gives -cpu cortex-a15 no PMU node
        assert perf["core_pmus"] == [] and all(
            "no CPU PMU is registered" in e["reason"] for e in events.values()
        )


def test_every_kernel_run_was_verified(guest):
    arch, out = guest
    runs = json.loads((out / "export.json").read_text())["runs"]
    assert runs
    bad = [(r["cell"], r["error"] or r["invalid_reason"]) for r in runs if not (r["ok"] and r["valid"])]
    assert not bad, f"{arch}: {bad}"


def test_the_report_rendered_in_the_guest(guest):
    arch, out = guest
    html = (out / "report.html").read_text()
    text = (out / "report_text.out").read_text()
    workloads = {r["workload"] for r in json.loads((out / "export.json").read_text())["runs"]}
    for w in workloads:
        assert w in html and w in text, f"{arch}: {w}"
    assert "<svg" in html


def test_the_guest_s_report_renders_in_chromium_on_the_host_without_a_page_error(guest, tmp_path):
    arch, out = guest
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1200,3000", "--enable-logging=stderr", "--v=0", (out / "report.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 50_000, f"{arch}: {proc.stderr[-2000:]}"
    assert [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line] == []


def test_restore_found_nothing_left_to_undo(guest):
    _, out = guest
    doc = json.loads((out / "restore.out").read_text())
    assert not doc.get("failed"), doc


def test_nothing_was_left_running(guest):
    arch, out = guest
    assert (out / "leftover.txt").read_text() == "", f"{arch}: still running at the end"


def test_the_fixture_tree_was_captured(guest):
    _, out = guest
    tree = out / "tree"
    assert (tree / "proc/cpuinfo").is_file() and (tree / "sys/devices/system/cpu/online").is_file()
    info = run_cli("info", "--root", str(tree), "--json")
    assert info.returncode == 0, info.stderr


def test_help_and_info_times_in_the_guest(guest):
    """Printed, not asserted: an emulated CPU's times are a ratio to the host's, written in docs/boards.md."""
    arch, out = guest
    done = steps(out)
    print(
        f"{arch} guest: --help {done['help'][1]:.2f} s (cold {done['help_cold'][1]:.2f} s), info "
        f"{done['info'][1]:.2f} s"
    )
    print(
        f"{arch} guest: install {done['install'][1]:.0f} s, run {done['run'][1]:.0f} s, report "
        f"{done['report'][1]:.0f} s"
    )
