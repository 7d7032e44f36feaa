"""`boardlab fleet run`: one plan on every labgrid place with the given tags, results into one store."""

from __future__ import annotations

import json
import sys
import time

HELP = "run a plan on many boards through labgrid (reserve, run detached, fetch, verify, ingest)"
DESCRIPTION = (
    "Run one plan on every board (labgrid place) carrying the given tags: each place is reserved and "
    "acquired through labgrid's coordinator, one worker process per place puts the board bundle for its "
    "architecture there over SSH, starts the campaign detached, waits with a cheap shell check, fetches and "
    "verifies the board's results and ingests them into --db. A board that hangs or dies is power-cycled "
    "(when its place has a labgrid power driver) and its campaign resumed, within --retries. Exit 0: every "
    "board done; 1: some board failed after its retries (said which and why); 2: bad input; 130: "
    "interrupted (every board's campaign stopped, every place released). See docs/fleet.md."
)
DEFAULT_REMOTE_DIR = "/var/tmp/boardlab-fleet"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser("run", help=HELP, description=DESCRIPTION)
    p.add_argument("plan", nargs="?", help="a plan file (TOML), run whole on every board")
    p.add_argument("--preset", help="a bundled plan instead of a file (see `boardlab list --presets`)")
    p.add_argument("--coordinator", required=True, metavar="HOST:PORT", help="labgrid coordinator")
    p.add_argument(
        "--places",
        required=True,
        nargs="+",
        metavar="TAG=VALUE",
        help="the boards: every place carrying all these labgrid tags (e.g. arch=armhf lab=a)",
    )
    p.add_argument(
        "--db", required=True, help="the shared results store: postgresql://... or a SQLite file path"
    )
    p.add_argument(
        "--bundle",
        action="append",
        required=True,
        metavar="FILE.tar.gz",
        help="a board bundle (`boardlab bundle --arch ...`); one per architecture of the boards (repeat)",
    )
    p.add_argument("--ssh-key", metavar="FILE", help="private key for the boards (default: ssh's own)")
    p.add_argument(
        "--lg-env",
        metavar="FILE",
        help="a labgrid environment file; the drivers of its target named like a place (e.g. an "
        "ExternalPowerDriver) are added to that place's target",
    )
    p.add_argument(
        "--remote-dir",
        default=DEFAULT_REMOTE_DIR,
        help=f"directory on the boards, one subdirectory per place (default {DEFAULT_REMOTE_DIR}); an "
        "absolute path of letters, digits and _.+,:=@- (the boards' shell reads it)",
    )
    p.add_argument(
        "--board-timeout",
        type=float,
        default=21600.0,
        metavar="SECONDS",
        help="one attempt of a board's campaign may take this long (default 6 h)",
    )
    p.add_argument("--retries", type=int, default=2, help="attempts after a board's first fails (default 2)")
    p.add_argument(
        "--poll", type=float, default=10.0, metavar="SECONDS", help="check interval (default 10 s)"
    )
    p.add_argument(
        "--boot-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="wait this long for SSH after a power cycle (default 300 s)",
    )
    p.add_argument(
        "--reserve-timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="wait this long for a place someone else holds (default 1 h)",
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep each board's fetched database and worker log in DIR/PLACE/ (a place named other than "
        "letters, digits and _.-: its readable part and a hash, the summary's `dir`)",
    )
    p.add_argument(
        "--label",
        metavar="TEXT",
        help="name what changed since the last campaign (e.g. 'kernel 6.6 -> 6.12'), given to every board's "
        "`boardlab run --label`; `boardlab history` shows it",
    )
    p.add_argument(
        "--commit",
        metavar="auto|SHA",
        help="the commit every board's campaign measures (auto: git in --source-dir, here, before any board "
        "is touched), given to each board's `boardlab run --commit`; `history` and `serve` show it",
    )
    p.add_argument("--source-dir", metavar="DIR", help="the checkout --commit auto reads (default: .)")
    p.add_argument(
        "--branch", metavar="NAME", help="the branch measured (default with --commit auto: HEAD's)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _bundles(paths: list[str]) -> dict[str, str]:
    import tarfile
    from pathlib import Path

    from boardlab.errors import InputError
    from boardlab.userfile import open_user_file

    out: dict[str, str] = {}
    for path in paths:
        give = "one made by `boardlab bundle`"
        try:  # a FIFO is refused, not waited on
            with open_user_file(path, what="board bundle", give=give, option="--bundle") as f:
                with tarfile.open(fileobj=f, mode="r:gz") as tar:
                    member = next((m for m in tar.getmembers() if m.name.endswith("/bundle.json")), None)
                    raw = tar.extractfile(member) if member else None
                    doc = json.load(raw) if raw is not None else None
        except (OSError, tarfile.TarError, json.JSONDecodeError) as exc:
            raise InputError(f"--bundle {path}: not a readable board bundle ({exc})") from None
        if not doc or doc.get("schema") != 1 or "arch" not in doc:
            raise InputError(f"--bundle {path}: no bundle.json of schema 1; make it with `boardlab bundle`")
        if doc["arch"] in out:
            raise InputError(
                f"--bundle {path}: a second bundle for {doc['arch']} (first: {out[doc['arch']]})"
            )
        out[doc["arch"]] = str(Path(path).resolve())
    return out


LG_ENV_MAX_BYTES = 1 << 20


def _read_lg_env(path: str | None) -> dict | None:
    """The `targets` table of the labgrid environment --lg-env names (None without one), read with the
    other inputs, before the coordinator is contacted: a wrong file is named before anything else is done."""
    from boardlab.errors import InputError

    if not path:
        return None
    import yaml

    from boardlab.userfile import read_user_file

    give = "a labgrid environment (YAML)"
    # a FIFO is refused, /dev/zero read up to the bound: a labgrid environment is a page of YAML
    data = read_user_file(
        path, what="labgrid environment", give=give, max_bytes=LG_ENV_MAX_BYTES, option="--lg-env"
    )
    try:
        doc = yaml.safe_load(data.decode()) or {}
    except UnicodeDecodeError as exc:
        raise InputError(f"--lg-env {path}: not UTF-8 text (byte {exc.start}); give {give}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"--lg-env {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    targets = doc.get("targets") if isinstance(doc, dict) else None
    if not isinstance(targets, dict):
        raise InputError(f"--lg-env {path}: expected a labgrid environment with a 'targets' table")
    return targets


def _lg_drivers(targets: dict | None, places: list[str], path: str | None) -> dict[str, list]:
    """Each place's drivers from the environment's `targets` (`_read_lg_env`); none without one."""
    from boardlab.errors import InputError

    out: dict[str, list] = {}
    if targets is None:
        return out
    for place in places:
        drivers = (targets.get(place) or {}).get("drivers") or []
        if isinstance(drivers, dict):
            drivers = [{k: v} for k, v in drivers.items()]
        if not isinstance(drivers, list):
            raise InputError(f"--lg-env {path}: targets.{place}.drivers: expected a list or a table")
        out[place] = drivers
    return out


def run(args) -> int:
    from boardlab.errors import InputError, MeasurementError
    from boardlab.fleet.controller import FleetSpec, run_fleet, summary
    from boardlab.fleet.coordinator import Coordinator, need_labgrid, parse_address, parse_tags
    from boardlab.fleet.names import remote_root
    from boardlab.report.escape import term

    _check_options(args)
    address = parse_address(args.coordinator)
    tags = parse_tags(args.places)
    remote_root(args.remote_dir)  # it reaches the boards' shell: refused here, before any board is touched
    from boardlab.campaign.identity import resolve

    identity = resolve(args.commit, args.branch, args.source_dir)  # git asked here, not on the boards
    plan = _fleet_plan(args)
    bundles = _bundles(args.bundle)
    _check_paths(args)
    need_labgrid()
    lg_targets = _read_lg_env(args.lg_env)
    try:
        from boardlab.store.ingest import ingest_file
    except ImportError:
        raise MeasurementError(
            "unsupported: this boardlab has no store ingest (boardlab.store.ingest)"
        ) from None

    import logging

    logging.getLogger().addHandler(logging.NullHandler())  # labgrid logs to the root logger: our lines say it
    coord = Coordinator(address)
    try:
        found = coord.places(tags)
    finally:
        coord.close()
    want = " ".join(f"{k}={v}" for k, v in tags.items())
    if not found:
        raise InputError(f"--places {want}: no place on the coordinator {address} carries these tags")
    lg_drivers = _lg_drivers(lg_targets, list(found), args.lg_env)
    spec = FleetSpec(
        coordinator=address,
        tags=tags,
        plan_text=plan.source,
        plan_source=plan.source_name,
        db=args.db,
        bundles=bundles,
        remote_root=args.remote_dir,
        keyfile=args.ssh_key,
        drivers=lg_drivers,
        poll_s=args.poll,
        board_timeout_s=args.board_timeout,
        boot_timeout_s=args.boot_timeout,
        reserve_timeout_s=args.reserve_timeout,
        retries=args.retries,
        keep=args.keep,
        label=args.label,
        run_args=tuple(identity.run_args()) if identity else (),
    )
    t0 = time.monotonic()

    def say(place, message):
        who = f"{place}: " if place else ""
        print(f"fleet [{time.monotonic() - t0:6.0f} s] {term(who + message)}", file=sys.stderr, flush=True)

    def ingest(path):
        from boardlab.summary import keep_after

        def summaries(store, result):  # for `boardlab serve` and `history` (boardlab.summary)
            keep_after(store, result.campaign_ids, lambda text: say(None, f"warning: {text}"))

        return ingest_file(path, args.db, then=summaries).to_dict()

    say(None, f"plan {plan.name}: {len(found)} boards ({', '.join(found)}) with {want}")
    results, interrupted = run_fleet(spec, list(found), say, ingest)
    doc = summary(spec, found, results)
    if args.json:
        print(json.dumps(doc))
    else:
        _print_results(results, doc, args.db)
    if interrupted:
        return 130
    return 0 if doc["failed"] == 0 else 1


def _check_options(args) -> None:
    """The plan choice and the numeric options, refused before anything is contacted."""
    from boardlab.errors import InputError

    if bool(args.plan) == bool(args.preset):
        raise InputError("give a plan file or --preset NAME (one of them)")
    for name, value, low in (
        ("--board-timeout", args.board_timeout, 1),
        ("--poll", args.poll, 0.2),
        ("--boot-timeout", args.boot_timeout, 1),
        ("--reserve-timeout", args.reserve_timeout, 1),
    ):
        if not value >= low:
            raise InputError(f"{name} {value:g}: expected at least {low:g} s")
    if not 0 <= args.retries <= 100:
        raise InputError(f"--retries {args.retries}: expected 0 to 100")


def _fleet_plan(args):
    """The plan, checked here before any board is touched; a [sweep] would expand on each board."""
    from boardlab.campaign.plan import load_plan, plan_catalog
    from boardlab.campaign.schedule import build_cells
    from boardlab.errors import InputError
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    plan = load_plan(args.plan, args.preset, catalog)
    if plan.sweep is not None:
        raise InputError(
            f"{plan.source_name}: [sweep]: a fleet plan may not use [sweep] (each board would expand its own "
            "grid, and their campaigns would not compare); give the conditions as [[conditions]]"
        )
    build_cells(plan, plan_catalog(plan, catalog))  # its matrix too (MAX_CELLS): refused here, not per board
    return plan


def _check_paths(args) -> None:
    """The SSH key, the --keep directory and the store's directory exist."""
    from pathlib import Path

    from boardlab.errors import InputError
    from boardlab.store import pg

    if args.ssh_key:  # readable, and a file (a FIFO is refused, not waited on)
        from boardlab.userfile import open_user_file

        open_user_file(
            args.ssh_key, what="SSH key", give="the boards' private key", option="--ssh-key"
        ).close()
    if args.keep and not Path(args.keep).is_dir():
        raise InputError(f"--keep {args.keep}: no such directory")
    if not pg.is_url(args.db) and not Path(args.db).resolve().parent.is_dir():
        raise InputError(f"--db {args.db}: the directory {Path(args.db).parent} does not exist")


def _print_results(results, doc: dict, db: str) -> None:
    """One line per board (status, runs, attempts, power cycles, reason) and what is unfinished."""
    from boardlab.report.escape import term

    for r in results:
        runs = f"{r.runs} runs ({r.valid_runs} valid)" if r.runs is not None else "no results fetched"
        tries = len(r.attempts)
        line = f"{r.place}: {r.status}, {runs}, {tries} attempt{'s' if tries != 1 else ''}"
        if r.power_cycles:
            line += f", {r.power_cycles} power cycle{'s' if r.power_cycles != 1 else ''}"
        if r.reason:
            line += f": {r.reason}"
        print(term(line))
        for key, reps in sorted(r.unfinished.items()):
            print(term(f"  unfinished: {key} repetitions {', '.join(map(str, reps))}"))
    print(f"{doc['done']} of {len(results)} boards done; results in {term(db)}")
