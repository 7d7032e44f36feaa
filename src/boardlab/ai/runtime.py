"""ONNX Runtime and LiteRT behind one small interface, with every option boardlab records.

`open_session(runtime, path, options)` loads a model and returns a `Session`: `inputs` (fixed shapes),
`prepare(arrays)` (untimed: binds the frame), `invoke()` (the timed call: `session.run` for ONNX Runtime,
`interpreter.invoke()` for LiteRT, as TI's examples time it), `outputs()`, `ti_benchmark()` (TI's
per-frame accelerator counters where the runtime offers `get_TI_benchmark_data`), and `describe()`.

Everything the user can get wrong raises InputError naming the file: a missing or unreadable model, an
unloadable delegate, an input shape that is not fixed. LiteRT is `ai_edge_litert`, or the
`tflite_runtime` of a board's SDK (TI's, which runs the TIDL delegate) when that is what is installed.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass, field
from typing import Any

from boardlab.errors import InputError

RUNTIMES = ("onnxruntime", "litert")
INSTALL = {
    "onnxruntime": "pip install onnxruntime",
    "litert": "pip install ai-edge-litert (on a TI board: the SDK's tflite_runtime)",
}
_ORT_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(uint8)": "uint8",
    "tensor(int8)": "int8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}
FEEDABLE = ("float32", "float16", "float64", "uint8", "int8", "int16", "int32", "int64", "bool")
_CLOCK = getattr(time, "CLOCK_MONOTONIC_RAW", time.CLOCK_MONOTONIC)


def now_ns() -> int:
    """CLOCK_MONOTONIC_RAW, as boardlab-kern times its iterations (docs/method.md)."""
    return time.clock_gettime_ns(_CLOCK)


# Machines PyPI publishes onnxruntime, ai-edge-litert and numpy/scipy wheels for.
WHEEL_MACHINES = ("x86_64", "aarch64", "arm64")


def install_hint(package: str, machine: str) -> str:
    """How to get `package` on this machine: pip where PyPI has wheels, else what a board can do."""
    if machine in WHEEL_MACHINES:
        return (
            "pip install numpy (or install boardlab with its `ai` extra)"
            if package == "numpy"
            else INSTALL[package]
        )
    if package == "numpy":
        return (
            f"PyPI has no numpy wheel for {machine}: apt-get install python3-numpy and make boardlab's venv "
            "with --system-site-packages (`make setup` and the board bundle's install.sh do)"
        )
    vendor = " (on a TI board: the SDK's tflite_runtime)" if package == "litert" else ""
    return (
        f"{'onnxruntime' if package == 'onnxruntime' else 'ai-edge-litert'} publishes no wheel for "
        f"{machine}: install a build for this board{vendor}, or run the AI workload on an aarch64 or "
        "x86-64 machine"
    )


def missing_runtime(runtime: str) -> str | None:
    """Why `runtime` cannot run here (the package is not installed, with the fix), or None."""
    machine = os.uname().machine
    if importlib.util.find_spec("numpy") is None:
        return f"numpy is not installed: {install_hint('numpy', machine)}"
    if runtime == "onnxruntime":
        found = importlib.util.find_spec("onnxruntime") is not None
    else:
        found = any(importlib.util.find_spec(m) is not None for m in ("ai_edge_litert", "tflite_runtime"))
    return None if found else f"{runtime} is not installed: {install_hint(runtime, machine)}"


def parse_delegate_options(text: str | None, key: str = "delegate_options") -> dict[str, str]:
    """ "k=v;k=v" -> {k: v} (TI: "artifacts_folder=/opt/model_zoo/x/artifacts;core_number=1")."""
    out: dict[str, str] = {}
    for item in (text or "").split(";"):
        if not item.strip():
            continue
        if "=" not in item:
            raise InputError(f"{key}: expected key=value items separated by ';', got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    index: int = -1  # LiteRT tensor index


@dataclass
class Options:
    threads: int = 0  # 0: the runtime's default
    spin: bool = True  # ONNX Runtime intra-/inter-op spinning (its default); LiteRT has no such knob
    xnnpack: bool = True  # LiteRT's default XNNPACK delegate
    delegate: str | None = None  # LiteRT external delegate .so
    delegate_options: dict[str, str] = field(default_factory=dict)
    provider: str | None = None  # ONNX Runtime execution provider (None: CPUExecutionProvider)
    provider_options: dict[str, str] = field(default_factory=dict)


DELEGATE_WORDS = ("xnnpack", "none")  # delegate = xnnpack | none | PATH.so
# ai.inference's parameters that set the session (options_from's keywords)
OPTION_PARAMS = ("threads", "spin", "xnnpack", "delegate", "delegate_options", "provider", "provider_options")


def options_from(
    runtime: str,
    *,
    threads: int,
    spin: str,
    xnnpack: str,
    delegate: str | None,
    delegate_options: str | None,
    provider: str | None,
    provider_options: str | None,
) -> Options:
    """The session options of ai.inference's parameters (and the inference loop's flags). `delegate`:
    `xnnpack` is LiteRT's default XNNPACK delegate, `none` LiteRT's builtin kernels alone, anything else an
    external delegate library (a path, or a bare name the dynamic loader finds, as TI's
    libtidl_tfl_delegate.so). `provider` is an ONNX Runtime execution provider, checked when the session
    opens against those the runtime lists."""
    if delegate is not None and runtime != "litert":
        raise InputError(
            f"delegate={delegate}: a delegate applies to runtime=litert; ONNX Runtime takes provider= "
            "(an execution provider)"
        )
    if provider is not None and runtime != "onnxruntime":
        raise InputError(
            f"provider={provider}: an execution provider applies to runtime=onnxruntime; LiteRT "
            "takes delegate="
        )
    if delegate_options and (delegate is None or delegate in DELEGATE_WORDS):
        raise InputError("delegate_options: options go to an external delegate; give delegate=PATH.so too")
    if provider_options and provider is None:
        raise InputError("provider_options: give provider= too (the options go to that execution provider)")
    use_xnnpack = xnnpack == "on"
    if delegate in DELEGATE_WORDS:
        if xnnpack == "off" and delegate == "xnnpack":
            raise InputError("delegate=xnnpack with xnnpack=off: give one of them")
        use_xnnpack = delegate == "xnnpack"
    external = None
    if delegate is not None and delegate not in DELEGATE_WORDS:
        value = os.path.expanduser(delegate)  # a bare library name is left for the dynamic loader to find
        external = os.path.abspath(value) if "/" in value else value
    return Options(
        threads=threads, spin=spin == "on", xnnpack=use_xnnpack, delegate=external,
        delegate_options=parse_delegate_options(delegate_options),
        provider=provider, provider_options=parse_delegate_options(provider_options, "provider_options"),
    )  # fmt: skip


def _fixed_shape(path: str, name: str, shape) -> tuple[int, ...]:
    dims = []
    for i, d in enumerate(shape):
        if isinstance(d, int) and d > 0:
            dims.append(d)
        elif i == 0:
            dims.append(1)  # a free batch dimension: one frame
        else:
            raise InputError(
                f"{path}: input {name!r} has shape {list(shape)}: dimension {i} is not fixed, and boardlab "
                "feeds synthetic frames of one fixed shape; export the model with a fixed input size"
            )
    return tuple(dims)


def _check_dtype(path: str, name: str, dtype: str) -> None:
    if dtype not in FEEDABLE:
        raise InputError(
            f"{path}: input {name!r} is of type {dtype}: boardlab can feed {', '.join(FEEDABLE)}"
        )


class Session:
    """A loaded model: bind a frame (`prepare`), run it (`invoke`, the timed call), read `outputs()`."""

    runtime = ""
    _handle: Any  # the runtime's session or interpreter (their modules have no types)
    inputs: list[TensorSpec]
    output_names: list[str]
    load_ms: float
    info: dict

    def prepare(self, arrays: list) -> None:
        raise NotImplementedError

    def invoke(self) -> None:
        raise NotImplementedError

    def outputs(self) -> list:
        raise NotImplementedError

    def ti_benchmark(self) -> dict | None:
        """TI's counters of the last frame (TIDL builds), or None where the runtime does not offer them."""
        get = getattr(self._handle, "get_TI_benchmark_data", None)
        return dict(get()) if get is not None else None

    @property
    def ti_offered(self) -> bool:
        return hasattr(self._handle, "get_TI_benchmark_data")


class OrtSession(Session):
    runtime = "onnxruntime"

    def __init__(self, path: str, options: Options) -> None:
        import onnxruntime as ort

        available = ort.get_available_providers()
        if options.delegate:
            raise InputError(
                "delegate applies to runtime=litert; ONNX Runtime uses execution providers "
                f"(available here: {', '.join(available)})"
            )
        if options.provider is not None and options.provider not in available:
            raise InputError(
                f"provider={options.provider}: this ONNX Runtime ({ort.__version__}) does not offer it; "
                f"available here: {', '.join(available)}"
            )
        so = ort.SessionOptions()
        so.intra_op_num_threads = options.threads
        spin = "1" if options.spin else "0"
        so.add_session_config_entry("session.intra_op.allow_spinning", spin)
        so.add_session_config_entry("session.inter_op.allow_spinning", spin)
        # The chosen provider first; the CPU provider takes the nodes it cannot (as TI's examples do).
        chosen = options.provider or "CPUExecutionProvider"
        providers: list = [(chosen, options.provider_options)]
        if chosen != "CPUExecutionProvider":
            providers.append("CPUExecutionProvider")
        t0 = now_ns()
        try:
            sess = ort.InferenceSession(path, so, providers=providers)
        except Exception as exc:  # onnxruntime raises its own pybind exception types
            raise InputError(
                f"{path}: onnxruntime cannot load this model with {chosen}: {str(exc).strip()[:400]}"
            ) from None
        self.load_ms = (now_ns() - t0) / 1e6
        self._handle = sess
        self.inputs = []
        for i in sess.get_inputs():
            dtype = _ORT_DTYPES.get(i.type, i.type)
            _check_dtype(path, i.name, dtype)
            self.inputs.append(TensorSpec(i.name, _fixed_shape(path, i.name, i.shape), dtype))
        self.output_names = [o.name for o in sess.get_outputs()]
        self._feed: dict = {}
        self._out: list = []
        self.info = {
            "runtime": "onnxruntime",
            "runtime_version": ort.__version__,
            "provider": chosen,
            "provider_options": options.provider_options or None,
            "providers": sess.get_providers(),
            "available_providers": available,
            "intra_op_num_threads": options.threads or "runtime default (physical cores)",
            "allow_spinning": options.spin,
            "execution_mode": "sequential",
            "graph_optimization_level": str(so.graph_optimization_level).rsplit(".", 1)[-1],
            "timed_call": "session.run()",
            "xnnpack": f"not applicable ({chosen})",
        }

    def prepare(self, arrays: list) -> None:
        self._feed = {t.name: a for t, a in zip(self.inputs, arrays, strict=True)}

    def invoke(self) -> None:
        self._out = self._handle.run(None, self._feed)

    def outputs(self) -> list:
        return list(self._out)


def litert_module():
    try:
        from ai_edge_litert import interpreter

        return interpreter, "ai-edge-litert"
    except ImportError:
        from tflite_runtime import interpreter  # a board SDK's build (TI's runs the TIDL delegate)

        return interpreter, "tflite_runtime"


def _package_version(dist: str, module) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return getattr(module, "__version__", None)


def _check_delegate_library(path: str) -> None:
    """An external delegate is a shared library exporting TFLite's external-delegate plugin entry points;
    checked before LiteRT's Delegate is built (a half-built one fails again in its destructor)."""
    import ctypes

    if "/" in path and not os.path.isfile(path):  # a bare name is looked up like dlopen does (TI's usage)
        raise InputError(f"delegate {path}: no such file")
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise InputError(f"delegate {path}: cannot be loaded: {exc}") from None
    for symbol in ("tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate"):
        if not hasattr(lib, symbol):
            raise InputError(f"delegate {path}: not a TFLite external delegate (no {symbol} symbol)")


class LiteRTSession(Session):
    runtime = "litert"

    def __init__(self, path: str, options: Options) -> None:
        tfl, dist = litert_module()
        delegates = []
        t0 = now_ns()
        if options.delegate:
            _check_delegate_library(options.delegate)
            try:
                delegates.append(tfl.load_delegate(options.delegate, options.delegate_options))
            except (ValueError, OSError, AttributeError, RuntimeError) as exc:
                raise InputError(
                    f"delegate {options.delegate}: cannot be loaded: {str(exc).strip()[:400]}"
                ) from None
        t_delegate = now_ns()
        kwargs: dict = {"model_path": path, "num_threads": options.threads or None}
        if delegates:
            kwargs["experimental_delegates"] = delegates
        if not options.xnnpack:
            kwargs["experimental_op_resolver_type"] = tfl.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        try:
            it = tfl.Interpreter(**kwargs)
            for d in it.get_input_details():
                sig = list(d.get("shape_signature", d["shape"]))
                fixed = _fixed_shape(path, d["name"], [int(v) if v > 0 else None for v in sig])
                if tuple(int(v) for v in d["shape"]) != fixed:
                    it.resize_tensor_input(d["index"], list(fixed))
            it.allocate_tensors()
        except InputError:
            raise
        except (ValueError, RuntimeError) as exc:
            raise InputError(f"{path}: LiteRT cannot load this model: {str(exc).strip()[:400]}") from None
        self.load_ms = (now_ns() - t0) / 1e6
        self._handle = it
        self._delegates = delegates  # the delegate must outlive the interpreter
        self.inputs = []
        for d in it.get_input_details():
            dtype = getattr(d["dtype"], "__name__", str(d["dtype"]))
            _check_dtype(path, d["name"], dtype)
            self.inputs.append(
                TensorSpec(d["name"], tuple(int(v) for v in d["shape"]), dtype, int(d["index"]))
            )
        outs = it.get_output_details()
        self._out_index = [int(o["index"]) for o in outs]
        self.output_names = [o["name"] for o in outs]
        ops = self._ops()
        self.info = {
            "runtime": "litert",
            "runtime_package": dist,
            "runtime_version": _package_version(dist, tfl),
            "num_threads": options.threads or "runtime default",
            "xnnpack": "default delegate on" if options.xnnpack else "off (builtin kernels only)",
            "allow_spinning": "not applicable (the Interpreter API has no spin setting)",
            "delegate": options.delegate,
            "delegate_options": options.delegate_options or None,
            "delegate_load_ms": (t_delegate - t0) / 1e6 if options.delegate else None,
            "ops": ops[0],
            "delegated_nodes": ops[1],
            "timed_call": "interpreter.invoke()",
        }

    def _ops(self) -> tuple[int | None, int | None]:
        try:  # private API (pinned ai-edge-litert); absent from some board builds
            details = self._handle._get_ops_details()
        except Exception:
            return None, None
        return len(details), sum(1 for d in details if d.get("op_name") == "DELEGATE")

    def prepare(self, arrays: list) -> None:
        for t, a in zip(self.inputs, arrays, strict=True):
            self._handle.set_tensor(t.index, a)

    def invoke(self) -> None:
        self._handle.invoke()

    def outputs(self) -> list:
        return [self._handle.get_tensor(i) for i in self._out_index]


def open_session(runtime: str, path: str, options: Options) -> Session:
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such model file")
    if runtime == "onnxruntime":
        return OrtSession(path, options)
    if runtime == "litert":
        return LiteRTSession(path, options)
    raise InputError(f"unknown runtime {runtime!r}; valid: {', '.join(RUNTIMES)}")


def synthetic_frames(inputs: list[TensorSpec], count: int, seed: int) -> list[list]:
    """`count` distinct deterministic frames (one array per input): uniform [-1, 1] for float inputs (the
    normalised range of these models), the full range for 8-bit inputs, small integers otherwise."""
    import numpy as np

    frames = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        arrays = []
        for t in inputs:
            if t.dtype.startswith("float"):
                a = rng.uniform(-1.0, 1.0, t.shape).astype(t.dtype)
            elif t.dtype == "uint8":
                a = rng.integers(0, 256, t.shape, dtype=np.uint8)
            elif t.dtype == "int8":
                a = rng.integers(-128, 128, t.shape, dtype=np.int8)
            elif t.dtype == "bool":
                a = rng.integers(0, 2, t.shape).astype(bool)
            else:
                a = rng.integers(0, 10, t.shape).astype(t.dtype)
            arrays.append(a)
        frames.append(arrays)
    return frames


SCORE_OUTPUTS = ("detection_scores", "TFLite_Detection_PostProcess:2")
COUNT_OUTPUTS = ("num_detections", "TFLite_Detection_PostProcess:3")


def has_detection_outputs(names: list[str]) -> bool:
    return any(n in SCORE_OUTPUTS for n in names)


def detection_count(names: list[str], outputs: list, threshold: float) -> int | None:
    """Detections scoring at least `threshold` among those a detection post-processing op kept, for graphs
    with its outputs (names of boardlab's SSD files or of a TF detection export); None otherwise."""
    import numpy as np

    def find(candidates: tuple[str, ...]) -> int | None:
        return next((i for i, n in enumerate(names) if n in candidates), None)

    si, ni = find(SCORE_OUTPUTS), find(COUNT_OUTPUTS)
    if si is None:
        return None
    scores = np.asarray(outputs[si]).reshape(-1)
    if ni is not None:
        scores = scores[: int(np.asarray(outputs[ni]).reshape(-1)[0])]
    return int(np.count_nonzero(scores >= threshold))


def ti_frame_figures(d: dict) -> dict[str, float]:
    """One frame's figures from TI's `get_TI_benchmark_data()` (ns timestamps, DDR byte counters), computed
    as TexasInstruments/edgeai-tidl-tools examples/osrt_python do: accelerator processing and copy time
    summed over the offloaded subgraphs, the whole run, DDR traffic. (TI's example labels read as write and
    write as read; here ddr:read_* is read.)"""
    ids = [
        k[len("ts:subgraph_") : -len("_proc_start")]
        for k in d
        if k.startswith("ts:subgraph_") and k.endswith("_proc_start")
    ]
    proc = copy_in = copy_out = 0
    for s in ids:
        p = f"ts:subgraph_{s}_"
        proc += d[p + "proc_end"] - d[p + "proc_start"]
        copy_in += d.get(p + "copy_in_end", 0) - d.get(p + "copy_in_start", 0)
        copy_out += d.get(p + "copy_out_end", 0) - d.get(p + "copy_out_start", 0)
    out = {
        "tidl_subgraphs": float(len(ids)),
        "tidl_proc_ms": proc / 1e6,
        "tidl_copy_ms": (copy_in + copy_out) / 1e6,
    }
    if "ts:run_start" in d and "ts:run_end" in d:
        out["tidl_run_ms"] = (d["ts:run_end"] - d["ts:run_start"]) / 1e6
    if "ddr:read_start" in d and "ddr:read_end" in d:
        out["ddr_read_mb"] = (d["ddr:read_end"] - d["ddr:read_start"]) / 1e6
    if "ddr:write_start" in d and "ddr:write_end" in d:
        out["ddr_write_mb"] = (d["ddr:write_end"] - d["ddr:write_start"]) / 1e6
    return out
