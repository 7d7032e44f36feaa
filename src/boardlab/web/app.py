"""`boardlab serve`'s ASGI application (Starlette): read-only pages over a store, each with a `.json` twin.

Safe by default: every response carries a strict Content-Security-Policy (no inline script; the report's one
inline style block allowed by its hash), nothing is framed, nothing is sniffed. With a token (required by
`boardlab serve` on any address but loopback) every request must carry it: `Authorization: Bearer TOKEN`, or
the cookie set by a first visit to `/?token=TOKEN`; anything else is 401. Every stored string reaches the page
through the report's HTML renderer, which escapes it. A database error is a page naming the problem (503), an
unknown campaign or a bad form value a page saying so (404/400), never a traceback. Only GET and HEAD exist.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import urllib.parse
from importlib import resources

from boardlab.errors import BoardlabError, InputError, NotFound
from boardlab.web import pages
from boardlab.web.background import Computing

REFRESH_S = 2  # how soon a page being computed asks again (the Refresh header: no script needed)

COOKIE = "boardlab_token"
LIVE_JS = resources.files("boardlab.web").joinpath("live.js").read_bytes()
NAV = (("/boards", "boards"), ("/campaigns", "campaigns"), ("/compare", "compare"), ("/history", "history"),
       ("/running", "running"))  # fmt: skip
WEB_CSS = (
    "nav.site{display:flex;gap:14px;border-bottom:1px solid #ddd;padding:6px 0;margin-bottom:6px}"
    "form.pick{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:8px 0}"
    "form.pick label{display:flex;flex-direction:column;font-size:12px;color:#555}"
    "p.problem{background:#fdecea;border-left:5px solid #b2182b;padding:6px 10px}"
)


def _csp() -> str:
    from boardlab.report.html import CSS

    digest = base64.b64encode(hashlib.sha256((CSS + WEB_CSS).encode()).digest()).decode()
    return (
        f"default-src 'none'; script-src 'self'; style-src 'sha256-{digest}'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )


def _page(title: str, body: str) -> str:
    """The report's page (its CSS, its escaping) with the site's navigation above the document."""
    from boardlab.report.html import CSS
    from boardlab.report.render import esc

    nav = '<nav class="site">' + "".join(f'<a href="{u}">{esc(t)}</a>' for u, t in NAV) + "</nav>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS + WEB_CSS}</style></head>\n<body>\n{nav}\n{body}\n"
        "</body></html>\n"
    )


def _select(name: str, label: str, choices, chosen: str | None) -> str:
    from boardlab.report.render import esc

    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(text)}</option>'
        for v, text in choices
    )
    return f'<label>{esc(label)}<select name="{esc(name)}" id="{esc(name)}">{opts}</select></label>'


def _form(action: str, fields: list[str]) -> str:
    return (f'<form class="pick" method="get" action="{action}">' + "".join(fields)
            + '<button type="submit" id="go">show</button></form>')  # fmt: skip


def create_app(
    db: str, *, token: str | None = None, verify: bool = True, threads: int | None = None, check=None,
    background=None, backfill=None,
):  # fmt: skip
    """The application over the store at `db` (a SQLite path or a postgresql:// URL), opened read-only per
    request, so a campaign writing to it is never blocked and every page is one consistent snapshot.
    `verify=False`: the caller verified the store once (`boardlab serve` at its start); each request then
    skips the full scan of every table, which takes seconds on a store of millions of runs (the runs written
    since come from boardlab's own writers). `threads`: how many pages are built at once (each opens the
    store: `boardlab serve` derives it from the descriptors it may open, web/guard.py); None keeps anyio's.
    `check`: the store's full check running beside the pages (web/check.py `StoreCheck`, with verify=False):
    while it runs every page says so; once it found a damage every page is the 503 naming it.
    `background`: the worker of the analyses pages need (web/background.py `Background`; one of its own when
    None); `backfill`: the summaries computed and stored beside the pages (web/backfill.py `Backfill`, over
    the same `background`): while campaigns are left every page says how many are summarized."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    return Starlette(
        routes=_Site(db, verify, check, background, backfill).routes(),
        middleware=[Middleware(_Guard, token=token, csp=_csp())],
        exception_handlers={404: _not_found, 405: _not_allowed, 500: _internal},
        lifespan=None if threads is None else _threads(threads),
    )


def _problem(status: int, text: str, as_json: bool):
    """An error page (or its JSON twin) naming what went wrong, never a traceback."""
    from starlette.responses import HTMLResponse, JSONResponse

    from boardlab.report.render import esc

    if as_json:
        return JSONResponse({"schema": pages.WEB_SCHEMA, "error": text}, status_code=status)
    return HTMLResponse(_page("boardlab: error", f'<h1>Error</h1><p class="problem">{esc(text)}</p>'), status)


def _wants_json(request) -> bool:
    return request.url.path.endswith(".json")


class _Site:
    """serve's pages over one store: each request opens it read-only, builds its document in one snapshot
    and answers in the format its address asks for."""

    def __init__(self, db: str, verify: bool, check=None, background=None, backfill=None) -> None:
        from boardlab.web.background import Background

        self.db, self.verify, self.check, self.backfill = db, verify, check, backfill
        # the analyses the store does not hold, in a worker process
        self.background = background if background is not None else Background(db)

    def read(self, build, request, *, html_extra=lambda store: ""):
        """Runs `build(store)` in one snapshot; (document, json twin) -> the response the URL asks for."""
        from boardlab.store import Store, driver_error

        as_json = _wants_json(request)
        checked = self.check.state() if self.check is not None else None
        if checked is not None and checked.state == "damaged":
            return _problem(503, checked.problem or "the store is damaged", as_json)
        if checked is not None and checked.state in ("checking", "unfinished"):
            html_extra = _with_banner(html_extra, checked)
        html_extra = _with_backfill_banner(html_extra, self.backfill)
        try:
            store = Store.open(self.db, create=False, verify=self.verify)
        except Exception as exc:  # the store cannot be read at all: 503, naming it and why
            error = exc if isinstance(exc, BoardlabError) else driver_error(exc, self.db)
            return _problem(503, str(error) if error else f"{self.db}: cannot open the store", as_json)
        try:
            with store, store.snapshot():
                built = build(store)
                extra = html_extra(store) if not as_json else ""
        except Computing as exc:  # an analysis this page needs runs in the worker: said at once
            return _computing(exc, as_json)
        except Exception as exc:
            return self._failed(exc, as_json)
        return _respond(built, extra, as_json)

    def _failed(self, exc: Exception, as_json: bool):
        """What a page that could not be built answers: 404 for what is not there, 400 for a bad pick, 503
        for a store that failed (a database error named), 500 for a bug (no traceback)."""
        from boardlab.store import driver_error

        if isinstance(exc, NotFound):
            return _problem(404, str(exc), as_json)
        if isinstance(exc, InputError):
            return _problem(400, str(exc), as_json)
        if isinstance(exc, BoardlabError):
            return _problem(503, str(exc), as_json)
        error = driver_error(exc, self.db)
        if error is None:
            return _problem(500, f"internal error: {type(exc).__name__} (run with BOARDLAB_DEBUG=1)", as_json)
        return _problem(503, str(error), as_json)

    def boards(self, request):
        n = _page_no(request)
        return self.read(lambda s: pages.boards(s, n), request)

    def campaigns(self, request):
        n = _page_no(request)
        board = request.query_params.get("board", "")
        board_id = pages.parse_id(board, "board", "a board id") if board else None
        return self.read(lambda s: pages.campaigns(s, n, board_id), request)

    def campaign(self, request):
        cid = request.path_params["cid"]  # ASCII digits (the route's int), but of any length
        if cid > pages.MAX_ID:
            return _problem(404, f"no campaign with id {cid}", _wants_json(request))
        return self.read(lambda s: pages.campaign(s, cid, self.background), request)

    def compare(self, request):
        a, b = request.query_params.get("a"), request.query_params.get("b")

        def form(store) -> str:
            choices = pages.compare_choices(store)
            return _form(
                "/compare", [_select("a", "A (reference)", choices, a), _select("b", "B", choices, b)]
            )

        if not a or not b:
            return self.read(lambda s: (_empty("boardlab: compare", "Pick A and B, then show."),
                                        {"schema": pages.WEB_SCHEMA,
                                         "choices": [{"value": v, "label": t}
                                                     for v, t in pages.compare_choices(s)]}),
                             request, html_extra=form)  # fmt: skip
        return self.read(lambda s: pages.compare(s, a, b, self.background), request, html_extra=form)

    def history(self, request):
        plan, board = request.query_params.get("plan"), request.query_params.get("board")

        def form(store) -> str:
            plans = [(p, p) for p in pages.plan_choices(store)]
            boards = [
                ("", "every board"),
                *((r["label"], r["label"]) for r in store.board_page(limit=pages.PICK_LIMIT)),
            ]
            return _form(
                "/history",
                [_select("plan", "plan", plans, plan), _select("board", "board", boards, board or "")],
            )

        if not plan:
            return self.read(lambda s: (_empty("boardlab: history", "Pick a plan, then show."),
                             {"schema": pages.WEB_SCHEMA, "plans": pages.plan_choices(s)}), request,
                             html_extra=form)  # fmt: skip
        return self.read(lambda s: pages.history(s, plan, board, self.background), request, html_extra=form)

    def running(self, request):
        live = (
            '<div id="live" data-source="/running.json"></div><script src="/static/live.js" defer></script>'
        )
        return self.read(pages.running, request, html_extra=lambda store: live)

    def store_check(self, request):
        """/check: what the store's full check has found (its state, when it started, how long it took)."""
        from starlette.responses import HTMLResponse, JSONResponse

        from boardlab.report.render import esc

        checked = self.check.state() if self.check is not None else None
        if _wants_json(request):
            return JSONResponse({"schema": pages.WEB_SCHEMA, "store_check": checked and checked.as_json()})
        return HTMLResponse(
            _page("boardlab: store check", f"<h1>Store check</h1><p>{esc(_check_text(checked))}</p>")
        )

    def backfilled(self, request):
        """/backfill: the summaries serve computes and stores in the background (web/backfill.py)."""
        import time

        from starlette.responses import HTMLResponse, JSONResponse

        from boardlab.report.render import esc
        from boardlab.web.backfill import status_text

        state = self.backfill.state() if self.backfill is not None else None
        if _wants_json(request):
            return JSONResponse({"schema": pages.WEB_SCHEMA, "backfill": state and state.as_json()})
        items = "".join(f"<li>campaign {c}: {esc(w)}</li>" for c, w in (state.failures if state else ()))
        body = f"<h1>Backfill of summaries</h1><p>{esc(status_text(state, time.time()))}</p>"
        return HTMLResponse(_page("boardlab: backfill", body + (f"<ul>{items}</ul>" if items else "")))

    def routes(self) -> list:
        """Every page with its .json twin, the live script, and the answers browsers ask for."""
        from starlette.responses import RedirectResponse, Response
        from starlette.routing import Route

        def both(path: str, fn) -> list:
            return [
                Route(path, _guarded(fn), methods=["GET"]),
                Route(path + ".json", _guarded(fn), methods=["GET"]),
            ]

        return [
            Route("/", lambda request: RedirectResponse("/boards", status_code=303), methods=["GET"]),
            *both("/boards", self.boards),
            *both("/campaigns", self.campaigns),
            Route("/campaign/{cid:int}", _guarded(self.campaign), methods=["GET"]),
            Route("/campaign/{cid:int}.json", _guarded(self.campaign), methods=["GET"]),
            *both("/compare", self.compare),
            *both("/history", self.history),
            *both("/running", self.running),
            *both("/check", self.store_check),
            *both("/backfill", self.backfilled),
            Route(
                "/static/live.js",
                lambda request: Response(LIVE_JS, media_type="text/javascript"),
                methods=["GET"],
            ),
            Route("/favicon.ico", lambda request: Response(status_code=204), methods=["GET"]),  # browsers ask
        ]


def _respond(built, extra: str, as_json: bool):
    """A built page as HTML (the page's own part under its one heading) or its JSON twin."""
    from starlette.responses import HTMLResponse, Response

    from boardlab.report.render import render_document

    if isinstance(built, pages.Rendered):  # a campaign's report, rendered when its summary was stored
        refresh = {"Refresh": str(REFRESH_S)} if built.refresh else None
        if as_json:
            return Response(built.twin_json, media_type="application/json", headers=refresh)
        return HTMLResponse(_page(built.title, _under_heading(built.html, extra)), headers=refresh)
    document, twin = built
    if as_json:
        return Response(json.dumps(twin, allow_nan=False, default=str), media_type="application/json")
    return HTMLResponse(_page(document.title, _under_heading(render_document(document, "html"), extra)))


def _page_no(request) -> int:
    return pages.parse_id(request.query_params.get("page", "0"), "page", "a page number", most=10**6)


def _guarded(fn):
    """The endpoint of a page: a bad query parameter (InputError) is its 400 page."""

    def endpoint(request):
        try:
            return fn(request)
        except InputError as exc:
            return _problem(400, str(exc), _wants_json(request))

    return endpoint


def _threads(n: int):
    """A lifespan that lets at most `n` pages be built at once (anyio's limiter, which Starlette runs the
    pages' code under, is the event loop's: it is set once the loop runs)."""
    import contextlib

    @contextlib.asynccontextmanager
    async def lifespan(app):
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = n
        yield

    return lifespan


def local_target(path: str, query: str) -> str:
    """Where a first visit with ?token= is sent back to: the same page of this server, without the token. A
    path a browser would read as another host (`//host/x`, `/\\host/x`) keeps one leading slash, and every
    character past the safe ones is percent-encoded, so the address can name nothing but a path here."""
    path = "/" + path.lstrip("/\\")
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True) if k != "token"]
    target = urllib.parse.quote(path, safe="/:@!$&'()*+,;=-._~")
    return target + ("?" + urllib.parse.urlencode(kept) if kept else "")


def _under_heading(body: str, extra: str) -> str:
    """The page's own part (a form, the live block) under the document's one <h1>: one heading per page."""
    head, end, rest = body.partition("</h1>")
    return head + end + extra + rest if end else extra + body


def _empty(title: str, text: str):
    from boardlab.analysis import document as doc

    return doc.Document(title, (doc.section("", doc.Prose(text, small=True)),))


def _plain(status: int, text: str):
    from starlette.responses import HTMLResponse

    from boardlab.report.render import esc

    return HTMLResponse(
        _page(f"boardlab: {status}", f'<h1>{status}</h1><p class="problem">{esc(text)}</p>'), status
    )


async def _not_found(request, exc):
    return _plain(404, f"no page at {request.url.path}")


async def _not_allowed(request, exc):
    return _plain(405, "this server only reads: GET and HEAD")


async def _internal(request, exc):
    return _plain(500, "internal error (run with BOARDLAB_DEBUG=1 to see it on the server's terminal)")


class _Guard:
    """ASGI middleware: the token check (401 without it) and the security headers on every response."""

    def __init__(self, app, *, token: str | None, csp: str):
        self.app = app
        self.token = token
        self.headers = [
            (b"content-security-policy", csp.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"x-frame-options", b"DENY"),
            (b"cache-control", b"no-store"),
        ]

    def _given(self, scope) -> tuple[str | None, bool]:
        """(the token the request carries, whether it came in the query string)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer":  # the scheme is case-insensitive (RFC 9110 11.1), the token is not
            return credentials.strip(), False
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                return value, False
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return (query.get("token") or [None])[0], True

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        if self.token is not None:
            given, in_query = self._given(scope)
            if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
                from starlette.responses import PlainTextResponse

                text = (
                    "401: this boardlab serve needs its token (Authorization: Bearer TOKEN, or open "
                    "/?token=TOKEN once)\n"
                )
                response = PlainTextResponse(text, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                return await response(scope, receive, send_with_headers)
            if in_query:  # first visit: the token goes into a cookie and out of the address bar and history
                from starlette.responses import RedirectResponse

                target = local_target(scope["path"], scope.get("query_string", b"").decode("latin-1"))
                redirect = RedirectResponse(target, status_code=303)
                redirect.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
                return await redirect(scope, receive, send_with_headers)
        return await self.app(scope, receive, send_with_headers)


def _check_text(checked) -> str:
    if checked is None:
        return "Not run here: each page checks the store as it opens it."
    if checked.state == "checking":
        return f"Running since {_ago(checked.started_unix_s)}: every value of every table is read once."
    if checked.state == "passed":
        return (
            "Passed: every value of every table has the type boardlab writes (checked in "
            f"{checked.took_s:.1f} s)."
        )
    if checked.state == "unfinished":
        return f"Did not finish ({checked.problem}): the pages are served unchecked."
    return f"Failed after {checked.took_s:.1f} s: {checked.problem}"


def _ago(unix_s: float) -> str:
    import time

    from boardlab.analysis.format import fmt_duration

    return f"{fmt_duration(max(time.time() - unix_s, 0.0))} ago"


def _with_banner(html_extra, checked):
    """`html_extra` with the note, above it, that the store's full check is still running or did not
    finish."""
    from boardlab.report.render import esc

    if checked.state == "checking":
        what = (
            f"is still running (started {_ago(checked.started_unix_s)}): a damaged value it has not reached "
            "yet may show on this page"
        )
    else:
        what = f"did not finish ({checked.problem}): this page comes from a store not checked"
    note = f'<p class="problem">The store\'s full check {esc(what)}. <a href="/check">Its state</a></p>'
    return lambda store: note + html_extra(store)


def _with_backfill_banner(html_extra, backfill):
    """`html_extra` with the note, above it, of how many campaigns are summarized while the backfill has some
    left (`backfill` is read when the page is built: the count is the page's own)."""
    from boardlab.report.render import esc
    from boardlab.web.backfill import banner_text

    text = banner_text(backfill.state()) if backfill is not None else None
    if text is None:
        return html_extra
    note = f'<p class="problem">{esc(text)} <a href="/backfill">Its state</a></p>'
    return lambda store: note + html_extra(store)


def _computing(exc: Computing, as_json: bool):
    """202: what the page needs is being computed in serve's worker; the browser asks again (Refresh)."""
    from starlette.responses import HTMLResponse, JSONResponse

    from boardlab.report.render import esc

    headers = {"Refresh": str(REFRESH_S)}
    if as_json:
        body = {"schema": pages.WEB_SCHEMA, "computing": exc.what, "since_unix_s": exc.since_unix_s}
        return JSONResponse(body, status_code=202, headers=headers)
    text = (
        f"{exc.what} is being computed (started {_ago(exc.since_unix_s)}); this page reloads when "
        "it is ready."
    )
    return HTMLResponse(
        _page("boardlab: computing", f"<h1>Computing</h1><p>{esc(text)}</p>"), 202, headers=headers
    )
