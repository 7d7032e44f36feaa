"""io.storage: file I/O like fio's basic jobs, with verified data and a latency histogram."""

from __future__ import annotations

import pytest

from helpers import kern_json, kern_ok_or_skip

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
    rc, res = storage(kern, path, "op=write", "size_bytes=256k")
    kern_ok_or_skip(rc, res)
    assert path.exists() and path.stat().st_size >= 256 * 1024


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
