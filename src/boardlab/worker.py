"""`python -m boardlab.worker NAME [--param k=v]... [--iterations N] [--json]`: one run of a Python workload.

The counterpart of boardlab-kern for workloads that need a Python API (AI runtimes) or drive a tool
(cyclictest): one fresh process per run, printing one schema-1 JSON object of the same shape as
boardlab-kern's (iterations_ns, metrics with per-iteration values and summaries, ok, supported, errors),
so the runner, the store and the reports treat both alike. Exit codes: 0 ok, 1 failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from boardlab.errors import BoardlabError
from boardlab.workloads import python_workload_modules

WORKER_SCHEMA = 1


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m boardlab.worker")
    p.add_argument("workload")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument(
        "--iterations", type=int, default=None, help="measured iterations, if the workload has them"
    )
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    modules = python_workload_modules()
    module = modules.get(args.workload)
    if module is None:
        print(
            f"boardlab.worker: unknown workload {args.workload!r}; valid: {', '.join(modules)}",
            file=sys.stderr,
        )
        return 2
    from boardlab.workloads.params import coerce_params

    try:
        params = coerce_params(module.SPEC, args.param)
    except BoardlabError as exc:
        print(f"boardlab.worker: {args.workload}: {exc}", file=sys.stderr)
        return 2
    reason = module.supported() if hasattr(module, "supported") else None
    if reason:
        result = {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}
    else:
        try:
            result = module.run(params, iterations=args.iterations)
        except BoardlabError as exc:
            print(f"boardlab.worker: {args.workload}: {exc}", file=sys.stderr)
            return exc.exit_code
    doc = {
        "schema": WORKER_SCHEMA,
        "tool": "boardlab.worker",
        "workload": args.workload,
        "params": params,
        "supported": True,
        "reason": None,
        **result,
    }
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"{args.workload}: {'ok' if doc.get('ok') else 'FAILED'}")
        for name, m in (doc.get("metrics") or {}).items():
            print(f"  {name:<28} {m.get('median', m.get('value'))} {m.get('unit')}")
        for e in doc.get("errors") or []:
            print(f"  error: {e}")
    return 0 if doc.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
