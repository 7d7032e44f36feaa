"""boardlab-kern (C) and boardlab (Python) agree on the worker result: the binary writes the schema the Python
constant names, and the one reader parses every kernel's real output."""

from __future__ import annotations

import json

import pytest

from boardlab.model.worker_result import WORKER_SCHEMA, parse_worker_result

from helpers import kern_json, run_kern, under_qemu_user

# the smallest parameters that still run each kernel for real (its default otherwise); ports are free ones
SMALL = {
    "mem.bandwidth": {"array_bytes": "1M"},
    "mem.latency": {"size_bytes": "64k"},
    "compute.gemm": {"n": "64"},
    "compute.linpack": {"n": "64"},
    "io.storage": {"size_bytes": "1M", "bs": "64k", "direct": "0"},
}


def _catalog(kern) -> list[dict]:
    proc = run_kern(kern, "--list", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["kernels"]


def _params(kernel: dict, tmp_path) -> list[str]:
    from boardlab.services.launch import free_port

    names = {p["name"] for p in kernel["params"]}
    params = dict(SMALL.get(kernel["name"], {}))
    if "duration_s" in names:
        params["duration_s"] = "1"
    if "port" in names:
        params["port"] = str(free_port())
    if kernel["name"] == "io.storage":
        params["path"] = str(tmp_path / "storage file")
    return [arg for k, v in params.items() for arg in ("--param", f"{k}={v}")]


def test_the_binary_writes_the_schema_the_python_reader_names(kern):
    rc, doc = kern_json(kern, "noop", "--iterations", "2", "--warmup-max-iterations", "0")
    assert rc == 0 and doc["schema"] == WORKER_SCHEMA
    result = parse_worker_result(doc)
    assert result.schema == WORKER_SCHEMA and result.tool == "boardlab-kern" and result.workload == "noop"
    assert result.ok and len(result.iterations_ns) == 2 and result.metrics


def test_the_reader_parses_every_kernels_real_output(kern, tmp_path):
    kernels = _catalog(kern)
    assert len(kernels) > 20  # the whole catalog, not a stub of it
    for kernel in kernels:
        rc, doc = kern_json(
            kern, kernel["name"], "--iterations", "1", "--warmup-max-iterations", "0",
            *_params(kernel, tmp_path),
        )  # fmt: skip
        result = parse_worker_result(doc)
        assert result.schema == WORKER_SCHEMA and result.workload == kernel["name"]
        assert result.tool == "boardlab-kern"
        if not kernel["supported"] or not result.supported:
            # unsupported by this build or machine (a library, a device, a parameter's backend): said so,
            # with its reason, and never also claimed done
            assert not result.supported and result.reason and not result.ok and rc != 0, kernel["name"]
            continue
        # a load generator with no server to load fails, and so do the service roles under qemu-user (it does
        # not emulate their multicast and timestamp socket options): a failure with its reason
        if kernel["name"] == "svc.load" or under_qemu_user() and kernel["family"] == "svc" and not result.ok:
            assert not result.ok and result.errors and rc != 0, kernel["name"]
            continue
        assert rc == 0 and result.ok, (kernel["name"], result.errors)
        declared = {m["name"] for m in kernel["metrics"]}
        assert result.metrics and {m.name for m in result.metrics} <= declared, kernel["name"]
        # a measured value, never negative (a server nobody called has served 0 requests/s)
        assert all(m.median is None or m.median >= 0 for m in result.metrics), kernel["name"]


@pytest.mark.parametrize("broken", ["schema", "ok", "metrics.unit"])
def test_the_reader_names_what_is_wrong_with_a_document(kern, broken):
    from boardlab.model.worker_result import WorkerResultError

    _, doc = kern_json(kern, "noop", "--iterations", "2", "--warmup-max-iterations", "0")
    if broken == "schema":
        doc["schema"] = WORKER_SCHEMA + 1
        match = f"schema {WORKER_SCHEMA + 1}"
    elif broken == "ok":
        del doc["ok"]
        match = "ok is missing"
    else:
        name = next(iter(doc["metrics"]))
        del doc["metrics"][name]["unit"]
        match = f"metrics.{name}.unit is missing"
    with pytest.raises(WorkerResultError, match=match):
        parse_worker_result(doc)
