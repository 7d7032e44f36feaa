"""`boardlab models build`: the six edge-AI models of the interference study, generated offline."""

from __future__ import annotations

import json
import sys

DESCRIPTION = (
    "Generate MobileNet v1/v2, SSD MobileNet v1/v2 (300x300, 1917 anchors, detection post-processing) and "
    "ResNet18/50 with seeded random weights, as ONNX (opset 13, IR 8) and TFLite files (float, and int8 with "
    "--int8), plus a manifest with each file's shapes, MACs, parameters and sha256. Offline: no model hub. "
    "Latency does not depend on weight values; accuracy is not what these files are for."
)


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build the model files and their manifest", description=DESCRIPTION)
    b.add_argument("--out", metavar="DIR", help="output directory (default: $XDG_CACHE_HOME/boardlab/models)")
    b.add_argument("--int8", action="store_true", help="also build int8 variants (about 30 s more)")
    b.add_argument("--seed", type=int, default=0, help="weight seed (default 0): same seed, same bytes")
    b.add_argument("--models", metavar="A,B", help="only these models (default: all six)")
    b.add_argument("--json", action="store_true", help="print the manifest (JSON) instead of progress lines")


def run(args) -> int:
    from boardlab.ai import default_models_dir
    from boardlab.ai.build import build_models, parse_model_names
    from boardlab.errors import InputError
    from boardlab.export import check_output_dir

    if args.seed < 0:
        raise InputError(f"--seed {args.seed}: expected a non-negative integer")
    names = parse_model_names(args.models)
    out = args.out or str(default_models_dir())
    check_output_dir(out)  # refused now, not after minutes of building

    def progress(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    manifest = build_models(out, names, seed=args.seed, int8=args.int8, progress=progress)
    if args.json:
        print(json.dumps(manifest, indent=1))
    else:
        print(f"manifest: {manifest['dir']}/manifest.json ({len(manifest['models'])} models)")
    return 0
