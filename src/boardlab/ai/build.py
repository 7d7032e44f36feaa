"""`build_models()`: the six networks as ONNX and TFLite files (float, and int8 on request) plus a manifest.

The manifest (JSON, schema 1) lists per model its architecture figures and per file its format,
precision, size, sha256, input and output shapes, and the MACs and parameters read back from that file's
graph (not copied from the IR), with the published reference figures beside them. Files are written
atomically, so a worker never reads half a model. Deterministic: the same seed gives the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from boardlab.ai import MANIFEST_NAME, MANIFEST_SCHEMA, MODEL_NAMES, model_filename
from boardlab.errors import BoardlabError, InputError

GENERATOR_VERSION = 1
REQUIRED = {
    "numpy": "numpy",
    "onnx": "onnx",
    "flatbuffers": "flatbuffers",
    "ai_edge_litert": "ai-edge-litert",
}
REQUIRED_INT8 = {"onnxruntime": "onnxruntime"}


def missing_packages(int8: bool = False) -> list[str]:
    """PyPI names of the packages the builder needs that are not installed."""
    import importlib.util

    need = dict(REQUIRED, **(REQUIRED_INT8 if int8 else {}))
    return [pypi for mod, pypi in need.items() if importlib.util.find_spec(mod) is None]


def parse_model_names(text: str | None) -> list[str]:
    """--models: None (not given) is every model; a list that names none (`''`, `,`) is refused, not read as
    every model (524 MB built where the user asked for nothing)."""
    if text is None:
        return list(MODEL_NAMES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(
            f"--models {text!r}: names no model; give some of {', '.join(MODEL_NAMES)}, or leave it out"
        )
    unknown = [n for n in names if n not in MODEL_NAMES]
    if unknown:
        raise InputError(f"unknown model {', '.join(unknown)}; valid: {', '.join(MODEL_NAMES)}")
    return names


def _write_atomic(path: Path, data: bytes | bytearray | memoryview) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk leaves no half-written model behind
            os.unlink(tmp)
        raise


def _file_entry(out_dir: Path, name: str, fmt: str, precision: str, data, stats: dict, extra: dict) -> dict:
    filename = model_filename(name, fmt, precision)
    _write_atomic(out_dir / filename, data)
    return {
        "file": filename,
        "format": fmt,
        "precision": precision,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "inputs": stats["inputs"],
        "outputs": stats["outputs"],
        "macs": stats["macs"],
        "params": stats["params"],
        **extra,
    }


def load_manifest(out_dir: str | os.PathLike[str]) -> dict | None:
    path = Path(out_dir) / MANIFEST_NAME
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == MANIFEST_SCHEMA else None


def build_one(out_dir: str, name: str, seed: int, int8: bool) -> dict:
    """Builds one model's files into out_dir; returns its manifest entry."""
    from boardlab.ai import nets, onnx_export, quantize, tflite_export

    t0 = time.perf_counter()
    out = Path(out_dir)
    net = nets.build_net(name, seed)
    c, h, w = net.shapes["input"]
    onnx_model = onnx_export.to_onnx(net)
    onnx_bytes = onnx_model.SerializeToString()
    onnx_meta = {"opset": onnx_export.OPSET, "ir_version": onnx_export.IR_VERSION}
    files = [
        _file_entry(out, name, "onnx", "float", onnx_bytes, onnx_export.onnx_stats(onnx_model), onnx_meta)
    ]
    del onnx_bytes
    tfl = tflite_export.to_tflite(net)
    files.append(_file_entry(out, name, "tflite", "float", tfl, tflite_export.tflite_stats(tfl), {}))
    if int8:
        q = quantize.onnx_int8(onnx_model, seed)
        meta = dict(onnx_meta, quantization=quantize.ONNX_SCHEME)
        files.append(
            _file_entry(out, name, "onnx", "int8", q, onnx_export.onnx_stats(_onnx_from_bytes(q)), meta)
        )
        q = quantize.tflite_int8(tfl, (1, h, w, c), seed)
        meta = {"quantization": quantize.TFLITE_SCHEME}
        files.append(_file_entry(out, name, "tflite", "int8", q, tflite_export.tflite_stats(q), meta))
    entry = {
        "name": name,
        "task": nets.TASKS[name],
        "seed": seed,
        "input_hw": [h, w],
        "macs": net.macs,
        "params": net.params,
        "params_trainable": net.params_trainable,
        "reference": nets.REFERENCE[name],
        "files": files,
        "build_s": round(time.perf_counter() - t0, 2),
    }
    if net.anchors is not None:
        entry.update(anchors=len(net.anchors), postprocess=nets.SSD_POSTPROCESS)
    return entry


def build_models(
    out_dir: str | os.PathLike[str],
    names: Iterable[str] = MODEL_NAMES,
    *,
    seed: int = 0,
    int8: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Builds the files into out_dir and (re)writes its manifest; returns the manifest. One model at a
    time: building ResNet50 with int8 peaks near 1 GB, and the quantizers use every CPU already."""
    missing = missing_packages(int8)
    if missing:
        raise BoardlabError(
            f"building models needs {', '.join(missing)}: pip install {' '.join(missing)} "
            "(or install boardlab with its `ai` extra)"
        )
    from boardlab import __version__

    names = list(dict.fromkeys(names))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    previous = load_manifest(out) or {}
    models = {m["name"]: m for m in previous.get("models", []) if m.get("name") in MODEL_NAMES}

    def done(entry: dict) -> None:
        name = entry["name"]
        written = {f["file"] for f in entry["files"]}
        for old in models.get(name, {}).get("files", []):  # a variant of an earlier build not rebuilt now
            if old["file"] not in written:
                (out / old["file"]).unlink(missing_ok=True)
        models[name] = entry
        if progress:
            sizes = ", ".join(f"{f['file']} {f['bytes'] / 1e6:.1f} MB" for f in entry["files"])
            progress(
                f"{name}: {entry['macs'] / 1e6:,.1f} M MACs, {entry['params'] / 1e6:.3f} M params; "
                f"{sizes} ({entry['build_s']:.1f} s)"
            )

    for name in names:
        done(build_one(str(out), name, seed, int8))
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "tool": "boardlab.ai.build",
        "boardlab_version": __version__,
        "generator_version": GENERATOR_VERSION,
        "dir": str(out.resolve()),
        "models": [models[n] for n in MODEL_NAMES if n in models],
    }
    _write_atomic(out / MANIFEST_NAME, (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def _onnx_from_bytes(data: bytes):
    import onnx

    return onnx.load_from_string(data)
