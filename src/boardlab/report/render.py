"""The document model (`analysis.document`) laid out per format: HTML, Markdown and text.

Each renderer supplies only markup: headings, paragraphs, the rows and dividers of a table, a plot for a
figure (HTML only). Every word and number comes from the document, so the three formats say the same thing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from boardlab.analysis import document as doc
from boardlab.report.escape import term, visible


def esc(s: object) -> str:
    """A stored or planned string in a page: bidirectional and invisible characters shown as their code
    points (as on the terminal), then HTML-escaped."""
    return html.escape(visible("" if s is None else s), quote=True)


# ---- HTML --------------------------------------------------------------------------------------------------


def html_table(t: doc.Table) -> str:
    """The table; a long free-text column (`note_column`) goes to a full-width line under its row instead."""
    headers = t.headers
    names = [c.name for c in t.columns]
    note_at = names.index(t.note_column) if t.note_column in names else None
    cols = [i for i in range(len(headers)) if i != note_at]
    head = "".join(f"<th>{esc(headers[i])}</th>" for i in cols)
    body = []
    classes = t.row_classes or ("",) * len(t.rows)
    for r, (row, cls) in enumerate(zip(t.rows, classes, strict=False)):
        extra = t.cell_classes[r] if r < len(t.cell_classes) else {}
        tds = []
        for i in cols:
            klass = "num" if t.columns[i].numeric else ("verdict" if names[i] == "verdict" else "")
            klass = f"{klass} {extra[i]}".strip() if i in extra else klass
            value = esc(row[i])
            if names[i] == t.badge_column:
                value = f'<span class="status st-{value}">{value}</span>'
            elif names[i] == t.emphasis_column:
                value = f"<b>{value}</b>"
            if r < len(t.links) and i in t.links[r]:
                value = f'<a href="{esc(t.links[r][i])}">{value}</a>'
            tds.append(f'<td class="{esc(klass)}">{value}</td>' if klass else f"<td>{value}</td>")
        body.append(
            f'<tr class="{esc(cls)}">' + "".join(tds) + "</tr>" if cls else "<tr>" + "".join(tds) + "</tr>"
        )
        if note_at is not None and row[note_at]:
            body.append(
                f'<tr class="note {esc(cls)}"><td></td><td colspan="{len(cols) - 1}">'
                f"{esc(t.columns[note_at].header)}: {esc(row[note_at])}</td></tr>"
            )
    klass = f' class="{esc(t.css)}"' if t.css else ""
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    table = f'<div class="scroll"><table{klass}>{thead}<tbody>{"".join(body)}</tbody></table></div>'
    return f"<details><summary>{esc(t.fold)}</summary>{table}</details>" if t.fold else table


def _bold(text: str, parts: tuple[str, ...], escape, open_: str, close: str) -> str:
    out = escape(text)
    for part in parts:
        out = out.replace(escape(part), f"{open_}{escape(part)}{close}", 1)
    return out


def html_block(b: doc.Block) -> str:
    from boardlab.report import plot

    if isinstance(b, doc.Table):
        title = f"<h4>{esc(b.title)}</h4>" if b.title else ""
        notes = "".join(f'<p class="small">{esc(n)}</p>' for n in b.notes)
        return title + html_table(b) + notes
    if isinstance(b, doc.Prose):
        text = f"<b>{esc(b.text)}</b>" if b.strong else _bold(b.text, b.bold, esc, "<b>", "</b>")
        klass = "banner" if b.banner else ("small" if b.small else "")
        return f'<p class="{klass}">{text}</p>' if klass else f"<p>{text}</p>"
    if isinstance(b, doc.Items):
        return "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in b.items) + "</ul>"
    if isinstance(b, doc.Preformatted):
        pre = f"<pre>{esc(b.text)}</pre>"
        return f"<details><summary>{esc(b.summary)}</summary>{pre}</details>" if b.summary else pre
    if isinstance(b, doc.Figure):
        return plot.draw(b)
    if isinstance(b, doc.Multiples):
        return '<div class="multiples">' + "".join(plot.draw(f) for f in b.figures) + "</div>"
    if isinstance(b, doc.Facts):
        if b.cards:
            tiles = "".join(
                f'<div class="card"><div class="card-label">{esc(k)}</div><div '
                f'class="card-value">{esc(v)}</div></div>'
                for k, v in b.pairs
            )
            head = f'<div class="card-group">{esc(b.title)}</div>' if b.title else ""
            return f'{head}<div class="cards">{tiles}</div>'
        return (
            '<dl class="meta">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in b.pairs) + "</dl>"
        )
    raise TypeError(f"unknown block {type(b).__name__}")


def html_sections(sections: Iterable[doc.Section]) -> list[str]:
    out = []
    for s in sections:
        if "html" not in s.formats:
            continue
        level = min(max(s.level, 1), 4)
        if s.title:
            out.append(f"<h{level}>{esc(s.title)}</h{level}>")
        out += [html_block(b) for b in s.blocks if "html" in b.formats]
    return out


# ---- Markdown ----------------------------------------------------------------------------------------------


def md_escape(s: object) -> str:
    """Plan and board strings are data: no table breaks, no raw HTML, no code spans, no links. Only what
    would start a tag, an autolink or an entity takes CommonMark's backslash escape (`\\<script`, `\\&amp;`),
    never an HTML entity: the file reads "p < 0.0001" and ">= 1000" as its reader wrote them."""
    text = str(s).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    text = term(text.replace("](", "]\\(").replace("][", "]\\["))  # no [x](url) link; controls shown
    text = _MD_TAG.sub(r"\\\g<0>", text)
    return " ".join(text.splitlines())


_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?\w+;)")  # a tag, comment, autolink or entity starts here


def md_table(headers: Iterable[str], rows: Iterable[Iterable[str]], numeric: Iterable[bool]) -> list[str]:
    headers = list(headers)
    out = [
        "| " + " | ".join(md_escape(h) for h in headers) + " |",
        "|" + "|".join("---:" if num else "---" for num in numeric) + "|",
    ]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return out


def md_block(b: doc.Block) -> list[str]:
    if isinstance(b, doc.Table):
        notes = ["", *(md_escape(n) + "  " for n in b.notes)] if b.notes else []
        head = [f"**{md_escape(b.title)}**", ""] if b.title else []
        return head + md_table(b.headers, b.rows, b.numeric) + notes
    if isinstance(b, doc.Prose):
        line = f"**{md_escape(b.text)}**" if b.strong else _bold(b.text, b.bold, md_escape, "**", "**")
        return ["\\" + line if line.startswith(">") else line]  # a line's first ">" would open a quote
    if isinstance(b, doc.Items):
        return [f"- {md_escape(x)}" for x in b.items]
    if isinstance(b, doc.Preformatted):
        # a fence longer than any run of backticks in the text, so no line of it can close the block
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", b.text)), default=0))
        body = [term(line) for line in b.text.splitlines()]  # control characters shown, as elsewhere
        return ([md_escape(b.summary), ""] if b.summary else []) + [fence, *body, fence]
    if isinstance(b, doc.Facts):
        head = [f"**{md_escape(b.title)}**", ""] if b.title else []
        return head + [f"- {md_escape(k)}: {md_escape(v)}" for k, v in b.pairs]
    return []


def md_sections(sections: Iterable[doc.Section]) -> list[str]:
    out: list[str] = []
    for s in sections:
        if "md" not in s.formats:
            continue
        if s.title:
            out += ["", "#" * min(max(s.level, 1), 6) + " " + md_escape(s.title)]
        for b in s.blocks:
            if "md" in b.formats:
                lines = md_block(b)
                if lines:
                    out += ([""] if out else []) + lines
    return out


# ---- text --------------------------------------------------------------------------------------------------


def aligned(headers, rows, numeric) -> list[str]:
    rows = [tuple(term(c) for c in r) for r in rows]  # escaped before measuring, so columns stay aligned
    headers = tuple(headers)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]


def text_table(t: doc.Table) -> list[str]:
    headers = t.headers
    if t.text_columns is not None:
        keep = [i for i, h in enumerate(headers) if h in t.text_columns]
    else:
        keep = [i for i, c in enumerate(t.columns) if c.name != t.note_column]
    out = aligned(
        tuple(headers[i] for i in keep),
        [tuple(r[i] for i in keep) for r in t.rows],
        tuple(t.columns[i].numeric for i in keep),
    )
    return ([t.title] if t.title else []) + out + list(t.notes)


def text_block(b: doc.Block) -> list[str]:
    if isinstance(b, doc.Table):
        return text_table(b)
    if isinstance(b, doc.Prose):
        return [b.text]
    if isinstance(b, doc.Items):
        return [f"- {x}" for x in b.items]
    if isinstance(b, doc.Preformatted):
        return b.text.splitlines()
    if isinstance(b, doc.Facts):
        head = [b.title] if b.title else []
        return head + [f"{'  ' if b.title else ''}{k}: {v}" for k, v in b.pairs]
    return []


def text_sections(sections: Iterable[doc.Section]) -> list[str]:
    out: list[str] = []
    for s in sections:
        if "text" not in s.formats:
            continue
        blocks = [b for b in s.blocks if "text" in b.formats]
        if not blocks and s.level > 2:
            continue
        if s.title:
            out += ["", s.title] + (["=" * len(s.title)] if s.level <= 2 else [])
        elif out:
            out.append("")
        for b in blocks:
            out += text_block(b)
    return out


def render_document(document: doc.Document, fmt: str) -> str:
    """The body of a document in one format (HTML: the elements inside <body>, without the page around
    them)."""
    if fmt == "html":
        return "\n".join([f"<h1>{esc(document.title)}</h1>", *html_sections(document.sections)])
    if fmt == "md":
        return "\n".join([f"# {md_escape(document.title)}", *md_sections(document.sections)]) + "\n"
    lines = text_sections(document.sections)
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(term(x) for x in lines) + "\n"


def render_sections(sections: Iterable[doc.Section], fmt: str) -> str:
    """One format's text of some sections: what a study contributes, e.g. for a test or a preview."""
    sections = list(sections)
    if fmt == "html":
        return "\n".join(html_sections(sections))
    if fmt == "md":
        return "\n".join(md_sections(sections))
    return "\n".join(term(x) for x in text_sections(sections))
