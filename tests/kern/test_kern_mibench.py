"""MiBench-style kernels (network, security, telecomm), specified through boardlab-kern."""

from __future__ import annotations

import hashlib
import json
import math
import zlib

import pytest

from helpers import kern_json, run_kern

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")

# Small problems, so that each run takes a fraction of a second.
SMALL = {
    "mibench.dijkstra": ("nodes=40",),
    "mibench.patricia": ("prefixes=500", "lookups=2000"),
    "mibench.blowfish": ("bytes=4096",),
    "mibench.sha1": ("bytes=10000",),
    "mibench.crc32": ("bytes=10000",),
    "mibench.adpcm": ("samples=8192",),
    "mibench.fft": ("points=256",),
}

# The primary metric of each kernel, with its unit.
PRIMARY = {
    "mibench.dijkstra": ("paths_per_s", "paths/s"),
    "mibench.patricia": ("lookups_per_s", "lookups/s"),
    "mibench.blowfish": ("mb_s", "MB/s"),
    "mibench.sha1": ("mb_s", "MB/s"),
    "mibench.crc32": ("mb_s", "MB/s"),
    "mibench.adpcm": ("samples_per_s", "samples/s"),
    "mibench.fft": ("mflops", "MFLOPS"),
}


def run(kern, name: str, *params: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    args = [name, *FAST, *extra]
    for p in params:
        args += ["--param", p]
    return kern_json(kern, *args)


def small(kern, name: str, *more: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    return run(kern, name, *SMALL[name], *more, extra=extra)


def splitmix_bytes(seed: int, n: int) -> bytes:
    """The low byte of each splitmix64 output: how the kernels fill a message from its seed."""
    mask = (1 << 64) - 1
    state, out = seed, bytearray(n)
    for i in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out[i] = (z ^ (z >> 31)) & 0xFF
    return bytes(out)


# ---- every kernel ----


def test_the_catalog_lists_the_family_with_units(kern):
    proc = run_kern(kern, "--list", "--json")
    catalog = {k["name"]: k for k in json.loads(proc.stdout)["kernels"]}
    for name, (metric, unit) in PRIMARY.items():
        spec = catalog[name]
        assert spec["family"] == "mibench" and spec["supported"] is True
        assert spec["metrics"][0]["name"] == metric and spec["metrics"][0]["unit"] == unit
        assert all(m["higher_is_better"] is (m["unit"] != "us") for m in spec["metrics"])
        assert spec["params"], f"{name} has no parameters for its problem size"


@pytest.mark.parametrize("name", SMALL)
def test_runs_and_verifies_with_small_parameters(kern, name):
    rc, res = small(kern, name)
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True and res["errors"] == []
    assert res["workload"] == name and res["family"] == "mibench"
    assert len(res["checksum"]) >= 16
    metric, unit = PRIMARY[name]
    assert res["metrics"][metric]["unit"] == unit
    for m in res["metrics"].values():
        assert len(m["values"]) == 2
        assert all(math.isfinite(v) and v > 0 for v in m["values"])


@pytest.mark.parametrize("name", SMALL)
def test_a_corrupted_result_is_an_error_not_a_time(kern, name):
    rc, res = small(kern, name, extra=("--corrupt",))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False
    assert res["metrics"] == {} and res["errors"]


@pytest.mark.parametrize("name", SMALL)
def test_the_same_seed_gives_the_same_result_and_another_seed_another(kern, name):
    _, a = small(kern, name, "seed=7")
    _, b = small(kern, name, "seed=7")
    _, c = small(kern, name, "seed=8")
    assert a["checksum"] == b["checksum"] != c["checksum"]


@pytest.mark.parametrize(
    ("name", "param"),
    [
        ("mibench.dijkstra", "nodes=1"),
        ("mibench.dijkstra", "nodes=5000"),
        ("mibench.dijkstra", "max_weight=0"),
        ("mibench.patricia", "prefixes=0"),
        ("mibench.patricia", "lookups=0"),
        ("mibench.blowfish", "bytes=4"),
        ("mibench.blowfish", "mode=ecb"),
        ("mibench.sha1", "bytes=0"),
        ("mibench.crc32", "bytes=0"),
        ("mibench.adpcm", "samples=100"),
        ("mibench.adpcm", "sample_rate_hz=100000"),
        ("mibench.fft", "points=8"),
        ("mibench.fft", "waves=0"),
    ],
)
def test_out_of_range_parameters_are_usage_errors(kern, name, param):
    proc = run_kern(kern, name, "--param", param)
    assert proc.returncode == 2
    assert param.split("=")[0] in proc.stderr


@pytest.mark.parametrize(
    ("name", "params", "culprit"),
    [
        ("mibench.dijkstra", ("nodes=10", "sources=11"), "sources"),
        ("mibench.blowfish", ("mode=cbc", "bytes=1001"), "bytes"),
        ("mibench.fft", ("points=1000",), "points"),
    ],
)
def test_values_the_ranges_cannot_catch_fail_naming_the_parameter(kern, name, params, culprit):
    rc, res = run(kern, name, *params)
    assert rc == 1 and res["ok"] is False
    assert any(f"'{culprit}'" in e for e in res["errors"])


@pytest.mark.parametrize(
    ("name", "whole", "per_phase", "phases"),
    [
        ("mibench.patricia", None, 0, {"insert": "inserts_per_s", "lookup": "lookups_per_s"}),
        ("mibench.blowfish", "mb_s", 1, {"encrypt": "encrypt_mb_s", "decrypt": "decrypt_mb_s"}),
        (
            "mibench.adpcm",
            "samples_per_s",
            1,
            {"encode": "encode_samples_per_s", "decode": "decode_samples_per_s"},
        ),
        ("mibench.fft", "mflops", 2, {"forward": "forward_mflops", "inverse": "inverse_mflops"}),
    ],
)
def test_phases_are_timed_apart_within_the_iteration(kern, name, whole, per_phase, phases):
    """`per_phase`: how many phases' amounts the whole-iteration metric counts (blowfish: the bytes once,
    round trip; fft: the flops of both transforms)."""
    _, res = small(kern, name)
    for phase in phases:
        assert len(res["phases_ns"][phase]) == 2
    for i, it in enumerate(res["iterations_ns"]):
        assert 0 < sum(res["phases_ns"][p][i] for p in phases) < it
        if whole:
            # time = amount / rate, and the phases together take less than the iteration
            phase_time = sum(1 / res["metrics"][m]["values"][i] for m in phases.values())
            assert phase_time < per_phase / res["metrics"][whole]["values"][i]


# ---- known answers and independent checks ----


@pytest.mark.parametrize("mode", ["cfb64", "cbc"])
def test_blowfish_passes_schneiers_vectors_in_each_mode(kern, mode):
    # 34 ECB vectors, 24 variable-key-length vectors, and the CBC and CFB64 chaining vectors.
    rc, res = small(kern, "mibench.blowfish", f"mode={mode}")
    assert rc == 0
    assert res["info"]["kat"] == "pass" and res["info"]["kat_vectors"] == 60
    assert res["info"]["cipher_mode"] == mode


def test_blowfish_modes_give_different_ciphertexts(kern):
    _, cfb = small(kern, "mibench.blowfish", "mode=cfb64")
    _, cbc = small(kern, "mibench.blowfish", "mode=cbc")
    assert cfb["checksum"] != cbc["checksum"]


def test_blowfish_cfb64_takes_a_length_that_is_not_a_whole_block(kern):
    rc, res = run(kern, "mibench.blowfish", "bytes=1003")
    assert rc == 0 and res["verified"] is True


@pytest.mark.parametrize("nbytes", [1, 55, 56, 64, 10000])
def test_sha1_digest_is_hashlibs_digest_of_the_same_message(kern, nbytes):
    # Lengths around the padding boundary (55/56 bytes) and whole blocks.
    rc, res = run(kern, "mibench.sha1", f"bytes={nbytes}", "seed=3")
    assert rc == 0
    # the FIPS 180 vectors ("abc", the 448- and 896-bit messages, one million 'a') and the empty message
    assert res["info"]["kat"] == "pass" and res["info"]["kat_vectors"] == 5
    assert res["checksum"] == hashlib.sha1(splitmix_bytes(3, nbytes)).hexdigest()


def test_crc32_has_the_catalogue_check_value_and_matches_zlib(kern):
    rc, res = run(kern, "mibench.crc32", "bytes=10000", "seed=5")
    assert rc == 0
    assert res["info"]["kat"] == "pass"
    assert res["info"]["check_value"] == 0xCBF43926 == zlib.crc32(b"123456789")
    assert int(res["checksum"], 16) == zlib.crc32(splitmix_bytes(5, 10000))


def test_adpcm_known_answer_and_a_voice_quality_round_trip(kern):
    rc, res = run(kern, "mibench.adpcm", "samples=65536")
    assert rc == 0
    assert res["info"]["kat"] == "pass"
    # 4-bit IMA ADPCM on voice: clearly a working codec, clearly lossy.
    assert 18 < res["info"]["snr_db"] < 45


def test_adpcm_voice_is_coded_at_other_sample_rates(kern):
    rc, res = run(kern, "mibench.adpcm", "samples=16384", "sample_rate_hz=16000")
    assert rc == 0 and res["info"]["snr_db"] > 10


def test_fft_finds_a_single_tone_and_inverts_exactly(kern):
    rc, res = run(kern, "mibench.fft", "points=1024", "waves=8")
    assert rc == 0
    assert res["info"]["kat"] == "pass"  # a cosine at one bin transforms to a peak there only
    assert res["info"]["dft_max_rel_error"] < 1e-12
    assert res["info"]["roundtrip_max_rel_error"] < 1e-12


def test_fft_mflops_counts_five_n_log2_n_per_transform(kern):
    _, res = run(kern, "mibench.fft", "points=512")
    reps = res["reps_per_iteration"]
    for ns, mflops in zip(res["iterations_ns"], res["metrics"]["mflops"]["values"], strict=True):
        assert mflops == pytest.approx(2 * 5 * 512 * 9 * reps / ns * 1e3, rel=1e-6)


def test_dijkstra_agrees_with_floyd_warshall_on_small_graphs(kern):
    rc, res = run(kern, "mibench.dijkstra", "nodes=100", "sources=0")
    assert rc == 0
    assert res["info"]["verify_method"] == "bellman-equations+floyd-warshall"
    # 100 x 99 paths per rep
    reps = res["reps_per_iteration"]
    ns = res["iterations_ns"][0]
    assert res["metrics"]["paths_per_s"]["values"][0] == pytest.approx(100 * 99 * reps / ns * 1e9, rel=1e-6)


def test_dijkstra_on_large_graphs_is_checked_by_bellmans_equations(kern):
    rc, res = run(kern, "mibench.dijkstra", "nodes=600", "sources=2")
    assert rc == 0 and res["verified"] is True
    assert res["info"]["verify_method"] == "bellman-equations"


def test_dijkstra_heavier_edges_make_longer_paths(kern):
    _, light = run(kern, "mibench.dijkstra", "nodes=50", "max_weight=10")
    _, heavy = run(kern, "mibench.dijkstra", "nodes=50", "max_weight=1000")
    assert light["info"]["mean_distance"] < heavy["info"]["mean_distance"]


def test_patricia_checks_every_lookup_by_linear_scan_on_small_tables(kern):
    rc, res = small(kern, "mibench.patricia")
    assert rc == 0
    assert res["info"]["verify_method"] == "linear-scan"
    assert res["info"]["verify_linear_scan_lookups"] == 2000
    # four fifths of the addresses are drawn inside routed prefixes
    assert 0.75 < res["info"]["matched_fraction"] <= 1.0
    assert 500 <= res["info"]["trie_nodes"] <= 1000


def test_patricia_large_tables_are_checked_by_sorted_search_and_a_sampled_scan(kern):
    rc, res = run(kern, "mibench.patricia", "prefixes=20000", "lookups=20001")
    assert rc == 0 and res["verified"] is True
    assert res["info"]["verify_method"] == "sorted-search+sampled-linear-scan"
    assert 0 < res["info"]["verify_linear_scan_lookups"] < 20001
