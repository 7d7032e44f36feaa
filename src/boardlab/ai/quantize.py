"""int8 variants, offline, from the float files and a few seeded random calibration frames.

- ONNX: `onnxruntime.quantization.quantize_static`, QDQ format, per-channel int8 weights, uint8
  activations, MinMax calibration; the SSD post-processing tail stays float. Unused opset domains the
  quantizer stamps are dropped again so older onnxruntime builds load the file (research/edge-ai.md P4).
- TFLite: LiteRT's bundled calibrator (`_pywrap_tensorflow_lite_calibration_wrapper`, a private API: the
  same call sequence as TensorFlow's `lite/python/optimize/calibrator.py`), float input and output,
  int8 ops, int32 biases; the detection post-processing op stays float.

Calibration data are random, so the int8 ranges are not those of a trained model; latency is what these
files are for. On TI boards TIDL calibrates float models itself (`tensor_bits`), so float is the primary
artifact there.
"""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np

CALIBRATION_FRAMES = 1
PER_CHANNEL = False  # onnxruntime's per-channel weight quantization is a Python loop: 3x the build time
ONNX_SCHEME = (
    f"QDQ; int8 weights per tensor, uint8 activations; MinMax over {CALIBRATION_FRAMES} random frame(s); "
    "SSD post-processing float"
)
TFLITE_SCHEME = (
    "int8 ops, int8 weights per channel, int32 biases, float input/output; "
    f"{CALIBRATION_FRAMES} random calibration frame(s); detection post-processing float"
)


def _frames(shape: tuple[int, ...], seed: int, n: int = CALIBRATION_FRAMES) -> list[np.ndarray]:
    return [np.random.default_rng([seed, 7919, i]).uniform(-1, 1, shape).astype(np.float32) for i in range(n)]


def onnx_int8(float_model, seed: int = 0) -> bytes:
    """QDQ int8 ONNX bytes from a float ModelProto (input named "input", NCHW)."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    shape = tuple(d.dim_value for d in float_model.graph.input[0].type.tensor_type.shape.dim)

    class Frames(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"input": f} for f in _frames(shape, seed)])

        def get_next(self):
            return next(self.it, None)

    post = [n.name for n in float_model.graph.node if n.name.startswith("post_")]
    root_logger = logging.getLogger()
    level = root_logger.level
    root_logger.setLevel(logging.ERROR)  # the quantizer logs "consider pre-processing" on the root logger
    try:
        with tempfile.TemporaryDirectory(prefix="boardlab-q-") as tmp:
            src, dst = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
            onnx.save(float_model, src)
            quantize_static(
                src,
                dst,
                Frames(),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=PER_CHANNEL,
                calibrate_method=CalibrationMethod.MinMax,
                nodes_to_exclude=post,
                extra_options={"CalibTensorRangeSymmetric": False},
            )
            model = onnx.load(dst)
    finally:
        root_logger.setLevel(level)
    used = {n.domain or "" for n in model.graph.node}
    keep = [o for o in model.opset_import if (o.domain or "") in used or o.domain in ("", "ai.onnx")]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    model.ir_version = float_model.ir_version
    model.producer_name = "boardlab"
    model.doc_string = float_model.doc_string + "; int8 QDQ (random calibration)"
    return model.SerializeToString()


def tflite_int8(float_bytes: bytes | bytearray, input_shape: tuple[int, ...], seed: int = 0) -> bytes:
    """int8 TFLite bytes (float input and output) from a float flatbuffer."""
    from ai_edge_litert import _pywrap_tensorflow_lite_calibration_wrapper as calibration

    model = bytes(float_bytes)  # the wrapper points into this buffer: it must outlive `c`
    c = calibration.CalibrationWrapper(model, [], [])
    c.Prepare([list(input_shape)])
    for frame in _frames(tuple(input_shape), seed):
        c.FeedTensor([frame])
    f32, i8, i32 = np.dtype(np.float32).num, np.dtype(np.int8).num, np.dtype(np.int32).num
    # input type, output type, allow float ops, activations type, bias type, disable per-channel,
    # disable per-channel for dense layers
    out = bytes(c.QuantizeModel(f32, f32, True, i8, i32, False, False))
    del c
    return out
