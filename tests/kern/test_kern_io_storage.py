"""io.storage: file I/O like fio's basic jobs, with verified data and a latency histogram."""

from __future__ import annotations

import json
import os

import pytest

from helpers import IO_URING_SETUP, kern_json, kern_json_denying, kern_ok_or_skip

FAST = ("--iterations", "3", "--warmup-max-iterations", "3")


def storage(kern, path, *params, extra=FAST):
    args = ["--param", f"path={path}"]
    args += [a for p in params for a in ("--param", p)]
    return kern_json(kern, "io.storage", *args, *extra)


@pytest.mark.parametrize("op", ["read", "write", "randrw"])
@pytest.mark.parametrize("pattern", ["seq", "rand"])
@pytest.mark.parametrize("direct", ["0", "1"])
def test_every_op_and_pattern_moves_verified_data(kern, tmp_path, op, pattern, direct):
    path = tmp_path / "data with space.bin"
    rc, res = storage(
        kern, path, f"op={op}", f"pattern={pattern}", f"direct={direct}", "bs=16k", "size_bytes=1M"
    )
    kern_ok_or_skip(rc, res)
    m = res["metrics"]
    # bandwidth is bs per I/O times IOPS, iteration by iteration.
    for bw, iops in zip(m["bandwidth_mb_s"]["values"], m["iops"]["values"], strict=True):
        assert bw == pytest.approx(iops * 16384 / 1e6, rel=1e-9)
    assert m["bandwidth_mb_s"]["unit"] == "MB/s" and m["iops"]["unit"] == "IO/s"
    p50, p99, p999 = (m[f"latency_{q}_ns"]["value"] for q in ("p50", "p99", "p999"))
    assert 0 < p50 <= p99 <= p999 <= res["info"]["latency_max_ns"] * (1 + 1 / 128)
    info = res["info"]
    assert info["latency_samples"] > 0
    if op == "read":
        assert info["writes"] == 0 and info["reads"] > 0
    elif op == "write":
        assert info["reads"] == 0 and info["writes"] > 0
    else:
        assert info["reads"] > 0 and info["writes"] > 0
    # boardlab created the file, so it removed it.
    assert not path.exists()


def test_latency_samples_are_the_ios_at_the_calibrated_rep_count(kern, tmp_path):
    rc, res = storage(
        kern,
        tmp_path / "f",
        "bs=4k",
        "size_bytes=256k",
        extra=("--iterations", "4", "--warmup-max-iterations", "0"),
    )
    kern_ok_or_skip(rc, res)
    # The 4 measured iterations, plus the one or two calibration iterations that confirmed the rep count.
    reps, samples = res["reps_per_iteration"], res["info"]["latency_samples"]
    assert samples % reps == 0 and 4 * reps <= samples <= 6 * reps


def test_damaged_data_on_disk_fails_verification(kern, tmp_path):
    rc, res = storage(kern, tmp_path / "f", "size_bytes=512k", extra=(*FAST, "--corrupt"))
    assert rc == 1 and res["verified"] is False and res["metrics"] == {}
    assert any("differs from the written pattern at byte 0" in e for e in res["errors"]), res["errors"]


def test_an_existing_file_is_kept(kern, tmp_path):
    path = tmp_path / "keep.bin"
    path.write_bytes(b"x" * 100)
    rc, res = storage(kern, path, "op=write", "size_bytes=256k", "destructive=1")
    kern_ok_or_skip(rc, res)
    assert path.exists() and path.stat().st_size >= 256 * 1024


@pytest.mark.parametrize("op", ["read", "write", "randrw"])
def test_a_users_file_without_the_pattern_is_refused_and_left_as_it_was(kern, tmp_path, op):
    """Before: the prefill wrote the pattern over any existing file, even for op=read (notes became 256 KiB
    of pattern), unless it held the pattern already."""
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes, keep me\n")
    rc, res = storage(kern, path, f"op={op}", "size_bytes=256k", "bs=64k")
    assert rc == 1 and res["ok"] is False, res
    assert any(
        f"path={path} is an existing file that does not hold io.storage's pattern" in e
        and "set destructive=1" in e
        for e in res["errors"]
    ), res["errors"]
    assert path.read_bytes() == b"my notes, keep me\n"


def test_an_empty_file_and_a_file_holding_the_pattern_run_as_before(kern, tmp_path):
    empty = tmp_path / "empty.bin"
    empty.touch()
    rc, res = storage(kern, empty, "op=read", "size_bytes=256k", "bs=64k")
    kern_ok_or_skip(rc, res)
    laid_out = tmp_path / "laid-out.bin"  # as xcheck lays a file out: written once and kept
    rc, res = storage(kern, laid_out, "op=write", "size_bytes=256k", "bs=64k", "keep_file=1")
    kern_ok_or_skip(rc, res)
    rc, res = storage(kern, laid_out, "op=read", "size_bytes=256k", "bs=64k")
    kern_ok_or_skip(rc, res)
    assert res["info"]["prefill"].startswith("skipped: the region already holds the pattern")
    rc, res = storage(kern, laid_out, "op=write", "size_bytes=256k", "bs=64k")
    kern_ok_or_skip(rc, res)
    assert laid_out.stat().st_size == 256 * 1024


@pytest.mark.parametrize("iodepth", ["1", "8"])
def test_io_uring_keeps_iodepth_in_flight(kern, tmp_path, iodepth):
    rc, res = storage(
        kern,
        tmp_path / "f",
        "engine=io_uring",
        f"iodepth={iodepth}",
        "pattern=rand",
        "bs=4k",
        "size_bytes=1M",
    )
    kern_ok_or_skip(rc, res)
    assert res["params"]["iodepth"] == int(iodepth)


@pytest.mark.parametrize("fsync", ["each", "end"])
def test_fsync_policies_run(kern, tmp_path, fsync):
    rc, res = storage(kern, tmp_path / "f", "op=write", f"fsync={fsync}", "size_bytes=256k", "bs=64k")
    kern_ok_or_skip(rc, res)


def test_psync_with_iodepth_is_refused_with_the_fix(kern, tmp_path):
    rc, res = storage(kern, tmp_path / "f", "iodepth=4")
    assert rc == 1 and any("engine=io_uring" in e for e in res["errors"]), res["errors"]


def test_without_a_path_nothing_is_written(kern):
    rc, res = kern_json(kern, "io.storage", *FAST)
    assert rc == 1 and any("path=" in e for e in res["errors"]), res["errors"]


def test_a_character_device_is_refused(kern):
    rc, res = storage(kern, "/dev/null")
    assert rc == 1 and any("neither a regular file nor a block device" in e for e in res["errors"])


def test_the_alignment_for_o_direct_is_reported(kern, tmp_path):
    rc, res = storage(kern, tmp_path / "f", "direct=1", "size_bytes=256k")
    kern_ok_or_skip(rc, res)
    assert res["info"]["align_bytes"] in (512, 1024, 2048, 4096)
    assert res["info"]["align_source"]
    assert res["info"]["filesystem"]


def test_a_directory_gets_a_private_temporary_file_removed_afterwards(kern, tmp_path):
    rc, res = storage(kern, tmp_path, "op=randrw", "size_bytes=256k")
    kern_ok_or_skip(rc, res)
    assert list(tmp_path.iterdir()) == []


def test_io_uring_denied_by_seccomp_is_unsupported_with_the_reason(kern, tmp_path):
    # A container's default seccomp profile (or kernel.io_uring_disabled, which this shared machine's
    # tests must not flip) makes io_uring_setup fail with EPERM: the run says so and measures nothing.
    path = tmp_path / "f"
    rc, res = kern_json_denying(
        kern,
        IO_URING_SETUP,
        "io.storage",
        *("--param", f"path={path}", "--param", "engine=io_uring", "--param", "size_bytes=256k"),
        *FAST,
    )
    if res.get("supported") is False and "built without liburing" in res["reason"]:
        pytest.skip(res["reason"])
    assert rc == 1 and res["supported"] is False and not res["ok"] and res["metrics"] == {}
    assert res["reason"].startswith("io_uring denied (io_uring_setup: Operation not permitted)")
    assert "kernel.io_uring_disabled or a seccomp filter" in res["reason"]
    assert not path.exists()


def _ramfs_mount_prefix() -> list[str]:
    """A command prefix running its command with a fresh ramfs mounted in a private mount namespace (root,
    or an unprivileged user namespace: ramfs mounts there), or [] where neither is possible."""
    import shutil
    import subprocess

    if not shutil.which("unshare"):
        return []
    ns = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    probe = subprocess.run([*ns, "sh", "-c", "mount -t ramfs ramfs /mnt"], capture_output=True, timeout=30)
    return ns if probe.returncode == 0 else []


def test_o_direct_rejected_by_the_file_system_is_unsupported_with_its_name(kern, tmp_path):
    import subprocess

    # tmpfs rejected O_DIRECT before Linux 6.6; ramfs still does. Either way the run names the file system.
    ns = _ramfs_mount_prefix()
    if not ns:
        pytest.skip("cannot mount a ramfs here (needs root or unprivileged user namespaces, and unshare)")
    mnt = tmp_path / "ram fs"
    mnt.mkdir()
    target = mnt / "data.bin"
    script = 'mount -t ramfs ramfs "$1" || exit 99; d=$1; shift; "$@" --json; rc=$?; ls -A "$d" >&2; exit $rc'
    proc = subprocess.run(
        [*ns, "sh", "-c", script, "sh", str(mnt), str(kern), "io.storage"]
        + ["--param", f"path={target}", "--param", "direct=1", "--param", "size_bytes=256k", *FAST],
        capture_output=True,
        text=True,
        timeout=120,
    )
    res = json.loads(proc.stdout)
    assert proc.returncode == 1 and res["supported"] is False and res["metrics"] == {}
    assert res["reason"].startswith(f"O_DIRECT rejected by ramfs (open {target}: Invalid argument)")
    assert "use direct=0" in res["reason"]
    # The file open(O_CREAT|O_DIRECT) made before refusing was removed: the ramfs is left empty.
    assert proc.stderr.strip() == ""
    # Without O_DIRECT the same file system serves the run.
    proc = subprocess.run(
        [*ns, "sh", "-c", script, "sh", str(mnt), str(kern), "io.storage"]
        + ["--param", f"path={target}", "--param", "direct=0", "--param", "size_bytes=256k", *FAST],
        capture_output=True,
        text=True,
        timeout=120,
    )
    res = json.loads(proc.stdout)
    assert proc.returncode == 0 and res["ok"] and res["info"]["filesystem"] == "ramfs"


def test_o_direct_on_tmpfs_runs_or_says_tmpfs_rejects_it_as_the_kernel_decides(kern):
    import platform
    import tempfile

    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.statvfs(shm).f_bavail * os.statvfs(shm).f_frsize < (4 << 20):
        pytest.skip("no tmpfs at /dev/shm with 4 MiB free")
    with tempfile.TemporaryDirectory(dir=shm) as d:
        target = os.path.join(d, "data.bin")
        rc, res = storage(kern, target, "direct=1", "size_bytes=256k")
        if res.get("info", {}).get("filesystem") not in (None, "tmpfs"):
            pytest.skip(f"/dev/shm is {res['info']['filesystem']}, not tmpfs")
        major, minor = (int(x) for x in platform.release().split(".")[:2])
        if (major, minor) >= (6, 6):  # shmem gained O_DIRECT in 6.6
            assert rc == 0 and res["ok"] and res["info"]["filesystem"] == "tmpfs"
        else:
            assert rc == 1 and res["supported"] is False
            assert res["reason"].startswith("O_DIRECT rejected by tmpfs")
        assert os.listdir(d) == []
