"""Edge-AI models and runtimes for the `ai.inference` workload, built offline.

Inference latency does not depend on weight values, so the six networks of the interference study (MobileNet
v1/v2, SSD MobileNet v1/v2, ResNet18/50) are generated with seeded random weights from their published
layouts and written as ONNX (opset 13, IR 8) and TFLite, float and int8: no model hub, no torch, no
TensorFlow (research/edge-ai.md). Modules:

- `nets`: a tiny network IR, the six architectures, SSD anchors and the reference MACs/params table;
- `onnx_export`, `tflite_export`: the two emitters and graph statistics (MACs, params) read back from a file;
- `quantize`: int8 variants (ONNX QDQ via onnxruntime.quantization, TFLite via LiteRT's calibrator);
- `build`: `build_models()` writes the files and the manifest (`boardlab models build`);
- `runtime`: ONNX Runtime and LiteRT sessions with the options boardlab records, synthetic frames;
- `loop`: the inference loop as a background load (`python -m boardlab.ai.loop`).

Importing this package does nothing heavy: numpy, onnx and the runtimes are imported where they are used.
"""

from __future__ import annotations

import os
from pathlib import Path

MODEL_NAMES = (
    "mobilenet_v1",
    "mobilenet_v2",
    "ssd_mobilenet_v1",
    "ssd_mobilenet_v2",
    "resnet18",
    "resnet50",
)
FORMATS = {"onnx": ".onnx", "tflite": ".tflite"}
RUNTIME_FORMAT = {"onnxruntime": "onnx", "litert": "tflite"}
PRECISIONS = ("float", "int8")
MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = 1


def default_models_dir() -> Path:
    """Where `boardlab models build` writes by default: $XDG_CACHE_HOME/boardlab/models or ~/.cache/..."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "boardlab" / "models"


def model_filename(name: str, fmt: str, precision: str = "float") -> str:
    """`mobilenet_v1.onnx`, `mobilenet_v1.int8.tflite`, ..."""
    return name + (".int8" if precision == "int8" else "") + FORMATS[fmt]


def resolve_model(params: dict) -> tuple[str, str | None]:
    """(path, generated model name or None); InputError when the file is missing or of the wrong kind."""
    from boardlab.errors import InputError

    runtime, model = params["runtime"], params["model"]
    fmt = RUNTIME_FORMAT[runtime]
    if model in MODEL_NAMES:
        base = params.get("models_dir")
        directory = os.path.expanduser(base) if base else str(default_models_dir())
        path = os.path.join(directory, model_filename(model, fmt, params["precision"]))
        if not os.path.isfile(path):
            how = "boardlab models build" + (" --int8" if params["precision"] == "int8" else "")
            how += f" --out {directory}" if base else ""
            raise InputError(f"{path}: no such model file; build the models with `{how}`")
        return path, model
    suffix = os.path.splitext(model)[1].lower()
    if suffix not in (".onnx", ".tflite"):
        raise InputError(
            f"model {model!r} is neither a generated model ({', '.join(MODEL_NAMES)}) "
            "nor a path to an .onnx or .tflite file"
        )
    path = os.path.abspath(os.path.expanduser(model))
    if suffix != "." + fmt:
        raise InputError(f"{path}: a {suffix} file cannot run in runtime={runtime} (it needs a .{fmt} file)")
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such model file")
    return path, None
