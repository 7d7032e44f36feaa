"""`python -m boardlab.ai.loop --model M --runtime R --threads N [--duration S]`: inference as a background
load.

The interference study's real-time part runs an AI workload beside cyclictest. This loop runs one model's
inference back to back until SIGINT or SIGTERM (or `--duration` seconds), then prints one JSON summary
(schema 1): frames done, frames per second, latency percentiles. A plain argv, so a background-command
condition can start it; it stops at the end of the frame in flight and exits 0. After its first frame it says
so on stderr (one line), so a caller can wait until the runtime is loaded. Exit 2 on bad input (a missing
model file, an unloadable delegate), with the reason on stderr and no JSON.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from boardlab.errors import BoardlabError

LOOP_SCHEMA = 1


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m boardlab.ai.loop", description=__doc__.split("\n\n")[1])
    p.add_argument("--model", default="mobilenet_v1", help="a generated model name or an .onnx/.tflite path")
    p.add_argument("--runtime", choices=("onnxruntime", "litert"), default="litert")
    p.add_argument("--precision", choices=("float", "int8"), default="float")
    p.add_argument("--threads", type=int, default=0, help="0 = the runtime's default")
    p.add_argument("--spin", choices=("on", "off"), default="on")
    p.add_argument("--xnnpack", choices=("on", "off"), default="on")
    p.add_argument("--delegate", default=None, metavar="SO")
    p.add_argument("--delegate-options", default=None, metavar="K=V;K=V")
    p.add_argument("--provider", default=None, metavar="EP")
    p.add_argument("--provider-options", default=None, metavar="K=V;K=V")
    p.add_argument("--models-dir", default=None, metavar="DIR")
    p.add_argument(
        "--duration",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="stop after this many seconds of inference (0: at SIGINT/SIGTERM only)",
    )
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    stop: dict[str, str | None] = {"signal": None}

    def handler(signum, _frame) -> None:
        stop["signal"] = signal.Signals(signum).name

    # installed first: a SIGINT while the runtime loads still ends with a summary
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    try:
        summary = run_loop(args, stop)
    except BoardlabError as exc:
        print(f"boardlab.ai.loop: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps(summary), flush=True)
    return 0


def run_loop(args: argparse.Namespace, stop: dict) -> dict:
    from boardlab.ai import resolve_model
    from boardlab.ai import runtime as rt
    from boardlab.errors import InputError

    missing = rt.missing_runtime(args.runtime)
    if missing:
        raise InputError(missing)
    params = {
        "runtime": args.runtime,
        "model": args.model,
        "precision": args.precision,
        "models_dir": args.models_dir,
    }
    path, _ = resolve_model(params)
    options = rt.options_from(args.runtime, **{k: getattr(args, k) for k in rt.OPTION_PARAMS})
    session = rt.open_session(args.runtime, path, options)
    pool = rt.synthetic_frames(session.inputs, 8, args.seed)
    latencies: list[int] = []
    t_loop = rt.now_ns()
    deadline = t_loop + int(args.duration * 1e9) if args.duration > 0 else None
    i = 0
    while stop["signal"] is None:
        session.prepare(pool[i % len(pool)])
        a = rt.now_ns()
        session.invoke()
        b = rt.now_ns()
        latencies.append(b - a)
        i += 1
        if i == 1:  # the runtime is loaded and inferring: a caller may now time its measurement from here
            print("boardlab.ai.loop: first frame done, running", file=sys.stderr, flush=True)
        if deadline is not None and b >= deadline:
            break
    t_end = rt.now_ns()
    wall_s = (t_end - t_loop) / 1e9
    s = sorted(latencies)

    def rank(q: int) -> float | None:  # nearest rank, as boardlab-kern (a percent: 90, 99)
        return s[max(0, min(len(s) - 1, -(-q * len(s) // 100) - 1))] / 1e6 if s else None

    median = (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2e6 if s else None

    return {
        "schema": LOOP_SCHEMA,
        "tool": "boardlab.ai.loop",
        "model": path,
        "runtime": args.runtime,
        "threads": args.threads,
        "stopped_by": stop["signal"] or ("duration" if deadline is not None else None),
        "frames": len(latencies),
        "wall_s": wall_s,
        "fps": len(latencies) / wall_s if wall_s > 0 else None,
        "load_ms": session.load_ms,
        "latency_ms": {"median": median, "p90": rank(90), "p99": rank(99), "max": s[-1] / 1e6 if s else None},
        "info": session.info,
    }


if __name__ == "__main__":
    raise SystemExit(main())
