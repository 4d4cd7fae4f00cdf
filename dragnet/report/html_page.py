"""One self-contained HTML page from plain data: sections of sortable tables, notes and charts (pure: data ->
HTML string, no I/O).

A section is plain data so any stage can add one (compare verdicts, forecasts …):

    Section(title, columns, rows, notes=[...], charts=[Chart(title, data, layout)], id="anchor")

or the same as a dict (`Section.of({"title": ..., "columns": ..., "rows": ..., "chart": {...}})`). A cell is
text, a number, or a dict {"text", "sort" (a number to sort by), "href" (a link, e.g. "#raw-3"), "title"}.
A chart is a plotly figure (its "data" traces and "layout"); the page carries the plotly.js it is given once,
inline, so it opens from the file system with no network.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass
class Chart:
    title: str
    data: list[dict]
    layout: dict = field(default_factory=dict)

    @classmethod
    def of(cls, spec: "Chart | dict") -> "Chart":
        if isinstance(spec, Chart):
            return spec
        return cls(spec.get("title", ""), list(spec.get("data") or []), dict(spec.get("layout") or {}))


@dataclass
class Section:
    title: str
    columns: Sequence[str] = ()
    rows: Sequence[Sequence[Any]] = ()
    notes: Sequence[str] = ()
    charts: Sequence[Chart] = ()
    id: str = ""
    caption: str = ""
    images: Sequence[tuple[str, str]] = ()     # (file next to the page, its title): SVGs such as flame graphs

    @classmethod
    def of(cls, spec: "Section | dict") -> "Section":
        """A section from plain data; "chart" (one) and "charts" (several) are both accepted."""
        if isinstance(spec, Section):
            return spec
        charts = list(spec.get("charts") or []) + ([spec["chart"]] if spec.get("chart") else [])
        return cls(spec["title"], tuple(spec.get("columns") or ()), [list(r) for r in spec.get("rows") or []],
                   tuple(spec.get("notes") or ()), [Chart.of(c) for c in charts], spec.get("id", ""),
                   spec.get("caption", ""), tuple(tuple(i) for i in spec.get("images") or ()))


def anchor_id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        text = value.get("text", "")
        sort = value.get("sort")
        href = value.get("href")
        tip = value.get("title")
    else:
        text, sort, href, tip = value, None, None, None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            sort = value
    text = "–" if text is None else str(text)
    attrs = ""
    if isinstance(sort, (int, float)) and not isinstance(sort, bool) and math.isfinite(sort):
        attrs += f' data-sort="{sort!r}"'
    elif text != "–":
        attrs += ' class="t"'
    if tip:
        attrs += f' title="{html.escape(str(tip))}"'
    body = html.escape(text)
    if href:
        body = f'<a href="{html.escape(href)}">{body}</a>'
    return f"<td{attrs}>{body}</td>"


def table_html(columns: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    head = "".join(f'<th title="sort by {html.escape(c)}">{html.escape(c)}</th>' for c in columns)
    body = "\n".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<table class="sortable">{cap}<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'


def _json_script(value: Any) -> str:
    # "</" would end the <script> element early
    return json.dumps(value, ensure_ascii=False, allow_nan=False).replace("</", "<\\/")


def section_html(sec: Section, chart_ids: list[tuple[str, Chart]]) -> str:
    sid = sec.id or anchor_id(sec.title)
    level = "h3" if sid.startswith("raw-") else "h2"
    parts = [f'<section id="{html.escape(sid)}"><{level}>{html.escape(sec.title)}</{level}>']
    if sec.columns:
        parts.append(f'<div class="scroll">{table_html(sec.columns, sec.rows, sec.caption)}</div>')
    if sec.notes:
        parts.append("<ul class=\"notes\">" + "".join(f"<li>{html.escape(n)}</li>" for n in sec.notes) + "</ul>")
    if sec.charts:
        parts.append('<div class="charts">')
        for i, ch in enumerate(sec.charts):
            cid = f"chart-{sid}-{i}"
            chart_ids.append((cid, ch))
            parts.append(f'<div class="chart" id="{cid}" data-title="{html.escape(ch.title)}"></div>')
        parts.append("</div>")
    for src, title in sec.images:     # an <object> keeps an SVG's own script (a flame graph's zoom and search)
        parts.append(f'<figure><figcaption>{html.escape(title)}</figcaption><object type="image/svg+xml" '
                     f'data="{html.escape(src)}" style="width:100%"><a href="{html.escape(src)}">'
                     f'{html.escape(title)}</a></object></figure>')
    parts.append("</section>")
    return "\n".join(parts)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1600px;padding:0 20px 48px;
color:#1d2329;background:#fafbfc}
h1{font-size:22px;margin:24px 0 4px}
h2{font-size:17px;margin:32px 0 8px;padding-bottom:4px;border-bottom:1px solid #d8dee4}
h3{font-size:15px;margin:20px 0 6px}.sub{color:#57606a;margin:0 0 12px}
nav{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:8px 14px;margin:12px 0}
nav a{margin-right:14px;white-space:nowrap}a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
table{border-collapse:collapse;margin:8px 0;background:#fff;font-variant-numeric:tabular-nums;font-size:12.5px}
caption{caption-side:bottom;text-align:left;color:#57606a;font-size:12px;padding-top:4px}
th,td{border:1px solid #d8dee4;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f0f3f6;cursor:pointer;user-select:none;position:sticky;top:0}
th:hover{background:#e2e8ee}th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.t,th:first-child{text-align:left}tbody tr:nth-child(even){background:#f6f8fa}
tbody tr:hover{background:#fff8c5}section:target h3{background:#fff8c5}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px;margin:10px 0}
.chart{height:460px;background:#fff;border:1px solid #d8dee4;border-radius:6px}.scroll{overflow-x:auto}
.notes{color:#24292f;margin:6px 0 0;padding-left:20px}.notes li{margin:2px 0}
.meta td{text-align:left;white-space:normal}.meta td:first-child{font-weight:600;white-space:nowrap}
.raw section{margin-left:8px}
"""

# sorts a table by the clicked column: numbers by data-sort (or the text read as a number), "–" last
SORT_JS = r"""
(function(){
function key(td){if(!td)return null;var s=td.getAttribute('data-sort');if(s!==null)return parseFloat(s);
 var t=td.textContent.trim().replace(/,/g,'').replace(/^[×~]/,'');var n=parseFloat(t);
 return (/^-?[0-9.]+/.test(t)&&!isNaN(n))?n:(t==='–'||t===''?null:td.textContent.trim().toLowerCase());}
function cmp(a,b){if(a===null&&b===null)return 0;if(a===null)return 1;if(b===null)return -1;
 if(typeof a===typeof b)return a<b?-1:a>b?1:0;return typeof a==='number'?-1:1;}
document.querySelectorAll('table.sortable').forEach(function(table){
 table.querySelectorAll('thead th').forEach(function(th,col){th.addEventListener('click',function(){
  var desc=th.classList.contains('asc');
  table.querySelectorAll('thead th').forEach(function(h){h.classList.remove('asc','desc');});
  th.classList.add(desc?'desc':'asc');var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(r1,r2){var c=cmp(key(r1.cells[col]),key(r2.cells[col]));if(desc&&c!==0){
   var k1=key(r1.cells[col]),k2=key(r2.cells[col]);if(k1!==null&&k2!==null)c=-c;}return c;});
  rows.forEach(function(r){body.appendChild(r);});});});});
})();
"""


# legends under the plot: above it they collide with long titles
LAYOUT = {"margin": {"t": 48, "r": 24}, "legend": {"orientation": "h", "y": -0.2, "yanchor": "top"}}


def build_page(title: str, sections: Sequence[Section | dict], *, plotly_js: str = "", subtitle: str = "") -> str:
    """The whole page. plotly_js: the plotly.js bundle's text, inlined once (only needed when a section has a
    chart)."""
    secs = [Section.of(s) for s in sections]
    charts: list[tuple[str, Chart]] = []
    body = "\n".join(section_html(s, charts) for s in secs)
    nav = " ".join(f'<a href="#{html.escape(s.id or anchor_id(s.title))}">{html.escape(s.title)}</a>'
                   for s in secs if not (s.id or "").startswith("raw-"))
    scripts = []
    if charts:
        if not plotly_js:
            raise ValueError("the page has charts but no plotly.js to draw them")
        scripts.append(f"<script>{plotly_js}</script>")
        calls = "\n".join(
            f"Plotly.newPlot({json.dumps(cid)}, {_json_script(ch.data)}, "
            f"{_json_script({**LAYOUT, 'title': {'text': ch.title, 'font': {'size': 14}}, **ch.layout})}, "
            "{displayModeBar:false,responsive:true});" for cid, ch in charts)
        scripts.append(f"<script>{calls}</script>")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>" + (f"<p class=\"sub\">{html.escape(subtitle)}</p>" if subtitle else "")
            + f"<nav>{nav}</nav>\n{body}\n<script>{SORT_JS}</script>\n" + "\n".join(scripts) + "\n</body></html>\n")


__all__ = ["Chart", "Section", "anchor_id", "table_html", "build_page"]
