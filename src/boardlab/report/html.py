"""The HTML report: one self-contained file (inline CSS and SVG; no JavaScript, network or external fonts).

`render_html(analysis, series=...)` lays out the document `analysis.sections.build_document` builds; it
computes nothing. Every string that comes from a plan or a board goes through `html.escape` (report.render).
"""

from __future__ import annotations

from boardlab.analysis.core import CampaignAnalysis
from boardlab.analysis.sections import Series, build_document
from boardlab.report.render import esc, render_document

CSS = """
:root{color-scheme:light}
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;background:#fff;margin:0 auto;
 max-width:1400px;padding:12px 24px 40px;line-height:1.45;font-size:14px}
h1{font-size:24px;margin:10px 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #ddd;
 padding-bottom:3px}h3{font-size:15px;margin:16px 0 6px}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:1px 16px;margin:8px 0}
.meta dt{color:#555}.meta dd{margin:0}
.banner{background:#fff4d6;border-left:5px solid #e69f00;padding:6px 10px;margin:10px 0}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
table.verdicts td{white-space:nowrap}
th,td{padding:3px 6px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f2f2f2;font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}
.status{display:inline-block;min-width:42px;text-align:center;font-weight:700;border-radius:3px;padding:0 5px}
.st-OK{background:#e3f1e6;color:#1b5e20}.st-WARN{background:#fff1c7;color:#7a4f00}
.st-FAIL{background:#b2182b;color:#fff}
tr.flagged td{background:#fdecea}tr.note td{color:#555;font-size:12px;border-bottom:1px solid #e4e4e4}
tr.note td{border-top:hidden}tr.nodata td{color:#888}
td.verdict{white-space:nowrap}tr.v-slowdown td.verdict{color:#b2182b;font-weight:700}
tr.v-speedup td.verdict{color:#2166ac;font-weight:700}
tr.confounded td.verdict{text-decoration:underline wavy #e69f00}
td.v-slowdown{color:#b2182b;font-weight:700}td.v-speedup{color:#2166ac;font-weight:700}
td.confounded{text-decoration:underline wavy #e69f00}td.censored{color:#b2182b;font-weight:600}
.small{color:#555;font-size:12.5px}
svg.plot{max-width:100%;height:auto;display:block;margin:6px 0}
.multiples{display:flex;flex-wrap:wrap;gap:8px}.multiples svg.plot{margin:0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
details{margin:6px 0}summary{cursor:pointer;color:#333}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:6px 0}\
.card{border:1px solid #ddd;border-radius:4px;padding:6px 10px;
 min-width:170px}.card-label{color:#555;font-size:12px}.card-value{font-size:16px;font-weight:600;
 font-variant-numeric:tabular-nums}.card-group{font-weight:600;margin-top:10px;color:#333}
@media print{body{max-width:none;padding:0;font-size:11px}h2{break-after:avoid}svg.plot,tr{break-inside:avoid}
 .scroll{overflow:visible}}
"""


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def render_html(analysis: CampaignAnalysis, series: Series | None = None) -> str:
    """The whole report as one HTML document. `series` (from `analysis.monitor_series`) adds the monitor
    plots."""
    document = build_document(analysis, series)
    return page(document.title, render_document(document, "html"))
