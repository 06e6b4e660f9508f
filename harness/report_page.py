"""make compare's and make paper's HTML page (compare.html, paper.html): one
self-contained file beside the Markdown, the template harness/report_page.html
with the report in a JSON script tag. The Markdown's headings, text and tables
become the page's sections (its images are left out: the page draws the
curves itself, with zoom), and chart() adds a curve plot."""
import json
import math
import os
import re

from harness.files import write_output

# The colours runs are drawn in, on the pages and in the plots: one per architecture, in turn.
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_page.html")
MARK = "@REPORT_DATA@"


def markdown_sections(md_lines):
    """Headings, paragraphs, bullets and tables of a report's Markdown lines
    (image lines are left out)."""
    sections, table = [], None
    for line in md_lines:
        for text in line.split("\n"):
            text = text.rstrip()
            if text.startswith("|"):
                cells = [c.strip() for c in text.strip("|").split("|")]
                if table is None:
                    table = {"kind": "table", "id": f"table{sum(s['kind'] == 'table' for s in sections)}",
                             "columns": cells, "rows": []}
                    sections.append(table)
                elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    table["rows"].append(cells)
                continue
            table = None
            if not text or text.startswith("!["):
                continue
            m = re.match(r"(#+) (.*)", text)
            if m:
                sections.append({"kind": "heading", "level": len(m.group(1)), "text": m.group(2)})
            else:
                bullet = text.startswith("- ")
                sections.append({"kind": "text", "bullet": bullet, "text": text[2:] if bullet else text})
    return sections


def chart(chart_id, title, xlabel, ylabel, series, note=None, xlog=False, ymax=None):
    """A line chart: series is a list of {"name", "color", "points": [[x, y]],
    optional "legend" (series sharing it share a legend entry), "band":
    [[x, lo, hi]], "dash", "width"}."""
    def number(v):
        return v if v is not None and math.isfinite(v) else None
    for s in series:
        s["points"] = [[x, number(y)] for x, y in s["points"]]
        if "band" in s:
            s["band"] = [[x, lo, hi] for x, lo, hi in s["band"] if number(lo) is not None and number(hi) is not None]
    c = {"kind": "chart", "id": chart_id, "title": title, "xlabel": xlabel, "ylabel": ylabel, "series": series,
         "xlog": xlog}
    if note:
        c["note"] = note
    if ymax is not None:
        c["ymax"] = ymax
    return c


def write_page(path, title, sections):
    """Writes the page (through its temporary: harness/files.py); '<' in the data is escaped so no
    string can close the script tag."""
    with open(TEMPLATE, encoding="utf-8") as f:
        template = f.read()
    data = json.dumps({"title": title, "sections": sections}, separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c")
    write_output(path, template.replace(MARK, data, 1), "the page")
