"""mibench.gsm: the GSM 06.10 full-rate speech codec (encode + decode), specified through boardlab-kern."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys

import pytest

from helpers import kern_json, run_kern, under_qemu_user

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
RATES = ("frames_per_s", "encode_frames_per_s", "decode_frames_per_s")


def gsm(kern, *params: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    args = []
    for p in params:
        args += ["--param", p]
    return kern_json(kern, "mibench.gsm", *args, *FAST, *extra)


def fnv1a(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_codes_speech_and_reports_frame_rates_per_phase(kern):
    rc, res = gsm(kern, "frames=100")
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True and res["errors"] == []
    assert res["info"]["frames"] == 100 and res["info"]["stream_bytes"] == 100 * 33  # 260 bits + signature
    assert set(res["phases_ns"]) == {"encode", "decode"}
    for name in RATES:
        m = res["metrics"][name]
        assert m["unit"] == "frames/s" and m["higher_is_better"] is True
        assert len(m["values"]) == 2
        # GSM was built for 1990s DSPs: any board codes faster than real time (50 frames/s).
        assert all(v > 50 for v in m["values"])
    # The whole iteration holds both phases, so its rate is below each phase's rate.
    for whole, enc, dec in zip(*(res["metrics"][n]["values"] for n in RATES), strict=True):
        assert whole <= enc and whole <= dec
    assert len(res["checksum"]) == 16


def test_round_trip_reaches_the_segmental_snr_and_correlation_of_gsm(kern):
    rc, res = gsm(kern, "frames=200", "seed=7")
    info = res["info"]
    assert rc == 0
    # Thresholds are several dB / well above chance, and the decoded speech clears them.
    assert info["snr_threshold_db"] >= 2 and info["correlation_threshold"] >= 0.5
    assert info["segmental_snr_db"] >= info["snr_threshold_db"]
    assert info["correlation"] >= info["correlation_threshold"]
    assert info["active_segments"] > 100  # most 20 ms segments carry speech, some are pauses


def test_short_runs_are_not_judged_on_snr_but_still_verified(kern):
    rc, res = gsm(kern, "frames=10")
    assert rc == 0 and res["verified"] is True
    assert "not applied" in res["info"]["round_trip_thresholds"]
    assert "snr_threshold_db" not in res["info"]


def test_every_encoded_parameter_lies_within_its_bit_width(kern):
    rc, res = gsm(kern, "frames=150", "seed=3")
    assert rc == 0
    assert res["info"]["parameters_out_of_range"] == 0


def test_known_answers_silence_frame_and_libgsm_vectors(kern):
    rc, res = gsm(kern, "frames=1")
    assert rc == 0
    assert res["info"]["known_answers"] == "silence frame and libgsm 1.0.22 vectors match"


def test_encoding_is_deterministic_and_depends_on_the_input(kern):
    _, a = gsm(kern, "frames=120", "seed=5")
    # another iteration count, so another number of reps, must not change the result
    same = ("--param", "frames=120", "--param", "seed=5", "--iterations", "5", "--warmup-max-iterations", "3")
    _, b = kern_json(kern, "mibench.gsm", *same)
    _, c = gsm(kern, "frames=120", "seed=6")
    assert a["checksum"] == b["checksum"] and a["info"]["decoded_fnv"] == b["info"]["decoded_fnv"]
    assert a["checksum"] != c["checksum"] and a["info"]["decoded_fnv"] != c["info"]["decoded_fnv"]


def test_a_corrupted_stream_or_output_fails_verification(kern):
    rc, res = gsm(kern, "frames=100", extra=("--corrupt",))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    errors = " ".join(res["errors"])
    assert "fresh encode" in errors and "fresh decode" in errors


@pytest.mark.parametrize(
    "param", ["frames=0", "frames=200001", "seed=-1", "seed=2147483648", "bitrate=13000"]
)
def test_out_of_range_or_unknown_parameters_are_usage_errors(kern, param):
    proc = run_kern(kern, "mibench.gsm", "--param", param, *FAST)
    assert proc.returncode == 2
    assert param.split("=")[0] in proc.stderr


def test_unreadable_or_malformed_input_files_name_the_parameter(kern, tmp_path):
    odd = tmp_path / "odd.raw"
    odd.write_bytes(b"\x01\x02\x03")
    empty = tmp_path / "empty.raw"
    empty.write_bytes(b"")
    fifo = tmp_path / "pcm.fifo"
    os.mkfifo(fifo)
    cases = (
        (tmp_path / "missing.raw", "cannot be opened"),
        (odd, "odd size"),
        (empty, "empty"),
        (fifo, "not a regular file"),  # refused at once, not waited on for a writer
        (tmp_path, "not a regular file"),
    )
    for path, why in cases:
        rc, res = gsm(kern, f"input_path={path}")
        assert rc == 2 and res["ok"] is False  # bad input: exit 2, as a bad parameter
        assert any("input_path" in e and why in e for e in res["errors"]), res["errors"]


def _test_signal(frames: int) -> list[int]:
    """Tones with noise, a clipped passage, full-scale steps and silence: the codec's ordinary and corner
    cases (saturating pre-emphasis, autocorrelation rescaling), with a partial last frame."""
    rng = random.Random(2024)
    x = []
    for i in range(frames * 160 + 77):
        v = 9000 * math.sin(i * 0.07) + 5000 * math.sin(i * 0.61) + rng.randint(-2000, 2000)
        if 3000 <= i < 4600:
            v *= 4  # clipped
        if 6000 <= i < 9000:
            v = -32768 if i < 8500 else 32767
        if 9000 <= i < 9800:
            v = 0
        x.append(max(-32768, min(32767, int(v))))
    return x


@pytest.mark.skipif(
    not (shutil.which("toast") and shutil.which("untoast")), reason="toast (libgsm-tools) absent"
)
@pytest.mark.skipif(
    sys.byteorder != "little", reason="toast -l reads host-order PCM; the kernel reads little-endian"
)
def test_stream_and_output_are_bit_exact_with_libgsm_toast(kern, tmp_path):
    # toast is the TU Berlin coder MiBench runs; the kernel must code the same file into the same octets
    # and decode them into the same samples.
    raw = tmp_path / "in.raw"
    x = _test_signal(80)
    raw.write_bytes(struct.pack(f"<{len(x)}h", *x))
    stream = subprocess.run(["toast", "-l", "-c", str(raw)], capture_output=True, check=True).stdout
    decoded = subprocess.run(["untoast", "-l", "-c"], input=stream, capture_output=True, check=True).stdout
    rc, res = gsm(kern, f"input_path={raw}")
    assert rc == 0, res.get("errors")
    assert res["info"]["frames"] == len(stream) // 33 == 81  # the partial last frame is zero-padded
    assert res["checksum"] == fnv1a(stream)
    assert res["info"]["decoded_fnv"] == fnv1a(decoded)
    assert "not applied" in res["info"]["round_trip_thresholds"]


def test_default_run_finishes_within_the_time_budget(kern):
    """The default is sized for a native run of under 5 s of CPU time (CPU, not wall time: on a loaded machine
    the wall time measures the other load). Under qemu-user only the run itself and its size are checked: the
    translator's time says nothing of a board's."""
    emulated = under_qemu_user()
    proc = run_kern(kern, "mibench.gsm", "--json", timeout=600 if emulated else 30)
    assert proc.returncode == 0
    res = json.loads(proc.stdout)
    assert res["params"]["frames"] == 250
    if not emulated:
        assert res["rusage"]["utime_us"] + res["rusage"]["stime_us"] < 5e6
