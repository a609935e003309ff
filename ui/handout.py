"""What a page showed, collected as it renders, for the handout and the exports.

The kit records as it draws (the header, every formula with its live numbers, every
heatmap's matrix, every exercise with its answer), so a page needs no code of its own
for the printable handout or the CSV export. The record is rebuilt on every run.
"""

from __future__ import annotations

import csv
import html
import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import streamlit as st

from ui import state

_KEY = "_handout"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[str]
    cells: list[list[str]]


@dataclass
class Record:
    stage: str = ""
    title: str = ""
    lead: str = ""
    # In page order; ("part", name) stands for the items of a section that reruns alone
    # (ui.page.part), kept in parts[name] and replaced each time that section runs.
    items: list[tuple[str, object]] = field(default_factory=list)
    parts: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    active: str | None = None

    def all_items(self) -> list[tuple[str, object]]:
        out = []
        for kind, item in self.items:
            out.extend(self.parts.get(item, []) if kind == "part" else [(kind, item)])
        return out

    def tables(self) -> list[Table]:
        return [item for kind, item in self.all_items() if kind == "table"]


def start(stage_id: str, title: str, lead: str) -> None:
    st.session_state[_KEY] = Record(stage_id, title, lead)


def current() -> Record:
    record = st.session_state.get(_KEY)
    if not isinstance(record, Record) or record.stage != state.current_stage():
        record = Record(state.current_stage())
        st.session_state[_KEY] = record
    return record


def add(kind: str, item: object) -> None:
    """kind: "section" (a title), "subsection" (a title within a section), "formula"
    ((symbolic, live)), "table" (Table), "exercise" ((question, options or None, answer,
    steps))."""
    record = current()
    (record.parts[record.active] if record.active else record.items).append((kind, item))


@contextmanager
def part(name: str) -> Iterator[None]:
    """What a section that reruns alone records replaces what it recorded last time."""
    record = current()
    if name not in record.parts:
        record.items.append(("part", name))
    record.parts[name], record.active = [], name
    try:
        yield
    finally:
        record.active = None


def add_table(title: str, columns, rows, cells) -> None:
    add("table", Table(title, [str(c) for c in columns], [str(r) for r in rows],
                       [[str(v) for v in row] for row in cells]))


# --- CSV: every table of the page, one file each, in a zip ------------------------------
def tables_zip(record: Record) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, table in enumerate(record.tables(), start=1):
            archive.writestr(f"{index:02d}_{_slug(table.title) or 'table'}.csv", table_csv(table))
    return buffer.getvalue()


def table_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["", *table.columns])
    for name, row in zip(table.rows, table.cells, strict=True):
        writer.writerow([name, *row])
    return out.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^\w]+", "_", text, flags=re.UNICODE).strip("_")[:40]


# --- The printable handout --------------------------------------------------------------
_STYLE = """
body { font-family: "Noto Sans CJK SC", "Noto Sans", sans-serif; max-width: 52rem;
       margin: 2rem auto; line-height: 1.5; color: #212529; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 1.6rem; }
h3 { font-size: 1rem; margin: 1rem 0 .3rem; }
table { border-collapse: collapse; margin: .6rem 0; font-variant-numeric: tabular-nums; }
td, th { border: 1px solid #adb5bd; padding: .2rem .5rem; text-align: right; }
th { background: #f1f3f5; }
.formula { margin: .5rem 0 .9rem; } .formula .live { color: #364fc7; }
.exercise { border: 1px solid #ced4da; padding: .6rem .9rem; margin: .8rem 0; }
.answers { break-before: page; page-break-before: always; }
.meta { color: #6c757d; font-size: .85rem; }
math { font-size: 1.1em; }
@media print { body { margin: 0 auto; } a { color: inherit; } }
"""


def handout_html(record: Record, labels: dict[str, str], url: str) -> str:
    """A standalone HTML page that prints cleanly; formulas as MathML (no network)."""
    body = [f"<h1>{html.escape(record.title)}</h1>", _markdown(record.lead),
            f'<p class="meta">{html.escape(labels["made_from"])} <a href="{html.escape(url)}">'
            f"{html.escape(url)}</a></p>"]
    answers, number = [], 0
    for kind, item in record.all_items():
        if kind == "section":
            body.append(f"<h2>{html.escape(str(item))}</h2>")
        elif kind == "subsection":
            body.append(f"<h3>{html.escape(str(item))}</h3>")
        elif kind == "formula":
            symbolic, live = item
            body.append('<div class="formula">' + _math(symbolic)
                        + (f'<div class="live">{_math(live)}</div>' if live else "") + "</div>")
        elif kind == "table":
            body.append(_table(item))
        elif kind == "exercise":
            number += 1
            question, options, answer, steps = item
            body.append(f'<div class="exercise"><b>{number}.</b> {_markdown(question)}'
                        + ("<ol type='A'>" + "".join(f"<li>{html.escape(o)}</li>"
                                                     for o in options) + "</ol>"
                           if options else "") + "</div>")
            answers.append(f"<p><b>{number}.</b> {html.escape(answer)}</p>{_markdown(steps)}")
    if answers:
        body.append(f'<section class="answers"><h2>{html.escape(labels["answers"])}</h2>'
                    + "".join(answers) + "</section>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>"
            + html.escape(record.title) + f"</title><style>{_STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>")


def _table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join(f"<tr><th>{html.escape(name)}</th>"
                   + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for name, row in zip(table.rows, table.cells, strict=True))
    caption = f"<p><b>{html.escape(table.title)}</b></p>" if table.title else ""
    return f"{caption}<table><tr><th></th>{head}</tr>{rows}</table>"


def _math(latex: str) -> str:
    """MathML for one formula; an aligned block becomes one formula per line."""
    lines = re.sub(r"\\(begin|end)\{aligned\}", "", latex).replace("&", "").split(r"\\")
    return "".join(_one_formula(line) for line in lines if line.strip())


def _one_formula(latex: str) -> str:
    from latex2mathml.converter import convert  # imported on demand: only for handouts

    try:
        return convert(latex, display="block")
    except Exception:  # an unsupported command: the LaTeX itself is still exact
        return f"<code>{html.escape(latex)}</code>"


_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)


def _markdown(text: str) -> str:
    """The little Markdown our texts use: paragraphs, '- ' lists, **bold**, *italic*,
    `code` and $maths$."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.split("\n")
        if all(line.lstrip().startswith("- ") for line in lines):
            out.append("<ul>" + "".join(f"<li>{_inline(line.lstrip()[2:])}</li>"
                                         for line in lines) + "</ul>")
        else:
            out.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "".join(out)


def _inline(text: str) -> str:
    parts, last = [], 0
    for match in _INLINE_MATH.finditer(text):
        parts.append(_emphasis(html.escape(text[last:match.start()])))
        latex = match.group(1) or match.group(2)
        parts.append(_math(latex) if match.group(1) else _math(latex).replace(
            'display="block"', 'display="inline"'))
        last = match.end()
    parts.append(_emphasis(html.escape(text[last:])))
    return "".join(parts)


def _emphasis(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)
