"""The generated edge-AI models: six architectures, float and int8, ONNX and TFLite, built offline in seconds.

Their MACs and parameters, read back from each file's graph, match the published figures within 1%;
every file loads in its runtime and infers with the shapes its manifest declares; ONNX and TFLite files of
one model compute the same function; the same seed gives the same bytes.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from boardlab.ai import MODEL_NAMES, model_filename, nets, runtime
from boardlab.ai.build import build_models, load_manifest
from boardlab.errors import InputError

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

pytest.importorskip("onnx", reason="the ai extra is not installed (pip install 'boardlab[ai]')")
pytest.importorskip("onnxruntime", reason="the ai extra is not installed")
pytest.importorskip("ai_edge_litert", reason="the ai extra is not installed")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """All six models, float and int8, built once: (directory, manifest, float build seconds)."""
    out = tmp_path_factory.mktemp("models")
    t0 = time.monotonic()
    build_models(out, MODEL_NAMES, seed=0)
    float_s = time.monotonic() - t0
    manifest = build_models(out, MODEL_NAMES, seed=0, int8=True)
    return out, manifest, float_s


def entries(manifest):
    return [(m, f) for m in manifest["models"] for f in m["files"]]


def test_all_twelve_float_files_build_in_seconds(built):
    out, manifest, float_s = built
    floats = [f for _, f in entries(manifest) if f["precision"] == "float"]
    assert len(floats) == 12
    assert all((out / f["file"]).stat().st_size == f["bytes"] for f in floats)
    assert float_s < 60, f"building the 12 float files took {float_s:.1f} s"


def test_the_manifest_lists_every_file_with_format_precision_and_shapes(built):
    out, manifest, _ = built
    assert manifest["schema"] == 1
    assert [m["name"] for m in manifest["models"]] == list(MODEL_NAMES)
    assert load_manifest(out) == manifest
    for m, f in entries(manifest):
        assert f["file"] == model_filename(m["name"], f["format"], f["precision"])
        assert len(f["sha256"]) == 64
        (inp,) = f["inputs"]
        h, w = m["input_hw"]
        assert inp["shape"] == ([1, 3, h, w] if f["format"] == "onnx" else [1, h, w, 3])
        assert inp["dtype"] == "float32"
    assert {m["name"]: m["input_hw"] for m in manifest["models"]} == {
        "mobilenet_v1": [224, 224],
        "mobilenet_v2": [224, 224],
        "ssd_mobilenet_v1": [300, 300],
        "ssd_mobilenet_v2": [300, 300],
        "resnet18": [224, 224],
        "resnet50": [224, 224],
    }


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_macs_and_params_read_from_each_file_match_the_published_figures_within_1_percent(built, name):
    _, manifest, _ = built
    (m,) = [m for m in manifest["models"] if m["name"] == name]
    ref = nets.REFERENCE[name]
    for f in m["files"]:  # float and int8, ONNX and TFLite: each counted from its own graph
        assert f["macs"] == m["macs"], f["file"]
        assert f["params"] == m["params"], f["file"]
        assert f["macs"] == pytest.approx(ref["macs"], rel=0.01), f["file"]
    if "params" in ref:
        assert m["params"] == pytest.approx(ref["params"], rel=0.01)
    if "params_trainable" in ref:
        assert m["params_trainable"] == pytest.approx(ref["params_trainable"], rel=0.01)


def test_the_classifiers_match_torchvision_exactly_where_it_has_them(built):
    _, manifest, _ = built
    by_name = {m["name"]: m for m in manifest["models"]}
    assert by_name["resnet18"]["params_trainable"] == 11_689_512
    assert by_name["resnet50"]["params_trainable"] == 25_557_032
    assert by_name["mobilenet_v2"]["params_trainable"] == 3_504_872 + 1281  # 1001 classes, TF-slim


def test_ssd_models_have_1917_anchors_and_tf_export_post_processing(built):
    _, manifest, _ = built
    for name in ("ssd_mobilenet_v1", "ssd_mobilenet_v2"):
        (m,) = [m for m in manifest["models"] if m["name"] == name]
        assert m["anchors"] == 1917
        assert m["postprocess"]["max_detections"] == 10
        for f in m["files"]:
            names = [o["name"] for o in f["outputs"]]
            assert names == ["detection_boxes", "detection_classes", "detection_scores", "num_detections"]


def test_anchor_layout_is_the_tf_object_detection_generator():
    anchors = nets.ssd_anchors([19, 10, 5, 3, 2, 1])
    assert anchors.shape == (1917, 4)
    assert 19 * 19 * 3 + (100 + 25 + 9 + 4 + 1) * 6 == 1917
    first = anchors[:3]  # lowest layer: scale 0.1 at ratio 1, then scale 0.2 at ratios 2 and 1/2
    assert first[:, :2] == pytest.approx(np.full((3, 2), 0.5 / 19))
    assert first[0, 2:] == pytest.approx([0.1, 0.1])
    assert first[1, 2:] == pytest.approx([0.2 / 2**0.5, 0.2 * 2**0.5])
    assert anchors[-1, :2] == pytest.approx([0.5, 0.5])


def test_onnx_files_are_opset_13_ir_8_and_int8_files_import_no_extra_domains(built):
    import onnx

    out, manifest, _ = built
    for _, f in entries(manifest):
        if f["format"] != "onnx":
            continue
        m = onnx.load(str(out / f["file"]), load_external_data=False)
        assert m.ir_version == 8
        assert [(o.domain, o.version) for o in m.opset_import] == [("", 13)]


def _infer(path: str, fmt: str, seed: int = 1):
    session = runtime.open_session(
        "onnxruntime" if fmt == "onnx" else "litert", path, runtime.Options(threads=1)
    )
    (frame,) = runtime.synthetic_frames(session.inputs, 1, seed)
    session.prepare(frame)
    session.invoke()
    return session, session.outputs()


def test_every_file_loads_and_infers_with_its_declared_output_shapes(built):
    out, manifest, _ = built
    for _, f in entries(manifest):
        session, outputs = _infer(str(out / f["file"]), f["format"])
        assert [i.shape for i in session.inputs] == [tuple(i["shape"]) for i in f["inputs"]]
        assert len(outputs) == len(f["outputs"]), f["file"]
        for o, declared in zip(outputs, f["outputs"], strict=True):
            assert len(o.shape) == len(declared["shape"]), f["file"]
            for got, want in zip(o.shape, declared["shape"], strict=True):
                if isinstance(want, int):
                    assert got == want, f["file"]
                else:  # the ONNX SSD's number of kept detections: at most max_detections
                    assert got <= 10, f["file"]
            assert np.all(np.isfinite(o)), f["file"]


@pytest.mark.parametrize(
    "name", ["mobilenet_v1", "mobilenet_v2", "resnet18", "ssd_mobilenet_v1", "ssd_mobilenet_v2"]
)
def test_onnx_and_tflite_files_of_a_model_compute_the_same_function(built, name):
    out, _, _ = built
    x = np.random.default_rng(3).uniform(
        -1, 1, (1, 300 if "ssd" in name else 224, 300 if "ssd" in name else 224, 3)
    )
    x = x.astype(np.float32)
    results = []
    for fmt, frame in (("onnx", x.transpose(0, 3, 1, 2).copy()), ("tflite", x)):
        session = runtime.open_session(
            "onnxruntime" if fmt == "onnx" else "litert",
            str(out / model_filename(name, fmt)),
            runtime.Options(1),
        )
        session.prepare([frame])
        session.invoke()
        results.append(session.outputs())
    (onnx_out, tfl_out) = results
    if name.startswith("ssd"):  # boxes, classes, scores, count after NMS: the same detections
        assert onnx_out[3] == pytest.approx(tfl_out[3])
        assert onnx_out[2] == pytest.approx(tfl_out[2], rel=1e-3)
        assert onnx_out[0] == pytest.approx(tfl_out[0], abs=1e-4)
    else:
        assert onnx_out[0] == pytest.approx(tfl_out[0], rel=1e-3, abs=1e-6)
        assert int(np.argmax(onnx_out[0])) == int(np.argmax(tfl_out[0]))


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_weights(built, tmp_path):
    _, manifest, _ = built
    want = {
        f["file"]: f["sha256"] for m in manifest["models"] if m["name"] == "mobilenet_v2" for f in m["files"]
    }
    again = build_models(tmp_path / "a", ["mobilenet_v2"], seed=0, int8=True)
    assert {f["file"]: f["sha256"] for f in again["models"][0]["files"]} == want
    other = build_models(tmp_path / "b", ["mobilenet_v2"], seed=1)
    for f in other["models"][0]["files"]:
        assert f["sha256"] != want[f["file"]]


def test_rebuilding_without_int8_removes_the_stale_int8_files(tmp_path):
    build_models(tmp_path, ["mobilenet_v2"], int8=True)
    assert (tmp_path / "mobilenet_v2.int8.tflite").exists()
    manifest = build_models(tmp_path, ["mobilenet_v2"])
    assert not (tmp_path / "mobilenet_v2.int8.tflite").exists()
    assert [f["precision"] for f in manifest["models"][0]["files"]] == ["float", "float"]


def test_boardlab_models_build_prints_progress_and_the_manifest_as_json(tmp_path):
    proc = run_cli("models", "build", "--out", str(tmp_path), "--models", "mobilenet_v1,resnet18", "--json")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(proc.stdout)
    assert [m["name"] for m in manifest["models"]] == ["mobilenet_v1", "resnet18"]
    assert "mobilenet_v1: 568.7 M MACs" in proc.stderr
    assert "resnet18: 1,814.1 M MACs" in proc.stderr


def test_boardlab_models_build_refuses_an_unknown_model_with_the_valid_names(tmp_path):
    proc = run_cli("models", "build", "--out", str(tmp_path), "--models", "mobilenet_v3")
    assert proc.returncode == 2
    assert "unknown model mobilenet_v3" in proc.stderr
    assert "ssd_mobilenet_v2" in proc.stderr


def test_the_default_models_dir_follows_xdg_cache_home(monkeypatch, tmp_path):
    from boardlab.ai import default_models_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_models_dir() == tmp_path / "boardlab" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_models_dir() == tmp_path / ".cache" / "boardlab" / "models"


# -- runtime helpers --------------------------------------------------------------------------------------


def test_delegate_options_parse_as_key_value_pairs_separated_by_semicolons():
    opts = runtime.parse_delegate_options("artifacts_folder=/opt/a=b; core_number=1;")
    assert opts == {"artifacts_folder": "/opt/a=b", "core_number": "1"}
    assert runtime.parse_delegate_options(None) == {}
    with pytest.raises(InputError, match="key=value"):
        runtime.parse_delegate_options("debug_level")


def test_detections_are_counted_above_the_threshold_among_those_kept():
    names = ["detection_boxes", "detection_classes", "detection_scores", "num_detections"]
    outputs = [None, None, np.array([[0.9, 0.6, 0.4, 0.8]]), np.array([3.0])]
    assert runtime.detection_count(names, outputs, 0.5) == 2  # the 4th score is past num_detections
    assert runtime.detection_count(["predictions"], [np.zeros((1, 10))], 0.5) is None


def test_ti_benchmark_counters_become_per_frame_accelerator_copy_and_ddr_figures():
    # the keys of TI's get_TI_benchmark_data() (edgeai-tidl-tools examples/osrt_python), ns and bytes
    d = {
        "ts:run_start": 1_000_000,
        "ts:run_end": 9_000_000,
        "ts:subgraph_0_copy_in_start": 1_100_000,
        "ts:subgraph_0_copy_in_end": 1_600_000,
        "ts:subgraph_0_proc_start": 1_600_000,
        "ts:subgraph_0_proc_end": 7_600_000,
        "ts:subgraph_0_copy_out_start": 7_600_000,
        "ts:subgraph_0_copy_out_end": 8_100_000,
        "ddr:read_start": 10_000_000,
        "ddr:read_end": 35_000_000,
        "ddr:write_start": 0,
        "ddr:write_end": 5_000_000,
    }
    figures = runtime.ti_frame_figures(d)
    assert figures["tidl_subgraphs"] == 1
    assert figures["tidl_proc_ms"] == pytest.approx(6.0)
    assert figures["tidl_copy_ms"] == pytest.approx(1.0)
    assert figures["tidl_run_ms"] == pytest.approx(8.0)
    assert figures["ddr_read_mb"] == pytest.approx(25.0)
    assert figures["ddr_write_mb"] == pytest.approx(5.0)


def test_peak_rss_is_the_vmhwm_line_of_proc_self_status(tmp_path):
    from boardlab.platform.process import peak_rss_kib

    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "status").write_text(
        "Name:\tpython\nVmPeak:\t  900 kB\nVmHWM:\t  4321 kB\n"
    )
    assert peak_rss_kib(tmp_path) == 4321
    assert peak_rss_kib(tmp_path / "nowhere") is None
    assert peak_rss_kib() > 1000  # this very process, live
