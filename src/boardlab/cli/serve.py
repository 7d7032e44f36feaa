"""`boardlab serve --db PATH|URL`: a read-only web view of a store (docs/lab.md)."""

from __future__ import annotations

DESCRIPTION = (
    "Serve a results store (a SQLite file or a postgresql:// URL) read-only on the web: boards, campaigns "
    "(the report's document), comparisons of any two campaigns or boards, a plan's history per board with "
    "its steps marked, and running campaigns refreshed live. Every page has a .json twin. Binds 127.0.0.1 "
    "unless --host is given; any other address requires a token (docs/lab.md)."
)
TOKEN_ENV = "BOARDLAB_SERVE_TOKEN"


def add_arguments(parser) -> None:
    parser.add_argument("--db", required=True, help="the store: a SQLite file or a postgresql:// URL")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help=f"read the access token from this file (else ${TOKEN_ENV}, else a random one printed at start); "
        "required on any address but loopback, used on loopback too when given",
    )
    parser.add_argument(
        "--no-backfill",
        action="store_true",
        help="do not compute and store, in the background, the summaries of the campaigns that lack one (a "
        "read-only lab setup); their pages are computed when viewed",
    )


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


MIN_TOKEN = 16
TOKEN_FILE_MAX_CHARS = 4096  # a token is a line; a longer file is not the token's
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _token(args) -> str | None:
    """The token from --token-file, else $BOARDLAB_SERVE_TOKEN (set, even empty), else a random one off
    loopback; every source holds to the same rule (`_checked`)."""
    import os
    import secrets

    if args.token_file:
        return _checked(_token_file(args.token_file), f"--token-file {args.token_file}")
    if TOKEN_ENV in os.environ:
        return _checked(os.environ[TOKEN_ENV], f"${TOKEN_ENV}")
    return None if is_loopback(args.host) else secrets.token_urlsafe(24)


def _token_file(path: str) -> str:
    """The text of --token-file (a FIFO too: `--token-file <(pass show lab)`), read up to a bound: /dev/zero
    given by mistake has no end."""
    from boardlab.errors import InputError

    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read(TOKEN_FILE_MAX_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--token-file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > TOKEN_FILE_MAX_CHARS:
        raise InputError(
            f"--token-file {path}: over {TOKEN_FILE_MAX_CHARS} characters; give a file holding the token"
        )
    return raw


def _checked(raw: str, source: str) -> str:
    """At least MIN_TOKEN characters, of those a URL, a cookie and a header carry unchanged (letters, digits,
    - . _ ~): a short one is guessed, and a space or a + would not survive the ?token= address."""
    from boardlab.errors import InputError

    token = raw.strip()
    make = "make one with `python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`"
    if len(token) < MIN_TOKEN:
        raise InputError(
            f"{source}: the token must be at least {MIN_TOKEN} characters, it has {len(token)}; {make}"
        )
    if not set(token) <= TOKEN_CHARS:
        raise InputError(f"{source}: the token may hold only letters, digits and - . _ ~; {make}")
    return token


def run(args) -> int:
    import os

    from boardlab.cli.workload_facts import store_missing_facts
    from boardlab.errors import InputError
    from boardlab.store import Store
    from boardlab.store.pg import display_url, is_url

    if not 0 <= args.port <= 65535:
        raise InputError(f"--port {args.port}: expected 0 to 65535")
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise InputError(
            f"boardlab serve needs the web extra ({exc.name} is missing): pip install 'boardlab[web]'"
        ) from None
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from boardlab.web.guard import Guard, limits, quiet_logs

    token = _token(args)  # a bad token is refused before the store is read
    lim = limits()
    # a bad --db (not a store, a newer schema) is refused here, before anything listens; the full check of
    # every value (`Store.verify`, minutes on a store of millions of runs) runs beside the pages
    # (web/check.py), and each request opens the store without it
    store_missing_facts(args.db)  # campaigns stored before their workloads' facts were: stored once, here
    with Store.open(args.db, create=False, verify=False):
        pass
    app, (check, background, backfill) = _site(args, token, lim)
    sock = _listen(
        args.host, args.port, lim.backlog
    )  # bound here: a refused address is one line, --port 0 known
    guard = Guard(lim)
    sock = guard.listener(sock)
    config = uvicorn.Config(
        app, http=guard.factory(AutoHTTPProtocol), backlog=lim.backlog, log_level="warning",
        access_log=False, server_header=False, proxy_headers=False,
    )  # fmt: skip
    quiet_logs(debug=bool(os.environ.get("BOARDLAB_DEBUG")))  # after uvicorn.Config: it sets the loggers up
    bound = sock.getsockname()
    url = f"http://{'[' + bound[0] + ']' if ':' in bound[0] else bound[0]}:{bound[1]}/"
    # read-only unless the backfill stores summaries (said on its own line below)
    writes = backfill.state().state != "off"
    where = display_url(args.db) if is_url(args.db) else args.db
    print(f"serving {where}{'' if writes else ' read-only'} at {url}", flush=True)
    if token is not None:
        print(
            "token required on every request (Authorization: Bearer TOKEN, or open "
            f"{url}?token={token} once)",
            flush=True,
        )
    check.start()
    print("checking every value of the store beside the pages (its state: /check)", flush=True)
    backfill.start()
    background.warm()  # the worker started before a page needs it
    off = backfill.state().why if backfill.state().state == "off" else None
    print(f"summaries backfill off: {off}" if off else "storing the summaries the store lacks in the "
          "background, newest campaign first (its state: /backfill)", flush=True)  # fmt: skip
    _serve(uvicorn.Server(config), sock, backfill, background)
    return 0


def _site(args, token: str | None, lim):
    """The application and what runs beside its pages: (app, (store check, worker, backfill))."""
    from boardlab.web.app import create_app
    from boardlab.web.backfill import Backfill, off_reason
    from boardlab.web.background import Background
    from boardlab.web.check import StoreCheck

    check = StoreCheck(args.db, on_done=_say_checked)
    background = Background(args.db)  # one worker for the pages' analyses and the backfill's
    backfill = Backfill(args.db, background, check, off=off_reason(args.db, args.no_backfill),
                        on_done=_say_backfilled)  # fmt: skip
    app = create_app(args.db, token=token, verify=False, threads=lim.threads, check=check,
                     background=background, backfill=backfill)  # fmt: skip
    return app, (check, background, backfill)


def _serve(server, sock, backfill, background) -> None:
    """Serves until stopped (Ctrl-C, SIGTERM); the backfill and the worker end with the server, mid-analysis
    or not."""
    import signal

    # uvicorn stops on SIGTERM, then raises it again under the handler it found: this one, so the worker is
    # ended and its queues released here (the signal's default, death, left the multiprocessing resource
    # tracker warning of "leaked semaphore objects" at every stop)
    signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        backfill.stop()
        background.close()


class _Stopped(Exception):
    """SIGTERM: serve stops as asked (exit 0)."""


def _stopped(signum, frame) -> None:
    raise _Stopped


def _say_backfilled(state) -> None:
    """The backfill's end, on serve's output (from its thread): done, or why it turned off."""
    from boardlab.web.backfill import status_text

    print(f"summaries backfill: {status_text(state, state.started_unix_s)}", flush=True)


def _say_checked(state) -> None:
    """The check's end, on serve's output (from the check's thread): passed, or the damage every page now
    names."""
    if state.state == "passed":
        print(f"store check passed in {state.took_s:.1f} s", flush=True)
    elif state.state == "unfinished":
        print(f"store check did not finish: {state.problem}; the pages are served unchecked", flush=True)
    else:
        print(f"store check FAILED: {state.problem}; every page answers 503 naming it", flush=True)


def _listen(host: str, port: int, backlog: int):
    import socket

    from boardlab.errors import InputError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(backlog)  # connections queue from here on: the address printed next is ready
    except OSError as exc:
        raise InputError(f"--host {host} --port {port}: cannot listen there: {exc.strerror or exc}") from None
    return sock
