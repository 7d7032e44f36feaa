"""`boardlab serve --db PATH|URL`: a read-only web view of a store (docs/lab.md)."""

from __future__ import annotations

HELP = (
    "serve a store's boards, campaigns, comparisons, histories and running campaigns as read-only web pages"
)
DESCRIPTION = (
    "Serve a results store (a SQLite file or a postgresql:// URL) read-only on the web: boards, campaigns (the "
    "report's document), comparisons of any two campaigns or boards, a plan's history per board with its "
    "steps marked, and running campaigns refreshed live. Every page has a .json twin. Binds 127.0.0.1 unless "
    "--host is given; any other address requires a token (docs/lab.md)."
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


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


def _token(args) -> str | None:
    import os
    import secrets

    from boardlab.errors import InputError

    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise InputError(f"--token-file {args.token_file}: {exc.strerror}") from None
        if len(token) < 16:
            raise InputError(f"--token-file {args.token_file}: the token must be at least 16 characters")
        return token
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    return None if is_loopback(args.host) else secrets.token_urlsafe(24)


def run(args) -> int:
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
    # a bad --db is refused here, before anything listens; the store is verified once, here (`Store.verify`: a
    # full scan), and each request opens it without that scan
    with Store.open(args.db, create=False):
        pass
    token = _token(args)
    from boardlab.web.app import create_app

    app = create_app(args.db, token=token, verify=False)
    sock = _listen(args.host, args.port)  # bound here: a refused address is one line, and --port 0 is known
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, server_header=False, proxy_headers=False
    )
    bound = sock.getsockname()
    url = f"http://{'[' + bound[0] + ']' if ':' in bound[0] else bound[0]}:{bound[1]}/"
    print(f"serving {display_url(args.db) if is_url(args.db) else args.db} read-only at {url}", flush=True)
    if token is not None:
        print(f"token required on every request (Authorization: Bearer TOKEN, or open {url}?token={token} once)",
              flush=True)  # fmt: skip
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _listen(host: str, port: int):
    import socket

    from boardlab.errors import InputError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)  # connections queue from here on: the address printed next is ready
    except OSError as exc:
        raise InputError(f"--host {host} --port {port}: cannot listen there: {exc.strerror or exc}") from None
    return sock
