"""ai.inference: per-frame latency of one model in ONNX Runtime or LiteRT, in a fresh worker process.

One run loads the model (load_ms), runs `frames` synthetic frames (seeded; frame 0 is the first
inference, kept as its own metric and left out of the steady-state latency statistics, research/edge-ai.md
P3), and reports every frame's time in `iterations_ns`, the latency percentiles, the loop's frame rate,
the worker's peak RSS (VmHWM), SSD detections per frame, and TI's accelerator counters where the runtime
offers `get_TI_benchmark_data()`. `cold` starts from a cold page cache: `evict` drops the model file's
pages (posix_fadvise, no privilege), `drop` the whole page cache (root). Models are the six that
`boardlab models build` generates, or a path to the user's .onnx / .tflite file.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping

from boardlab.errors import InputError, MeasurementError
from boardlab.model.worker_result import spec_metrics
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

DEFAULT_FRAMES = 90  # the interference study's frames per run
DISTINCT_FRAMES = 8  # distinct synthetic frames, cycled: bounded memory, data-dependent NMS still varies
DETECTION_SCORE = 0.5

SPEC = WorkloadSpec(
    name="ai.inference",
    family="ai",
    summary="per-frame inference latency of a CNN (MobileNet, SSD, ResNet or a user model) in ONNX "
    "Runtime or LiteRT",
    runner="python",
    tail_samples=True,  # a frame's p99 latency is a verdict metric beside the median (the interference study)
    params=(
        ParamSpec("runtime", "enum", "litert", choices=("onnxruntime", "litert"), help="inference runtime"),
        ParamSpec(
            "model",
            "str",
            "mobilenet_v1",
            help="a generated model (mobilenet_v1, mobilenet_v2, ssd_mobilenet_v1, ssd_mobilenet_v2, "
            "resnet18, resnet50) or a path to an .onnx / .tflite file",
        ),
        ParamSpec(
            "precision", "enum", "float", choices=("float", "int8"), help="variant of a generated model"
        ),
        ParamSpec(
            "threads",
            "int",
            "0",
            min=0,
            max=256,
            unit="threads",
            help="intra-op threads; 0 = runtime default",
        ),
        ParamSpec(
            "spin", "enum", "on", choices=("on", "off"), help="ONNX Runtime thread spinning (LiteRT: none)"
        ),
        ParamSpec("xnnpack", "enum", "on", choices=("on", "off"), help="LiteRT's default XNNPACK delegate"),
        ParamSpec(
            "delegate",
            "str",
            None,
            help="LiteRT delegate: xnnpack (the default one), none (builtin kernels only) or an external "
            "delegate .so (a path, or a name the loader finds, e.g. TI's libtidl_tfl_delegate.so)",
        ),
        ParamSpec("delegate_options", "str", None, help="external delegate options as key=value;key=value"),
        ParamSpec(
            "provider",
            "str",
            None,
            help="ONNX Runtime execution provider, any the runtime lists (e.g. CPUExecutionProvider, TI's "
            "TIDLExecutionProvider); default CPUExecutionProvider",
        ),
        ParamSpec("provider_options", "str", None, help="execution provider options as key=value;key=value"),
        ParamSpec(
            "frames",
            "int",
            None,
            min=2,
            max=1_000_000,
            unit="frames",
            help=f"frames per run; default: the worker's --iterations, else {DEFAULT_FRAMES}",
        ),
        ParamSpec("cold", "enum", "off", choices=("off", "evict", "drop"), help="page cache before loading"),
        ParamSpec("models_dir", "str", None, help="directory of generated models (default: the cache dir)"),
        ParamSpec("seed", "int", "0", min=0, max=2**31 - 1, help="seed of the synthetic input frames"),
    ),
    metrics=(
        MetricSpec(
            "latency_ms", "ms", False, kind="time", help="per-frame time of frames 1..n-1 (steady state)"
        ),
        MetricSpec("first_inference_ms", "ms", False, kind="time", help="frame 0: the first inference"),
        MetricSpec(
            "load_ms", "ms", False, kind="time", help="model load and initialisation (incl. delegate)"
        ),
        MetricSpec(
            "fps", "frames/s", True, kind="rate", help="frames 1..n-1 over their wall time, loop included"
        ),
        MetricSpec(
            "peak_rss_kib", "KiB", False, kind="value", help="the worker's peak resident memory (VmHWM)"
        ),
        MetricSpec(
            "detections", "count", False, kind="value", help=f"SSD: detections scoring >= {DETECTION_SCORE}"
        ),
        MetricSpec(
            "tidl_proc_ms", "ms", False, kind="time", help="TI: accelerator processing time per frame"
        ),
        MetricSpec("tidl_copy_ms", "ms", False, kind="time", help="TI: input/output copy time per frame"),
        MetricSpec("ddr_read_mb", "MB", False, kind="value", help="TI: DDR bytes read per frame"),
        MetricSpec("ddr_write_mb", "MB", False, kind="value", help="TI: DDR bytes written per frame"),
    ),
)


def supported() -> str | None:
    from boardlab.ai.runtime import missing_runtime

    reasons = [missing_runtime(r) for r in ("onnxruntime", "litert")]
    if all(reasons):
        return "; ".join(r for r in reasons if r)
    return None


def prepare(params: Mapping, note) -> None:
    """Before a campaign starts (in boardlab, not in a measured worker): build a generated model that is not
    there yet, so that no run pays for it and a missing package fails before anything is stored; then the
    setup check (`check`) in a fresh process, so that a delegate that cannot load stops the campaign with
    exit 2 before its first run (docs/ai.md) instead of failing every run."""
    params = dict(params)  # the plan gives a read-only mapping
    _build_missing_model(params, note)
    _setup_check(params)


def _build_missing_model(params: dict, note) -> None:
    from boardlab.ai import MODEL_NAMES, RUNTIME_FORMAT, default_models_dir, model_filename, resolve_model

    if params["model"] not in MODEL_NAMES:
        resolve_model(params)  # a user's file: only check it
        return
    base = params.get("models_dir")
    directory = os.path.expanduser(base) if base else str(default_models_dir())
    fmt = RUNTIME_FORMAT[params["runtime"]]
    if os.path.isfile(os.path.join(directory, model_filename(params["model"], fmt, params["precision"]))):
        return
    from boardlab.ai.build import build_models

    note(f"building model {params['model']} ({params['precision']}) into {directory}")
    build_models(directory, [params["model"]], int8=params["precision"] == "int8", progress=note)


def _setup_check(params: dict) -> None:
    """`python -m boardlab.pyrun ai.inference --check`: a vendor's delegate is loaded (its constructors run)
    in a process of its own, never in the orchestrator, as each run loads it."""
    import subprocess

    given = [f"--param={k}={v}" for k, v in params.items() if v is not None]  # None: the default
    argv = [sys.executable, "-m", "boardlab.pyrun", SPEC.name, *given, "--check"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        said = proc.stderr.strip().removeprefix(f"boardlab.pyrun: {SPEC.name}: ")[-800:]
        error = InputError if proc.returncode == 2 else MeasurementError
        raise error(f"{SPEC.name} {_cell_words(params)}: the setup check failed before any run: {said}")


def _cell_words(params: dict) -> str:
    keys = ("runtime", "model", "delegate", "provider")
    return ", ".join(f"{k}={params[k]}" for k in keys if params.get(k))


def check(params: dict) -> None:
    """The setup every run makes before its first frame: the model resolved, the runtime's session opened
    with its delegate or execution provider (rt.open_session); InputError naming what cannot load."""
    from boardlab.ai import resolve_model
    from boardlab.ai import runtime as rt

    if rt.missing_runtime(params["runtime"]):
        return  # unsupported here: the spec says why, nothing to check
    path, _generated = resolve_model(params)
    options = rt.options_from(params["runtime"], **{k: params[k] for k in rt.OPTION_PARAMS})
    rt.open_session(params["runtime"], path, options)


def _summary(values: list[float], unit: str, higher_is_better: bool) -> dict:
    s = sorted(values)
    n = len(s)

    def rank(q: int) -> float:  # nearest rank, as boardlab-kern (a percent: 90, 99)
        return s[max(0, min(n - 1, -(-q * n // 100) - 1))]

    median = (s[(n - 1) // 2] + s[n // 2]) / 2
    return {
        "unit": unit,
        "higher_is_better": higher_is_better,
        "values": values,
        "median": median,
        "min": s[0],
        "max": s[-1],
        "p90": rank(90),
        "p99": rank(99),
    }


def _sha256(path: str) -> str:
    import hashlib

    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _cold_start(mode: str, path: str, delegate_options: dict) -> str | None:
    """Applies the cold-start mode; returns what was done (None when unsupported: the caller reports it)."""
    from boardlab.platform import pagecache

    if mode == "off":
        return "warm (no cache action)"
    if mode == "drop":
        if pagecache.drop_unsupported("/") is not None:
            return None
        pagecache.drop_page_cache("/")
        return "page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"
    files = [path]
    artifacts = delegate_options.get("artifacts_folder")
    if artifacts and os.path.isdir(artifacts):  # TIDL artifacts are read at load too
        files += [os.path.join(artifacts, f) for f in sorted(os.listdir(artifacts))]
    files = [f for f in files if os.path.isfile(f)]
    for f in files:
        pagecache.evict_file(f)
    return f"{len(files)} file(s) evicted from the page cache (posix_fadvise DONTNEED)"


def run(params: dict, iterations: int | None = None) -> dict:
    from boardlab.ai import resolve_model
    from boardlab.ai import runtime as rt
    from boardlab.platform import process

    runtime = params["runtime"]
    missing = rt.missing_runtime(runtime)
    if missing:
        return {"ok": False, "supported": False, "reason": missing, "errors": [], "metrics": {}}
    frames = params["frames"] or iterations or DEFAULT_FRAMES
    if frames < 2:
        raise InputError(f"frames = {frames}: at least 2 (frame 0 is the first inference, kept apart)")
    path, generated = resolve_model(params)
    options = rt.options_from(runtime, **{k: params[k] for k in rt.OPTION_PARAMS})
    cold = _cold_start(params["cold"], path, options.delegate_options)
    if cold is None:
        from boardlab.platform.pagecache import drop_unsupported

        reason = f"cold=drop: {drop_unsupported('/')}; cold=evict needs no privilege"
        return {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}
    os.environ.setdefault("TIDL_RT_PERFSTATS", "1")  # TI's runtimes fill get_TI_benchmark_data() with it

    t0 = rt.now_ns()
    if runtime == "onnxruntime":
        import onnxruntime  # noqa: F401  (import time is kept apart from load time)
    else:
        rt.litert_module()
    import numpy  # noqa: F401  (the frames' arrays: its import counts in import_ms, not in load_ms)

    import_ms = (rt.now_ns() - t0) / 1e6
    session = rt.open_session(runtime, path, options)
    pool = rt.synthetic_frames(session.inputs, min(frames, DISTINCT_FRAMES), params["seed"])
    names = session.output_names
    loop = _timed_frames(session, pool, frames)
    metrics = _metrics(loop, session.load_ms, process.peak_rss_kib()) if not loop.errors else {}
    latencies, detections, errors = loop.latencies_ns, loop.detections, loop.errors
    info = {
        "model": path,
        "model_generated": generated,
        "model_sha256": _sha256(path),
        "model_bytes": os.path.getsize(path),
        "precision": params["precision"] if generated else "as in the file",
        "frames": frames,
        "distinct_frames": len(pool),
        "input_seed": params["seed"],
        "inputs": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in session.inputs],
        "outputs": names,
        "cold": cold,
        "import_ms": import_ms,
        "timer": "CLOCK_MONOTONIC_RAW around the timed call only",
        "latency_ms_excludes": "frame 0 (first_inference_ms)",
        "detection_score_threshold": DETECTION_SCORE if detections else None,
        "ti_benchmark": "per frame (get_TI_benchmark_data)"
        if session.ti_offered
        else "not offered by this runtime",
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        **session.info,
    }
    if generated:
        info.update(_manifest_facts(path, generated, info["model_sha256"]))
    return {
        "ok": not errors,
        "errors": errors,
        "iterations_ns": latencies,
        "metrics": metrics,
        "info": info,
        "checksum": loop.checksum,
    }


@dataclasses.dataclass
class _Loop:
    """What the timed frames gave: each frame's inference time, the detections counted, TI's per-frame
    figures, frame 0's output checksum, the wall time of frames 1.. and the error that stopped them."""

    latencies_ns: list[int] = dataclasses.field(default_factory=list)
    detections: list[int] = dataclasses.field(default_factory=list)
    ti_frames: list[dict] = dataclasses.field(default_factory=list)
    checksum: str | None = None
    loop_ns: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)


def _timed_frames(session, pool: list, frames: int) -> _Loop:
    """`frames` inferences, only the call timed; outputs read outside the timing (frame 0's for its
    checksum, every frame's where the model outputs detections)."""
    from boardlab.ai import runtime as rt

    names = session.output_names
    each_frame_outputs = rt.has_detection_outputs(names)  # counted per frame, outside the timed call
    loop = _Loop()
    loop_start = 0
    try:
        for i in range(frames):
            session.prepare(pool[i % len(pool)])
            a = rt.now_ns()
            session.invoke()
            b = rt.now_ns()
            loop.latencies_ns.append(b - a)
            if i == 0:
                loop_start = b
            if session.ti_offered:
                loop.ti_frames.append(rt.ti_frame_figures(session.ti_benchmark() or {}))
            if i == 0 or each_frame_outputs:
                outputs = session.outputs()
                if i == 0:
                    loop.checksum = _checksum(outputs)
                count = rt.detection_count(names, outputs, DETECTION_SCORE)
                if count is not None:
                    loop.detections.append(count)
        loop.loop_ns = rt.now_ns() - loop_start
    except Exception as exc:  # a runtime failing mid-run: a failed measurement, not bad input
        loop.errors.append(f"frame {len(loop.latencies_ns)}: {type(exc).__name__}: {str(exc).strip()[:400]}")
        loop.loop_ns = 0
    return loop


def _checksum(outputs) -> str:
    import hashlib

    import numpy as np

    digest = hashlib.sha256()
    for o in outputs:
        digest.update(np.ascontiguousarray(o).tobytes())
    return digest.hexdigest()[:16]


def _metrics(loop: _Loop, load_ms: float, peak_kib: int | None) -> dict:
    """The run's metrics from frames 1.. (frame 0 is first_inference_ms); none without a steady frame."""
    steady = [v / 1e6 for v in loop.latencies_ns[1:]]
    if not steady:
        return {}
    metrics: dict = {"latency_ms": _summary(steady, "ms", False)}
    metrics |= spec_metrics(
        SPEC,
        {
            "first_inference_ms": loop.latencies_ns[0] / 1e6,
            "load_ms": load_ms,
            "fps": len(steady) / (loop.loop_ns / 1e9) if loop.loop_ns > 0 else None,
            "peak_rss_kib": peak_kib,
        },
    )
    if loop.detections:
        metrics["detections"] = _summary([float(d) for d in loop.detections], "count", False)
    for key, unit in (
        ("tidl_proc_ms", "ms"),
        ("tidl_copy_ms", "ms"),
        ("ddr_read_mb", "MB"),
        ("ddr_write_mb", "MB"),
    ):
        vals = [f[key] for f in loop.ti_frames if key in f]
        if vals:
            metrics[key] = _summary(vals, unit, False)
    return metrics


def _manifest_facts(path: str, name: str, sha: str) -> dict:
    """MACs and params of a generated model from its directory's manifest, and whether the file matches."""
    from boardlab.ai.build import load_manifest

    manifest = load_manifest(os.path.dirname(path)) or {}
    for m in manifest.get("models", []):
        for f in m.get("files", []) if m.get("name") == name else []:
            if f.get("file") == os.path.basename(path):
                return {
                    "macs": f.get("macs"),
                    "params": f.get("params"),
                    "manifest_sha256_match": f.get("sha256") == sha,
                }
    return {"manifest_sha256_match": None}


# As a continuous load it is the inference loop (`python -m boardlab.ai.loop`: one model, frames back to back
# until stopped); these are the parameters the loop takes, and its flag for each.
LOAD_FLAGS = {
    "model": "--model",
    "runtime": "--runtime",
    "precision": "--precision",
    "threads": "--threads",
    "spin": "--spin",
    "xnnpack": "--xnnpack",
    "delegate": "--delegate",
    "delegate_options": "--delegate-options",
    "provider": "--provider",
    "provider_options": "--provider-options",
    "models_dir": "--models-dir",
    "seed": "--seed",
}


def load_argv(params) -> list[str]:
    argv = [sys.executable, "-m", "boardlab.ai.loop"]
    for key, value in params.items():
        if key in LOAD_FLAGS and value is not None:
            argv += [LOAD_FLAGS[key], str(value)]
    return argv


# the hooks name this module's functions, so they join the spec here, at the end
SPEC = dataclasses.replace(SPEC, prepare=prepare, load_argv=load_argv, load_params=tuple(LOAD_FLAGS))
