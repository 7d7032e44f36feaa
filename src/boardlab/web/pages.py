"""The pages of `boardlab serve`, each as (a document of `analysis.document`, its JSON twin).

Every page reads the store through `Store` methods in one snapshot, in pages of at most PAGE_SIZE rows, and
builds the same documents the reports build (the campaign report, the history, the comparison); the server
renders them with the report's HTML renderer. Nothing here writes.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse

from boardlab.analysis import document as doc
from boardlab.errors import InputError, NotFound
from boardlab.report.escape import visible
from boardlab.web.background import Computing, Stale

MAX_ID = 2**63 - 1  # a store's ids are signed 64-bit integers (SQLite's INTEGER, PostgreSQL's BIGINT)
PAGE_SIZE = 50  # rows per list page: every list query is bounded by it
PICK_LIMIT = 200  # campaigns and plans offered in the compare and history forms
WEB_SCHEMA = 1


def parse_id(raw: str, what: str, expected: str, *, most: int = MAX_ID) -> int:
    """A number from an address: ASCII digits only (str.isdigit() also takes '²' and other digits int()
    refuses), at most `most`; anything else is the request's fault (400)."""
    if not _is_id(raw, most):
        raise InputError(f"{what} {raw!r}: expected {expected}")
    return int(raw)


def _is_id(raw: str, most: int = MAX_ID) -> bool:
    return raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= most


def _q(**params) -> str:
    return urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _more(rows: list, page: int, path: str, **params) -> tuple[list, doc.Items | None, int | None]:
    """The page's rows (PAGE_SIZE of the PAGE_SIZE + 1 read) and a note naming the next page's URL."""
    has_more = len(rows) > PAGE_SIZE
    nxt = f"{path}?{_q(page=page + 1, **params)}" if has_more else None
    return rows[:PAGE_SIZE], doc.Items((f"more: {nxt}",)) if nxt else None, page + 1 if has_more else None


def list_notes(keys) -> tuple[str, ...]:
    """The notes under a list of campaigns, each said once, for the cells that need one (`listed_tally`)."""
    from boardlab.summary import LIST_NOTES

    return tuple(note for key, note in LIST_NOTES.items() if key in keys)


def boards(store, page: int = 0) -> tuple[doc.Document, dict]:
    from boardlab.analysis.format import fmt_time
    from boardlab.summary import listed_tally

    rows, more, nxt = _more(store.board_page(limit=PAGE_SIZE + 1, offset=page * PAGE_SIZE), page, "/boards")
    out, table, links, notes = [], [], [], set()
    for r in rows:
        inv = json.loads(r["inventory_json"] or "{}")
        last = store.campaign(r["last_campaign_id"]) if r["last_campaign_id"] is not None else None
        tally, summary, words, note = listed_tally(store, last["id"]) if last else (None, None, "", None)
        notes.add(note)
        entry = {
            "board_id": r["id"], "label": r["label"], "model": inv.get("model"),
            "machine": inv.get("machine"), "kernel": (inv.get("kernel") or {}).get("release"),
            "campaigns": r["n_campaigns"],
            "last_campaign": None if last is None else {
                "campaign_id": last["id"], "name": last["name"], "status": last["status"],
                "started_unix_s": last["started_unix_s"], "verdicts": tally, "summary": summary},
        }  # fmt: skip
        out.append(entry)
        table.append((r["label"], entry["model"] or "", entry["machine"] or "", entry["kernel"] or "",
                      str(r["n_campaigns"]), "" if last is None else f"{last['id']} {last['name']}",
                      "" if last is None else last["status"],
                      "" if last is None else fmt_time(last["started_unix_s"]), words))  # fmt: skip
        links.append(
            {0: f"/campaigns?{_q(board=r['id'])}", **({5: f"/campaign/{last['id']}"} if last else {})}
        )
    document = doc.Document(
        "boardlab: boards",
        (doc.section(
            "Boards",
            doc.Table(
                (doc.Column("board"), doc.Column("model"), doc.Column("machine"), doc.Column("kernel"),
                 doc.Column("campaigns", numeric=True), doc.Column("last campaign"), doc.Column("status"),
                 doc.Column("started"), doc.Column("its verdicts")),
                tuple(table), links=tuple(links), notes=list_notes(notes),
            ),
            doc.Prose("No board in this store yet.") if not rows and page == 0 else None,
            more,
        ),),
    )  # fmt: skip
    return document, {"schema": WEB_SCHEMA, "page": page, "next_page": nxt, "boards": out}


def _campaign_entry(r) -> dict:
    return {k: r[k] for k in ("id", "name", "board_label", "status", "started_unix_s", "finished_unix_s",
                              "boardlab_version", "label", "runs_planned", "heartbeat_unix_s")}  # fmt: skip


def campaigns(store, page: int = 0, board_id: int | None = None) -> tuple[doc.Document, dict]:
    from boardlab.analysis.format import fmt_time

    got = store.campaign_page(limit=PAGE_SIZE + 1, offset=page * PAGE_SIZE, board_id=board_id)
    rows, more, nxt = _more(got, page, "/campaigns", board=board_id)
    from boardlab.analysis.history import commit_words, identity_doc
    from boardlab.summary import listed_tally

    commits = {k: identity_doc(*v) for k, v in store.campaign_identities([r["id"] for r in rows]).items()}
    tallies = {r["id"]: listed_tally(store, r["id"]) for r in rows}  # one summary row each, no analysis
    table = tuple(
        (
            str(r["id"]),
            r["name"],
            r["board_label"],
            r["status"],
            tallies[r["id"]][2],
            fmt_time(r["started_unix_s"]),
            r["label"] or "",
            commit_words({"commit": commits.get(r["id"])}),
        )
        for r in rows
    )
    links = tuple(
        {0: f"/campaign/{r['id']}", 1: f"/history?{_q(plan=r['name'], board=r['board_label'])}"} for r in rows
    )
    document = doc.Document(
        "boardlab: campaigns",
        (doc.section(
            "Campaigns",
            doc.Table((doc.Column("campaign"), doc.Column("plan"), doc.Column("board"), doc.Column("status"),
                       doc.Column("verdicts"), doc.Column("started"), doc.Column("label"),
                       doc.Column("commit")),
                      table, links=links, notes=list_notes({t[3] for t in tallies.values()})),
            more,
        ),),
    )  # fmt: skip
    # `run --commit`; the tally of the stored summary (null where none) and the runs it and the campaign count
    entries = [{**_campaign_entry(r), "commit": commits.get(r["id"]), "verdicts": tallies[r["id"]][0],
                "summary": tallies[r["id"]][1]} for r in rows]  # fmt: skip
    return document, {"schema": WEB_SCHEMA, "page": page, "next_page": nxt, "campaigns": entries}


class Rendered:
    """A page already rendered (a campaign's stored report): its title, HTML body and JSON twin as text;
    `refresh`: shown while a newer analysis is computed (the browser asks again)."""

    def __init__(self, title: str, html: str, twin_json: str, refresh: bool = False):
        self.title, self.html, self.twin_json, self.refresh = title, html, twin_json, refresh


def figure_twin(plain: dict) -> dict:
    """A stored report document (`model.records.to_plain`) as the campaign page's .json twin says it: as
    stored, but for its figures, which keep the shape they had before they were typed plot specifications
    (analysis.document.PlotSpec), so a reader of the twin is not broken by a change of the code's shape:
    `{"type": "Figure", "kind": <the plot's name>, "data": {argument: value}, "formats": [...]}`, `data` every
    field of the spec (a superset of the old dict, which held only the arguments a figure set). Figures are
    blocks of a section or of a Multiples, nowhere else; everything else is the stored JSON as it was."""
    kinds = {spec.__name__: spec.kind for spec in doc.PLOT_SPECS}

    def figure(f: dict) -> dict:
        data = dict(f["spec"])
        return {"type": "Figure", "kind": kinds[data.pop("type")], "data": data, "formats": f["formats"]}

    def block(b: dict) -> dict:
        if b.get("type") == "Figure":
            return figure(b)
        if b.get("type") == "Multiples":
            return {**b, "figures": [figure(f) for f in b["figures"]]}
        return b

    sections = [{**s, "blocks": [block(b) for b in s["blocks"]]} for s in plain["sections"]]
    return {**plain, "sections": sections}


def campaign(store, campaign_id: int, background=None) -> Rendered:
    """The campaign's report document, as `boardlab report` builds it, from the campaign's stored summary
    (boardlab.summary): its document computed when the campaign ended, rendered here; computed now, and kept
    by this server, when the summary is missing or stale (the monitor plots stay in the report file: their
    series are the one read here not bounded by the campaign's cells)."""
    import boardlab.summary as summary

    row = store.campaign(campaign_id)  # 404 for an unknown campaign
    title = f"boardlab report: {row['name']}"

    def render(s) -> Rendered:
        from boardlab.report.render import render_document

        assert s.document_json is not None, "read the summary with_document=True"
        plain = json.loads(s.document_json)  # read once, for the page and its twin
        # rendered here, through the renderer that escapes every word, never from stored HTML
        html = render_document(doc.from_plain(plain), "html")
        twin = {"schema": WEB_SCHEMA, "campaign_id": campaign_id, "document": figure_twin(plain)}
        return Rendered(title, html, json.dumps(twin, allow_nan=False))

    got = summary.stored(store, campaign_id, with_document=True)
    if got is not None:
        return render(got)
    v = version(store, campaign_id)
    if background is None:
        return _memo(("page", *v), lambda: render(summary.compute(store, campaign_id)))
    # computed in serve's worker process (web/background.py); a running campaign shows its last analysis
    # meanwhile
    got = background.get("summary", campaign_id, v, v[-1], stale_ok=row["status"] == "running")
    if isinstance(got, Stale):
        page = render(got.value)
        note = (
            f'<p class="problem">Runs stored since this analysis ({got.runs_then} runs): the analysis of all '
            f"{v[-1]} is being computed; this page updates when it is ready.</p>"
        )
        return Rendered(title, note + page.html, page.twin_json, refresh=True)
    return _memo(("page", *v), lambda: render(got))


_CACHE: dict[tuple, object] = {}
_CACHE_LOCK = threading.Lock()  # pages are built on the server's worker threads
CACHE_SIZE = 32  # analyses kept by the server process: a page seen once opens at once the next time


def _memo(key: tuple, compute):
    """compute(), kept under `key` among the last CACHE_SIZE results."""
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        hit = compute()
        with _CACHE_LOCK:
            while len(_CACHE) >= CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = hit
    return hit


def version(store, campaign_id: int) -> tuple:
    """What a campaign's summary depends on: it changes with every run stored and with its status (a count
    over an index: the runs themselves are not read)."""
    row = store.campaign(campaign_id)
    return store.path, campaign_id, row["status"], store.count_runs(campaign_id)


def analyzed(store, campaign_id: int, background=None):
    """What compare and history read of a campaign (`analysis.records.KeptAnalysis`): from its stored summary,
    or computed from its runs when that is missing or stale (in serve's worker process with `background`,
    which raises Computing until it is ready); kept while its runs and status are unchanged."""
    import boardlab.summary as summary

    v = version(store, campaign_id)
    if background is not None:
        # kept first: a view read again from its stored summary is a decoding of megabytes at 10^4 runs
        return _memo(("view", *v), lambda: _stored_or_computing(store, campaign_id, v, background))
    return _memo(("view", *v), lambda: summary.analysis_view(store, campaign_id))


def _stored_or_computing(store, campaign_id: int, v: tuple, background):
    import boardlab.summary as summary

    got = summary.stored_view(store, campaign_id)
    return got if got is not None else background.get("view", campaign_id, v, v[-1])


def _picked(store, pick: str) -> int:
    """The campaign of a compare form's pick: 'c:ID' a campaign, 'b:ID' a board's latest campaign."""
    kind, _, number = pick.partition(":")
    if kind not in ("c", "b") or not _is_id(number):
        raise InputError(f"compare: {pick!r} is not a campaign (c:ID) or a board (b:ID)")
    got_id = int(number)
    if kind == "b":
        got = store.campaign_page(limit=1, board_id=got_id)
        if not got:
            raise NotFound(f"compare: no campaign of board {got_id}")
        got_id = got[0]["id"]
    return got_id


def compare(store, a: str, b: str, background=None) -> tuple[doc.Document, dict]:
    """The comparison of two picks. With `background` (serve), computed in its worker, both campaigns' views
    included: its permutation p-values take seconds at 10^4 runs a side even when both are summarized, and
    decoding a summarized side is a tenth of a second, none of which a page's thread waits for."""
    from boardlab.analysis import compare_campaigns
    from boardlab.analysis.compare import plain
    from boardlab.analysis.comparedoc import compare_document

    ids = (_picked(store, a), _picked(store, b))
    key = ("compare", version(store, ids[0]), version(store, ids[1]))  # 404 for an unknown campaign
    if background is None:
        left, right = (analyzed(store, cid) for cid in ids)
        d = _memo(key, lambda: compare_campaigns(left, right, path_a=store.path, path_b=store.path))
    else:
        d = _memo(key, lambda: background.get(
            "compare", ids, key[1:], key[1][-1] + key[2][-1], given=ids,
            what=f"the comparison of campaign {ids[0]} with campaign {ids[1]}",
        ))  # fmt: skip
    sides = d["a"], d["b"]
    title = "boardlab compare: " + " and ".join(
        f"{side['name']} on {side['board']} ({ab})" for side, ab in zip(sides, "AB", strict=True)
    )
    return compare_document(d, title), plain(d)


def compare_choices(store) -> list[tuple[str, str]]:
    """(value, label) of every pick the compare form offers: boards (their latest campaign), then
    campaigns."""
    out = [
        (f"b:{r['id']}", f"board {r['label']} (latest campaign)") for r in store.board_page(limit=PICK_LIMIT)
    ]
    out += [
        (f"c:{r['id']}", f"campaign {r['id']}: {r['name']} on {r['board_label']} ({r['status']})")
        for r in store.campaign_page(limit=PICK_LIMIT)
    ]
    return out


def history(store, plan: str, board: str | None, background=None) -> tuple[doc.Document, dict]:
    from boardlab.analysis.compare import plain
    from boardlab.analysis.history import build_history, history_document, load_history

    for what, name in (("plan", plan), ("board", board or "")):
        if "\x00" in name:  # no stored name holds one, and PostgreSQL refuses it in a query's text
            raise InputError(f"{what} {name!r}: a name holds no NUL character")
    if background is not None:  # every campaign the history shows started at once; said until all are ready
        _all_started(store, plan, board, background)
    per_board = [
        (rows, [analyzed(store, int(r["id"]), background) for r in rows])
        for rows in load_history(store, plan, board or None)
    ]
    if not per_board:
        raise NotFound(f"no campaign of a plan named {plan!r}" + (f" on board {board!r}" if board else ""))
    key = (
        "history",
        plan,
        tuple(version(store, a.campaign_id) for _, analyses in per_board for a in analyses),
    )
    d = _memo(key, lambda: build_history(per_board, plan, _steps(store, per_board)))
    names = ", ".join(b["board"] for b in d["boards"])
    return history_document(d, f"boardlab history: {plan} on {names}"), plain(d)


def _all_started(store, plan: str, board: str | None, background) -> None:
    from boardlab.analysis.history import DEFAULT_LAST

    waiting: list[Computing] = []
    for row in store.campaigns_of_plan(plan, board or None, limit=DEFAULT_LAST):
        try:
            analyzed(store, int(row["id"]), background)
        except Computing as exc:
            waiting.append(exc)
    if waiting:
        since = min(w.since_unix_s for w in waiting)
        raise Computing(f"the analyses of {len(waiting)} campaigns of the history", since)


def _steps(store, per_board: list[tuple[list, list]]) -> list[list[tuple[list, list, list]]]:
    """Each board's steps between its consecutive campaigns, as `build_history` takes them."""
    return [[_step(store, a, b) for a, b in itertools.pairwise(views)] for _, views in per_board]


def _step(store, a, b):
    """A history's step, read from the store or computed and kept by this server (its rows are frozen
    records: the history fills copies of them, so one kept step serves every request)."""
    import boardlab.summary as summary

    # the views' run counts are current (`analyzed` keys them by the campaign's version)
    key = ("step", store.path, a.campaign_id, a.runs_stored, b.campaign_id, b.runs_stored)
    return _memo(key, lambda: summary.step(store, a, b))


def plan_choices(store) -> list[str]:
    return [r["name"] for r in store.plan_names(limit=PICK_LIMIT)]


def running(store, now_s: float | None = None) -> tuple[doc.Document, dict]:
    """Campaigns still running: runs stored of planned, the ETA from the pace so far, the last heartbeat."""
    from boardlab.analysis.format import fmt_duration, fmt_time

    now_s = time.time() if now_s is None else now_s
    out, table, links = [], [], []
    for r in store.campaigns_with_status("running", limit=PAGE_SIZE):
        p = store.campaign_progress(r, now_s)
        eta, age = p.eta_s, p.heartbeat_age_s
        entry = {**_campaign_entry(r), "runs_done": p.runs_done, "runs_valid": p.runs_valid, "eta_s": eta,
                 "heartbeat_age_s": age}  # fmt: skip
        out.append(entry)
        table.append((str(r["id"]), r["name"], r["board_label"], f"{p.runs_done} of {p.runs_planned or '?'}",
                      fmt_duration(eta) if eta is not None else "unknown",
                      "never" if age is None
                      else f"{fmt_time(r['heartbeat_unix_s'])} ({fmt_duration(age)} ago)"))  # fmt: skip
        links.append({0: f"/campaign/{r['id']}"})
    document = doc.Document(
        "boardlab: running campaigns",
        (doc.section(
            "Running campaigns",
            doc.Table((doc.Column("campaign"), doc.Column("plan"), doc.Column("board"), doc.Column("runs"),
                       doc.Column("ETA"), doc.Column("last heartbeat")), tuple(table), links=tuple(links)),
            doc.Prose("Refreshed every 2 s. The ETA is the pace so far (the time since the start over the "
                      "runs stored) times the runs left.", small=True),
        ),),
    )  # fmt: skip
    # the rows live.js writes into the page as text: shown as the page shows them (report.escape.visible)
    rows = [[visible(c) for c in t] for t in table]
    return document, {"schema": WEB_SCHEMA, "campaigns": out, "rows": rows}
