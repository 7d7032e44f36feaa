"""`python -m boardlab.pyrun NAME [--param k=v]... [--iterations N] [--json]`: one run of a Python workload.

The counterpart of boardlab-kern for workloads that need a Python API (AI runtimes) or drive a tool
(cyclictest): one fresh process per run, printing one worker result (boardlab.model.worker_result: the same
versioned JSON object as boardlab-kern's: iterations_ns, metrics with per-iteration values and summaries,
ok, supported, errors), so the runner, the store and the reports treat both alike. Exit codes: 0 ok,
1 failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys

from boardlab.errors import BoardlabError
from boardlab.model.worker_result import WorkerResultError, build_worker_result
from boardlab.workloads import python_workload_modules


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m boardlab.pyrun")
    p.add_argument("workload")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument(
        "--iterations", type=int, default=None, help="measured iterations, if the workload has them"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--check",
        action="store_true",
        help="only the workload's setup check (its `check` hook: what a run sets up before it measures), "
        "exit 0 or the error's code with its message; nothing is measured or printed on stdout",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    modules = python_workload_modules()
    module = modules.get(args.workload)
    if module is None:
        print(
            f"boardlab.pyrun: unknown workload {args.workload!r}; valid: {', '.join(modules)}",
            file=sys.stderr,
        )
        return 2
    from boardlab.workloads.params import coerce_params

    try:
        params = coerce_params(module.SPEC, args.param)
    except BoardlabError as exc:
        print(f"boardlab.pyrun: {args.workload}: {exc}", file=sys.stderr)
        return 2
    reason = module.supported() if hasattr(module, "supported") else None
    if args.check:
        return _check(module, args.workload, params, reason)
    if reason:
        result = {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}
    else:
        try:
            result = module.run(params, iterations=args.iterations)
        except BoardlabError as exc:
            print(f"boardlab.pyrun: {args.workload}: {exc}", file=sys.stderr)
            return exc.exit_code
    try:
        doc = build_worker_result("boardlab.pyrun", args.workload, params, result)
    except WorkerResultError as exc:  # a workload's body that the runner could not read: its bug, said here
        print(f"boardlab.pyrun: {args.workload}: internal error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(doc.to_json())
    else:
        print(f"{args.workload}: {'ok' if doc.ok else 'FAILED'}")
        for m in doc.metrics:
            print(f"  {m.name:<28} {m.median} {m.unit}")
        for e in doc.errors:
            print(f"  error: {e}")
    return 0 if doc.ok else 1


def _check(module, workload: str, params: dict, unsupported: str | None) -> int:
    """`--check`: the setup a run makes before it measures (an AI runtime's delegate loaded, its session
    opened), in this fresh process as a run would make it; an unsupported workload has nothing to check."""
    check = getattr(module, "check", None)
    if unsupported or check is None:
        return 0
    try:
        check(params)
    except BoardlabError as exc:
        print(f"boardlab.pyrun: {workload}: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
