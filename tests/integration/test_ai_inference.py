"""ai.inference end to end: `python -m boardlab.pyrun ai.inference ...` in both runtimes, its schema-1 result
(every frame's time, load and first inference kept apart), cold starts, delegates, bad input (exit 2 and no
result), and the continuous loop that the real-time study runs as a load.

Models are built once per session (three, a few seconds); runs use 5 frames.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.ai.build import build_models
from boardlab.model.worker_result import WORKER_SCHEMA

from helpers import as_nobody, shared_tmp_dir

pytestmark = pytest.mark.integration

pytest.importorskip("onnxruntime", reason="the ai extra is not installed (pip install 'boardlab[ai]')")
pytest.importorskip("ai_edge_litert", reason="the ai extra is not installed")

# A TFLite external delegate that claims no node: LiteRT loads it, passes it the options, runs on the CPU.
STUB_DELEGATE_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct StubDelegate {  /* TfLiteDelegate's layout (tensorflow/lite/core/c/common.h), zero padded */
    void *data_;
    int (*Prepare)(void *context, struct StubDelegate *delegate);
    void *copy_from, *copy_to, *free_handle;
    int64_t flags;
    void *opaque_builder;
    char pad[128];
} StubDelegate;
static int prepare(void *context, StubDelegate *delegate) { (void)context; (void)delegate; return 0; }
StubDelegate *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                            void (*report)(const char *)) {
    (void)report;
    for (size_t i = 0; i < n; i++) fprintf(stderr, "stub delegate option %s=%s\n", keys[i], values[i]);
    StubDelegate *d = calloc(1, sizeof *d);
    d->Prepare = prepare;
    return d;
}
void tflite_plugin_destroy_delegate(StubDelegate *d) { free(d); }
"""


@pytest.fixture(scope="session")
def models_dir() -> Path:
    out = shared_tmp_dir()  # other users (the unprivileged test) can read it
    build_models(out, ["mobilenet_v1", "ssd_mobilenet_v1"])
    build_models(out, ["mobilenet_v2"], int8=True)
    yield out
    shutil.rmtree(out, ignore_errors=True)


def worker(*params: str, iterations: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "boardlab.pyrun", "ai.inference"]
    for p in params:
        argv += ["--param", p]
    if iterations is not None:
        argv += ["--iterations", str(iterations)]
    return subprocess.run(argv + ["--json"], capture_output=True, text=True, timeout=timeout)


def result(*params: str, **kw) -> dict:
    proc = worker(*params, **kw)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("rt", ["onnxruntime", "litert"])
def test_a_run_reports_every_frame_and_keeps_load_and_first_inference_apart(models_dir, rt):
    doc = result(f"runtime={rt}", "model=mobilenet_v1", "frames=5", f"models_dir={models_dir}")
    assert (
        doc["schema"] == WORKER_SCHEMA
        and doc["tool"] == "boardlab.pyrun"
        and doc["workload"] == "ai.inference"
    )
    assert doc["ok"] is True and doc["supported"] is True and doc["errors"] == []
    assert len(doc["iterations_ns"]) == 5 and all(v > 0 for v in doc["iterations_ns"])
    m = doc["metrics"]
    lat = m["latency_ms"]
    assert lat["values"] == pytest.approx([v / 1e6 for v in doc["iterations_ns"][1:]])
    assert lat["unit"] == "ms" and lat["higher_is_better"] is False
    assert lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert m["first_inference_ms"]["value"] == pytest.approx(doc["iterations_ns"][0] / 1e6)
    assert m["load_ms"]["value"] > 0
    assert m["fps"]["value"] > 0 and m["fps"]["higher_is_better"] is True
    assert m["peak_rss_kib"]["value"] > 10_000
    assert "detections" not in m  # a classifier
    info = doc["info"]
    assert info["runtime"] == rt and info["frames"] == 5
    assert info["model"] == str(models_dir / f"mobilenet_v1.{'onnx' if rt == 'onnxruntime' else 'tflite'}")
    assert info["manifest_sha256_match"] is True and info["macs"] == 568_741_376
    assert info["ti_benchmark"] == "not offered by this runtime"
    assert len(doc["checksum"]) == 16


def test_the_worker_iterations_set_the_frames_unless_the_frames_param_does(models_dir):
    doc = result("runtime=onnxruntime", "model=mobilenet_v1", f"models_dir={models_dir}", iterations=3)
    assert len(doc["iterations_ns"]) == 3
    doc = result(
        "runtime=onnxruntime", "model=mobilenet_v1", f"models_dir={models_dir}", "frames=4", iterations=3
    )
    assert len(doc["iterations_ns"]) == 4


@pytest.mark.parametrize("rt", ["onnxruntime", "litert"])
def test_ssd_runs_count_detections_on_every_frame(models_dir, rt):
    doc = result(f"runtime={rt}", "model=ssd_mobilenet_v1", "frames=5", f"models_dir={models_dir}")
    det = doc["metrics"]["detections"]
    assert len(det["values"]) == 5 and all(0 <= v <= 10 for v in det["values"])
    assert doc["info"]["detection_score_threshold"] == 0.5


def test_spin_threads_and_xnnpack_are_applied_and_recorded(models_dir):
    ort = result(
        "runtime=onnxruntime",
        "model=mobilenet_v1",
        "frames=3",
        "threads=1",
        "spin=off",
        f"models_dir={models_dir}",
    )
    assert ort["info"]["intra_op_num_threads"] == 1 and ort["info"]["allow_spinning"] is False
    on = result("runtime=litert", "model=mobilenet_v1", "frames=3", "threads=1", f"models_dir={models_dir}")
    off = result(
        "runtime=litert", "model=mobilenet_v1", "frames=3", "xnnpack=off", f"models_dir={models_dir}"
    )
    assert on["info"]["delegated_nodes"] >= 1 and off["info"]["delegated_nodes"] == 0
    assert off["info"]["xnnpack"].startswith("off")


def test_delegate_xnnpack_and_none_choose_litert_kernels(models_dir):
    common = ("runtime=litert", "model=mobilenet_v1", "frames=3", f"models_dir={models_dir}")
    on = result(*common, "delegate=xnnpack")
    off = result(*common, "delegate=none")
    assert on["info"]["delegated_nodes"] >= 1 and on["info"]["xnnpack"] == "default delegate on"
    assert off["info"]["delegated_nodes"] == 0 and off["info"]["xnnpack"].startswith("off")
    assert on["info"]["delegate"] is None and off["info"]["delegate"] is None  # no external library
    proc = worker(*common, "delegate=xnnpack", "xnnpack=off")
    assert proc.returncode == 2 and "give one of them" in proc.stderr
    proc = worker(*common, "delegate=none", "delegate_options=core_number=1")
    assert proc.returncode == 2 and "give delegate=PATH.so too" in proc.stderr


def test_an_execution_provider_the_runtime_lists_runs_and_an_unknown_one_names_those_available(models_dir):
    import onnxruntime as ort

    common = ("runtime=onnxruntime", "model=mobilenet_v1", "frames=3", f"models_dir={models_dir}")
    doc = result(*common, "provider=CPUExecutionProvider")
    assert doc["info"]["provider"] == "CPUExecutionProvider"
    assert doc["info"]["providers"] == ["CPUExecutionProvider"]
    available = ort.get_available_providers()
    assert "TIDLExecutionProvider" not in available  # TI's runtime only; this machine has the stock one
    proc = worker(*common, "provider=TIDLExecutionProvider", "provider_options=artifacts_folder=/x")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "provider=TIDLExecutionProvider: this ONNX Runtime" in proc.stderr
    assert f"available here: {', '.join(available)}" in proc.stderr
    proc = worker(
        "runtime=litert", "model=mobilenet_v1", "provider=CPUExecutionProvider", f"models_dir={models_dir}"
    )
    assert proc.returncode == 2 and "applies to runtime=onnxruntime" in proc.stderr


@pytest.mark.parametrize("rt", ["onnxruntime", "litert"])
def test_int8_variants_run(models_dir, rt):
    doc = result(
        f"runtime={rt}", "model=mobilenet_v2", "precision=int8", "frames=3", f"models_dir={models_dir}"
    )
    assert doc["info"]["model"].endswith(".int8." + ("onnx" if rt == "onnxruntime" else "tflite"))


def test_a_users_model_file_runs_by_path(models_dir, tmp_path):
    mine = tmp_path / "my model.tflite"
    shutil.copy(models_dir / "mobilenet_v1.tflite", mine)
    doc = result("runtime=litert", f"model={mine}", "frames=3")
    assert doc["info"]["model"] == str(mine) and doc["info"]["model_generated"] is None


def test_cold_evict_drops_the_model_file_from_the_page_cache_before_loading(models_dir):
    doc = result("runtime=litert", "model=mobilenet_v1", "frames=3", "cold=evict", f"models_dir={models_dir}")
    assert doc["info"]["cold"].startswith("1 file(s) evicted")
    assert doc["metrics"]["load_ms"]["value"] > 0


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the page cache needs root")
def test_cold_drop_drops_the_page_cache_as_root(models_dir):
    doc = result(
        "runtime=onnxruntime", "model=mobilenet_v1", "frames=3", "cold=drop", f"models_dir={models_dir}"
    )
    assert doc["info"]["cold"].startswith("page cache dropped")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to the user nobody")
def test_cold_drop_is_unsupported_for_an_unprivileged_user_with_the_reason(models_dir):
    def attempt():
        try:
            proc = worker(
                "runtime=onnxruntime",
                "model=mobilenet_v1",
                "frames=3",
                "cold=drop",
                f"models_dir={models_dir}",
            )
        except OSError as exc:  # e.g. a Python installed below /root
            return {"unusable": str(exc)}
        return {"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    got = as_nobody(attempt)
    if "unusable" in got or (got["code"] != 1 and "Permission denied" in got["stderr"]):
        pytest.skip(
            f"the user nobody cannot run this interpreter: {got.get('unusable') or got['stderr'][-200:]}"
        )
    doc = json.loads(got["stdout"])
    assert got["code"] == 1 and doc["ok"] is False and doc["supported"] is False
    assert "needs root" in doc["reason"] and "cold=evict" in doc["reason"]


# -- bad input: exit 2, the file named, nothing printed as a result ------------------------------------------


def test_a_missing_model_file_exits_2_naming_the_file_and_how_to_build_it(tmp_path):
    proc = worker("runtime=onnxruntime", "model=resnet50", f"models_dir={tmp_path}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert str(tmp_path / "resnet50.onnx") in proc.stderr
    assert "boardlab models build" in proc.stderr
    proc = worker("runtime=litert", f"model={tmp_path / 'nope.tflite'}")
    assert proc.returncode == 2 and proc.stdout == "" and "nope.tflite: no such model file" in proc.stderr


def test_a_model_file_of_the_other_runtime_exits_2(models_dir):
    proc = worker("runtime=litert", f"model={models_dir / 'mobilenet_v1.onnx'}")
    assert proc.returncode == 2 and proc.stdout == "" and "needs a .tflite file" in proc.stderr


def test_a_corrupt_model_file_exits_2_naming_it(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    proc = worker("runtime=onnxruntime", f"model={bad}")
    assert proc.returncode == 2 and proc.stdout == "" and f"{bad}: onnxruntime cannot load" in proc.stderr


def test_an_input_shape_that_is_not_fixed_exits_2_naming_the_file(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, "H", "W"])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
    model.ir_version = 8
    model.opset_import[0].version = 13
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, path)
    proc = worker("runtime=onnxruntime", f"model={path}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert str(path) in proc.stderr and "dimension 2 is not fixed" in proc.stderr


def test_an_unloadable_delegate_exits_2_naming_it(models_dir, tmp_path):
    common = ("runtime=litert", "model=mobilenet_v1", f"models_dir={models_dir}")
    proc = worker(*common, f"delegate={tmp_path / 'libnothing.so'}")
    assert proc.returncode == 2 and proc.stdout == "" and "libnothing.so: no such file" in proc.stderr
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"\x7fELF junk")
    proc = worker(*common, f"delegate={junk}")
    assert proc.returncode == 2 and proc.stdout == "" and f"delegate {junk}: cannot be loaded" in proc.stderr
    proc = worker(*common, "delegate=libtidl_tfl_delegate.so")  # a bare name: looked up like dlopen does
    assert proc.returncode == 2 and "delegate libtidl_tfl_delegate.so: cannot be loaded" in proc.stderr
    import ctypes.util

    libm = ctypes.util.find_library("m")
    proc = worker(*common, f"delegate={libm}")
    assert proc.returncode == 2 and "not a TFLite external delegate" in proc.stderr
    proc = worker("runtime=onnxruntime", "model=mobilenet_v1", f"models_dir={models_dir}", f"delegate={libm}")
    assert proc.returncode == 2 and "runtime=litert" in proc.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the stub delegate")
def test_an_external_delegate_is_loaded_with_its_options(models_dir, tmp_path):
    src = tmp_path / "stub.c"
    src.write_text(STUB_DELEGATE_C)
    so = tmp_path / "libstub_delegate.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True)
    proc = worker(
        "runtime=litert",
        "model=mobilenet_v1",
        "frames=3",
        f"models_dir={models_dir}",
        f"delegate={so}",
        "delegate_options=artifacts_folder=/nonexistent;core_number=1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "stub delegate option artifacts_folder=/nonexistent" in proc.stderr
    assert "stub delegate option core_number=1" in proc.stderr
    info = json.loads(proc.stdout)["info"]
    assert info["delegate"] == str(so)
    assert info["delegate_options"] == {"artifacts_folder": "/nonexistent", "core_number": "1"}
    assert info["delegate_load_ms"] > 0


# -- the continuous loop: a background load for the real-time study ------------------------------------------


def loop(models_dir: Path, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "boardlab.ai.loop", "--model", "mobilenet_v1", "--runtime", "onnxruntime"]
    argv += ["--threads", "1", "--models-dir", str(models_dir), *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_loop_runs_until_a_signal_then_prints_its_summary(models_dir, sig):
    proc = loop(models_dir)
    # signal it once it infers (a loaded machine may take seconds to import and load the runtime), and
    # after a few more frames
    ready = proc.stderr.readline()
    assert "first frame done" in ready, ready + proc.stderr.read()
    time.sleep(0.5)
    assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["schema"] == 1 and summary["tool"] == "boardlab.ai.loop"
    assert summary["stopped_by"] == sig.name
    assert summary["frames"] > 0 and summary["fps"] > 0
    assert summary["latency_ms"]["median"] > 0 and summary["info"]["intra_op_num_threads"] == 1


def test_the_loop_stops_after_its_duration(models_dir):
    proc = loop(models_dir, "--duration", "1")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["stopped_by"] == "duration" and summary["wall_s"] >= 1 and summary["frames"] > 0


def test_the_loop_exits_2_on_a_missing_model(tmp_path):
    proc = loop(tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == "" and "mobilenet_v1.onnx: no such model file" in err
