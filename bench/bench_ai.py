"""ai.inference's per-frame p50 against each runtime's own way of timing the same model.

LiteRT: A = `python -m boardlab.pyrun ai.inference` (Interpreter API, invoke() timed), B = LiteRT's own
benchmark tool shipped in the wheel (`python -m ai_edge_litert.tools.benchmark_litert_model`, CompiledModel
API, its "median_ms"), same model, same threads, same number of measured frames. ONNX Runtime: B = a
minimal loop in a fresh interpreter (a few lines calling session.run, timed with perf_counter). Each A and
B is a fresh process; pairs alternate A B, B A (the VM drifts; an order effect cancels); the figure is the
median of the pairwise ratios of medians. Target: within 10%.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAIRS = 8  # even: as many pairs in each order
FRAMES = 60  # measured frames per process: a few seconds per pair
THREADS = 1
MODELS = ("mobilenet_v2", "ssd_mobilenet_v1")

ORT_LOOP = """
import json, statistics, sys, time
import numpy as np, onnxruntime as ort
path, frames, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
so = ort.SessionOptions(); so.intra_op_num_threads = threads
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
x = np.random.default_rng(0).uniform(-1, 1, i.shape).astype(np.float32)
s.run(None, {i.name: x})
t = []
for _ in range(frames):
    a = time.perf_counter(); s.run(None, {i.name: x}); t.append(time.perf_counter() - a)
print(json.dumps({"median_ms": statistics.median(t) * 1000}))
"""


def boardlab_p50(runtime: str, model: str, models_dir: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "boardlab.pyrun", "ai.inference", "--json"]
        + [
            "--param",
            f"runtime={runtime}",
            "--param",
            f"model={model}",
            "--param",
            f"models_dir={models_dir}",
        ]
        + ["--param", f"threads={THREADS}", "--param", f"frames={FRAMES + 1}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["metrics"]["latency_ms"]["median"]


def litert_tool_p50(model: str, models_dir: Path, tmp: Path) -> float:
    result = tmp / "litert.json"
    subprocess.run(
        [sys.executable, "-m", "ai_edge_litert.tools.benchmark_litert_model"]
        + ["--model", str(models_dir / f"{model}.tflite"), "--num_runs", str(FRAMES), "--warmup_runs", "1"]
        + ["--num_threads", str(THREADS), "--result_json", str(result)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.read_text())["latency"]["median_ms"]


def ort_loop_p50(model: str, models_dir: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", ORT_LOOP, str(models_dir / f"{model}.onnx"), str(FRAMES), str(THREADS)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["median_ms"]


def compare(label: str, a_fn, b_fn) -> float:
    from boardlab.xcheck.pairs import alternate, ratios_of

    done = alternate(PAIRS, a_fn, b_fn)  # A B, B A, ...: an order effect cancels and shows
    r = ratios_of(done, lambda a, b: a / b)
    verdict = "PASS" if abs(r.median - 1) <= 0.10 else "FAIL"
    print(
        f"{label}: boardlab p50 {statistics.median(a for a, _, _ in done):.2f} ms, reference "
        f"{statistics.median(b for _, b, _ in done):.2f} ms; {r.describe('boardlab', 'reference')}  "
        f"[{min(r.ratios):.3f}..{max(r.ratios):.3f}]  target within 10% -> {verdict}"
    )
    return r.median


def main() -> int:
    try:
        import ai_edge_litert.tools.benchmark_litert_model  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        print(f"the ai extra is not installed ({exc}): pip install 'boardlab[ai]'")
        return 1
    from boardlab.ai.build import build_models

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        build_models(tmp, MODELS)
        print(
            f"built {', '.join(MODELS)} in {time.monotonic() - t0:.1f} s; {FRAMES} frames, "
            f"{THREADS} thread(s)"
        )
        for model in MODELS:
            compare(
                f"{model} LiteRT vs benchmark_litert_model",
                lambda m=model: boardlab_p50("litert", m, tmp),
                lambda m=model: litert_tool_p50(m, tmp, tmp),
            )
            compare(
                f"{model} ONNX Runtime vs a minimal session.run loop",
                lambda m=model: boardlab_p50("onnxruntime", m, tmp),
                lambda m=model: ort_loop_p50(m, tmp),
            )
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
