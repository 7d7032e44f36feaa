"""The crypto family of boardlab-kern: libcrypto's EVP API, the kernel crypto API (AF_ALG) and random
sources."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest

from helpers import kern_json, run_kern

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
SMALL = ("--param", "bytes=64k")

# Each algorithm: its AF_ALG socket type and kernel name, and the standard vectors its known-answer test must
# name.
ALGORITHMS = {
    "aes-128-gcm": ("aead", "gcm(aes)", ["GCM test case 2", "GCM test case 3", "GCM test case 4"]),
    "aes-256-gcm": ("aead", "gcm(aes)", ["GCM test case 14", "GCM test case 15", "GCM test case 16"]),
    "aes-128-cbc": ("skcipher", "cbc(aes)", ["SP 800-38A F.2.1"]),
    "chacha20-poly1305": ("aead", "rfc7539(chacha20,poly1305)", ["RFC 8439 2.8.2"]),
    "sha1": ("hash", "sha1", ['FIPS 180 "abc"']),
    "sha256": ("hash", "sha256", ['FIPS 180 "abc"']),
    "md5": ("hash", "md5", ['RFC 1321 "abc"']),
}
PROC_TYPES = {"aead": {"aead"}, "skcipher": {"skcipher", "lskcipher"}, "hash": {"shash", "ahash"}}


def evp(kern, *params: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, "crypto.evp", *FAST, *SMALL, *args, *extra)


# ---- crypto.evp ----


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_evp_runs_verified_with_its_known_answers(kern, algorithm):
    rc, res = evp(kern, f"algorithm={algorithm}")
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True and res["supported"] is True
    info = res["info"]
    assert info["kat"] == "pass"
    for vector in ALGORITHMS[algorithm][2]:
        assert vector in info["kat_vectors"]
    assert info["openssl_version"].startswith("OpenSSL ")
    assert info["blocks_per_rep"] == 4  # 64 KiB in 16 KiB calls
    metric = res["metrics"]["mb_s"]
    assert metric["unit"] == "MB/s" and metric["higher_is_better"] is True
    # MB = 1e6 bytes: the rate follows from the bytes per rep and each iteration's time.
    reps = res["reps_per_iteration"]
    for ns, value in zip(res["iterations_ns"], metric["values"], strict=True):
        assert value == pytest.approx(65536 * reps / ns * 1e3, rel=1e-6)
    assert 1 < metric["median"] < 100_000
    assert re.fullmatch(r"[0-9a-f]{16}", res["checksum"])


def test_evp_output_is_deterministic_and_depends_on_the_block_size(kern):
    _, a = evp(kern, "algorithm=aes-128-gcm")
    _, b = evp(kern, "algorithm=aes-128-gcm")
    _, c = evp(kern, "algorithm=aes-128-gcm", "block_bytes=4096")
    assert a["checksum"] == b["checksum"]
    assert c["checksum"] != a["checksum"]  # other records: other IVs, AAD and tags
    assert c["info"]["blocks_per_rep"] == 16


def test_evp_a_last_shorter_block_is_processed_and_verified(kern):
    rc, res = evp(kern, "algorithm=chacha20-poly1305", "bytes=10000", "block_bytes=4096")
    assert rc == 0 and res["verified"] is True
    assert res["info"]["blocks_per_rep"] == 3


@pytest.mark.parametrize(
    ("algorithm", "why"),
    [
        ("aes-128-cbc", "does not decrypt to its plaintext"),  # a cipher: the round trip fails
        ("aes-128-gcm", "tag does not authenticate"),  # an AEAD: the tag check refuses it
        ("chacha20-poly1305", "tag does not authenticate"),
        ("sha256", "differs from a recomputation"),  # a hash: the recomputed digest differs
    ],
)
def test_evp_a_corrupted_output_fails_verification(kern, algorithm, why):
    rc, res = evp(kern, f"algorithm={algorithm}", extra=("--corrupt",))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any(why in e for e in res["errors"]), res["errors"]
    assert res["info"]["kat"] == "pass"  # the library is right; the benchmarked output is what was damaged


@pytest.mark.parametrize("block", ["32", "20000"])
def test_evp_block_bytes_outside_openssl_speed_sizes_is_a_usage_error(kern, block):
    proc = run_kern(kern, "crypto.evp", "--param", f"block_bytes={block}")
    assert proc.returncode == 2
    assert "block_bytes" in proc.stderr and "[64, 16384]" in proc.stderr


def test_evp_unknown_algorithm_lists_the_choices(kern):
    proc = run_kern(kern, "crypto.evp", "--param", "algorithm=des-cbc")
    assert proc.returncode == 2
    for name in ALGORITHMS:
        assert name in proc.stderr


def test_evp_cbc_needs_whole_aes_blocks(kern):
    rc, res = evp(kern, "algorithm=aes-128-cbc", "block_bytes=100")
    assert rc == 1 and res["ok"] is False
    assert any("block_bytes=100" in e and "multiples of 16" in e for e in res["errors"])


def test_evp_bytes_smaller_than_one_block_names_the_fix(kern):
    rc, res = evp(kern, "bytes=1000")
    assert rc == 1
    assert any("bytes=1000" in e and "block_bytes=16384" in e for e in res["errors"])


# ---- crypto.afalg ----


def af_alg_probe(sock_type: str, name: str) -> OSError | None:
    """None when this kernel serves `name` to an AF_ALG socket of `sock_type`, else the error it gave."""
    family = getattr(socket, "AF_ALG", None)
    if family is None:
        return OSError(97, os.strerror(97))
    try:
        s = socket.socket(family, socket.SOCK_SEQPACKET, 0)
    except OSError as e:
        return e
    with s:
        try:
            s.bind((sock_type, name))
        except OSError as e:
            return e
    return None


def af_alg_family_error() -> OSError | None:
    """None when this kernel offers AF_ALG sockets at all, else the error socket() gave."""
    family = getattr(socket, "AF_ALG", None)
    if family is None:
        return OSError(97, os.strerror(97))
    try:
        socket.socket(family, socket.SOCK_SEQPACKET, 0).close()
    except OSError as e:
        return e
    return None


def proc_crypto_best(name: str, types: set[str]) -> dict | None:
    """The /proc/crypto entry the kernel picks for `name`: the highest priority among those of a usable
    type."""
    best = None
    for block in Path("/proc/crypto").read_text().split("\n\n"):
        entry = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                entry[key.strip()] = value.strip()
        if entry.get("name") != name or entry.get("type") not in types or entry.get("internal") == "yes":
            continue
        if best is None or int(entry["priority"]) > int(best["priority"]):
            best = entry
    return best


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_afalg_reports_what_this_kernel_offers(kern, algorithm, tmp_path):
    sock_type, kname, vectors = ALGORITHMS[algorithm]
    probe = af_alg_probe(sock_type, kname)  # binding first also instantiates template algorithms
    best = proc_crypto_best(kname, PROC_TYPES[sock_type])
    rc, res = kern_json(kern, "crypto.afalg", *FAST, *SMALL, "--param", f"algorithm={algorithm}")
    no_family = af_alg_family_error()
    if no_family is not None:  # no AF_ALG at all: the catalog and the run both say unsupported, and why
        assert rc == 1 and res["ok"] is False and res["supported"] is False and res["metrics"] == {}
        assert os.strerror(no_family.errno) in res["reason"] and "CONFIG_CRYPTO_USER_API" in res["reason"]
        return
    info = res["info"]
    assert info["kernel_algorithm"] == kname and info["socket_type"] == sock_type
    if best is None:
        assert "driver" not in info and info["proc_crypto_matches"] == 0
    else:
        assert info["driver"] == best["driver"] and info["priority"] == int(best["priority"])
        assert info["module"] == best["module"] and info["selftest"] == best.get("selftest", "unknown")
        assert info["implementation"] in ("generic", "library", "cpu-instructions", "hardware-engine")
    if probe is None:
        assert rc == 0, res.get("errors")
        assert res["ok"] is True and res["verified"] is True
        assert info["kat"] == "pass" and all(v in info["kat_vectors"] for v in vectors)
        # The kernel and libcrypto encrypt the same records into the same bytes.
        _, ref = evp(kern, f"algorithm={algorithm}")
        assert res["checksum"] == ref["checksum"]
    else:
        assert rc == 1 and res["ok"] is False and res["supported"] is False
        assert os.strerror(probe.errno) in res["reason"]
        assert "CONFIG_CRYPTO_USER_API" in res["reason"]
        assert res["metrics"] == {}


def test_afalg_classifies_portable_and_library_drivers(kern):
    # Which drivers this kernel has decides what can be checked: the naming rules for the portable C code
    # ("-generic", aes-fixed-time) and the kernel crypto library ("-lib") are the ones a VM's kernel shows.
    no_family = af_alg_family_error()
    if no_family is not None:
        pytest.skip(
            f"this kernel offers no AF_ALG sockets ({no_family}): crypto.afalg runs nothing to classify"
        )
    checked = 0
    for algorithm, (sock_type, kname, _) in ALGORITHMS.items():
        best = proc_crypto_best(kname, PROC_TYPES[sock_type])
        if best is None:
            continue
        driver = best["driver"]
        leaves = [d for d in re.split(r"[(),]", driver) if d and not driver.count(d + "(")]
        if all(d.endswith("-generic") or "fixed-time" in d for d in leaves):
            expected = "generic"
        elif all(d.endswith("-lib") or d.endswith("-generic") for d in leaves):
            expected = "library"
        else:
            continue
        _, res = kern_json(kern, "crypto.afalg", *FAST, *SMALL, "--param", f"algorithm={algorithm}")
        assert res["info"]["implementation"] == expected, driver
        checked += 1
    if checked == 0:
        pytest.skip("this kernel lists no generic or library driver for these algorithms")


# ---- crypto.rng ----


def test_rng_getrandom_passes_the_monobit_test(kern):
    rc, res = kern_json(kern, "crypto.rng", *FAST)
    assert rc == 0 and res["ok"] is True and res["verified"] is True
    assert res["params"] == {"source": "getrandom", "block_bytes": 4096}
    assert 9725 < res["info"]["monobit_ones"] < 10275
    metric = res["metrics"]["mb_s"]
    assert metric["unit"] == "MB/s" and metric["higher_is_better"] is True
    assert 0.1 < metric["median"] < 100_000


def test_rng_urandom_runs_verified(kern):
    rc, res = kern_json(kern, "crypto.rng", *FAST, "--param", "source=urandom", "--param", "block_bytes=64")
    assert rc == 0 and res["verified"] is True
    assert res["info"]["device"] == "/dev/urandom"


def test_rng_a_zeroed_sample_fails_verification(kern):
    rc, res = kern_json(kern, "crypto.rng", *FAST, "--param", "block_bytes=16", "--corrupt")
    assert rc == 1 and res["ok"] is False and res["metrics"] == {}
    assert res["info"]["monobit_ones"] == 0
    assert any("not random" in e for e in res["errors"])


def test_rng_hwrng_runs_only_where_the_device_gives_data(kern):
    dev = Path("/dev/hwrng")
    current = Path("/sys/class/misc/hw_random/rng_current")
    rc, res = kern_json(kern, "crypto.rng", *FAST, "--param", "source=hwrng", "--param", "block_bytes=64")
    if current.exists():
        assert res["info"]["hwrng_current"] == current.read_text().strip()
    if not dev.exists():
        assert rc == 1 and res["supported"] is False and "no /dev/hwrng" in res["reason"]
    elif not os.access(dev, os.R_OK):
        assert rc == 1 and res["supported"] is False and "not readable" in res["reason"]
    elif current.exists() and current.read_text().strip() == "none":
        assert rc == 1 and res["supported"] is False and "gives no data" in res["reason"]
    else:
        assert rc == 0 and res["verified"] is True, res.get("reason") or res.get("errors")
        assert res["info"]["device"] == "/dev/hwrng"


@pytest.mark.parametrize("param", ["block_bytes=8", "source=rdrand"])
def test_rng_bad_parameters_are_usage_errors(kern, param):
    assert run_kern(kern, "crypto.rng", "--param", param).returncode == 2


def test_afalg_list_agrees_with_run_on_support(kern):
    listed = json.loads(run_kern(kern, "--list", "--json").stdout)
    spec = next(k for k in listed["kernels"] if k["name"] == "crypto.afalg")
    rc, res = kern_json(kern, "crypto.afalg", *FAST, *SMALL, "--param", "algorithm=sha256")
    if af_alg_family_error() is not None:
        assert spec["supported"] is False and res["supported"] is False
        assert "AF_ALG" in spec["reason"] and "CONFIG_CRYPTO_USER_API" in spec["reason"]
    else:
        assert spec["supported"] is True
        assert res["supported"] is True or "bind" in res["reason"]  # an algorithm this kernel lacks


@pytest.mark.parametrize(
    ("algorithm", "sock_type", "kname", "why"),
    [
        ("aes-128-cbc", "skcipher", "cbc(aes)", "does not decrypt to its plaintext"),
        ("sha256", "hash", "sha256", "differs from a recomputation"),
    ],
)
def test_afalg_a_corrupted_output_fails_verification(kern, algorithm, sock_type, kname, why):
    probe = af_alg_probe(sock_type, kname)
    if probe is not None:
        pytest.skip(
            f"this kernel cannot serve {kname} to an AF_ALG {sock_type} socket ({probe}): no crypto.afalg run"
        )
    rc, res = kern_json(kern, "crypto.afalg", *FAST, *SMALL, "--param", f"algorithm={algorithm}", "--corrupt")
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any(why in e for e in res["errors"]), res["errors"]
