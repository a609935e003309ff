"""What a page showed, collected as it renders, for the handout and the exports.

The kit records as it draws (the header, every formula with its live numbers, every
heatmap's matrix, every exercise with its answer), so a page needs no code of its own
for the printable handout or the CSV export. The record is rebuilt on every run.

A worked example walked step by step (ui/reveal.py) draws only the steps reached, so
what it records is short of the later steps. Each part of the page (the top level, and
each section that reruns alone) therefore keeps the last version it recorded with every
step shown, with the URL it was made for: the downloads use it while a walk is under
way and the inputs are still the same, so a learner at step 2 of 4 takes home all four.
"""

from __future__ import annotations

import csv
import html
import io
import re
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import streamlit as st

from ui import state

_KEY = "_handout"
TOP = ""  # the page's own items, as opposed to a section that reruns alone
_STEP_PARAM = ".step"  # a walk's position in the URL: "<stage>.<name>.step=2" (ui/reveal.py)
_VIEW_ONLY = ("present",)  # URL values that change the layout, never what is recorded


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[str]
    cells: list[list[str]]


@dataclass(frozen=True)
class Whole:
    """A part's items recorded with every step shown, and the URL (less the walks'
    positions) they were recorded for."""
    signature: tuple[tuple[str, str], ...]
    items: tuple[tuple[str, object], ...]


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
    walking: dict[str, bool] = field(default_factory=dict)  # part -> recorded mid-walk
    whole: dict[str, Whole] = field(default_factory=dict)  # part -> its last whole version

    def all_items(self) -> list[tuple[str, object]]:
        """What the page drew in its latest runs, in page order."""
        return self.resolve(None)[0]

    def resolve(self, params: Mapping[str, str] | None) -> tuple[list[tuple[str, object]], bool]:
        """The items for a download asked for while the URL is `params` (None: exactly
        what is on screen), and whether they hold every step: a part recorded part-way
        through a walk is replaced by its whole version when that was made for the same
        inputs."""
        complete = True

        def pick(name: str, current: list[tuple[str, object]]) -> list[tuple[str, object]]:
            nonlocal complete
            if params is None or not self.walking.get(name):
                return current
            whole = self.whole.get(name)
            if whole is not None and whole.signature == signature(params):
                return list(whole.items)
            complete = False
            return current

        out = []
        for kind, item in pick(TOP, self.items):
            out.extend(pick(item, self.parts.get(item, [])) if kind == "part" else [(kind, item)])
        return out, complete

    def tables(self, params: Mapping[str, str] | None = None) -> list[Table]:
        return [item for kind, item in self.resolve(params)[0] if kind == "table"]


def signature(params: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The URL as far as it decides what a page records: without the walks' positions
    and the presenter view."""
    return tuple(sorted((key, value) for key, value in params.items()
                        if not key.endswith(_STEP_PARAM) and key not in _VIEW_ONLY))


def walking(params: Mapping[str, str]) -> bool:
    """Is a worked example part-way through its steps (the others are hidden)?"""
    return any(key.endswith(_STEP_PARAM) for key in params)


def start(stage_id: str, title: str, lead: str) -> None:
    """A new run of the whole page; the whole versions of its parts are kept."""
    old = st.session_state.get(_KEY)
    record = Record(stage_id, title, lead)
    if isinstance(old, Record) and old.stage == stage_id:
        record.whole = old.whole
    st.session_state[_KEY] = record


def current() -> Record:
    record = st.session_state.get(_KEY)
    if not isinstance(record, Record) or record.stage != state.current_stage():
        record = Record(state.current_stage())
        st.session_state[_KEY] = record
    return record


def add(kind: str, item: object) -> None:
    """kind: "section" (a title), "subsection" (a title within a section), "formula"
    ((symbolic, live)), "table" (Table), "exercise" ((question, options or None, answer,
    steps)), "step" ((number, label, result): a worked example's step, its result as
    Markdown or "")."""
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
        settle(record, name)


def settle(record: Record, name: str = TOP) -> None:
    """A part (TOP: the whole page's run) has drawn: note whether a walk hid some of its
    steps, and keep it as the part's whole version when none did."""
    params = state.url_now()
    items = record.items if name == TOP else record.parts.get(name, [])
    record.walking[name] = walking(params)
    if not record.walking[name]:
        record.whole[name] = Whole(signature(params), tuple(items))


def add_table(title: str, columns, rows, cells: list[list[str]]) -> None:
    """A table as shown: its cells already written as text (kept as given, and often
    shared with other sessions' records: read them, never change them)."""
    add("table", Table(title, [str(c) for c in columns], [str(r) for r in rows], cells))


# --- CSV: every table of the page, one file each, in a zip ------------------------------
BOM = "\ufeff"  # so that Excel reads the files as UTF-8 (Chinese labels)


def csv_files(record: Record, params: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(file name, contents) for every table, named after the table: its title, else
    the heading it sits under; a caption row, then the table."""
    files, used, heading = [], set(), record.title
    for kind, item in record.resolve(params)[0]:
        if kind in ("section", "subsection"):
            heading = str(item)
        elif kind == "table":
            caption = item.title or heading
            base = _slug(caption) or _slug(record.title) or record.stage or "table"
            name, n = f"{base}.csv", 1
            while name in used:
                n += 1
                name = f"{base}_{n}.csv"
            used.add(name)
            files.append((name, table_csv(item, caption)))
    return files


def tables_zip(record: Record, params: Mapping[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in csv_files(record, params):
            archive.writestr(name, text.encode("utf-8"))
    return buffer.getvalue()


def table_csv(table: Table, caption: str | None = None) -> str:
    """The table as CSV with a byte-order mark: the caption on the first row, then the
    column labels, then one row per row label."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([table.title if caption is None else caption])
    writer.writerow(["", *table.columns])
    for name, row in zip(table.rows, table.cells, strict=True):
        writer.writerow([name, *row])
    return BOM + out.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^\w]+", "_", text, flags=re.UNICODE).strip("_")[:40].rstrip("_")


# --- The printable handout --------------------------------------------------------------
_STYLE = """
body { font-family: "Noto Sans CJK SC", "Noto Sans", sans-serif; max-width: 52rem;
       margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #212529; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 1.6rem; }
h3 { font-size: 1rem; margin: 1rem 0 .3rem; }
.table { overflow-x: auto; margin: .6rem 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .85rem;
        line-height: 1.3; }
caption { text-align: left; font-weight: bold; padding-bottom: .3rem; }
td, th { border: 1px solid #adb5bd; padding: .15rem .35rem; text-align: right;
         white-space: nowrap; }
th { background: #f1f3f5; }
.formula { margin: .5rem 0 .9rem; line-height: normal; }
.formula .live { color: #364fc7; }
math[display="block"] { display: block math; width: fit-content; margin: .35rem 0; }
math { font-size: 1.15em; font-family: "Cambria Math", "STIX Two Math", "Latin Modern Math",
       "DejaVu Serif", serif; }
mtable mtd { padding: .1em .35em; }
mtable.bmatrix { margin: 0 .15em; padding: 0 .15em; border: solid currentColor;
  border-width: 0 .08em; background:
  linear-gradient(currentColor, currentColor) top left / .3em .08em no-repeat,
  linear-gradient(currentColor, currentColor) bottom left / .3em .08em no-repeat,
  linear-gradient(currentColor, currentColor) top right / .3em .08em no-repeat,
  linear-gradient(currentColor, currentColor) bottom right / .3em .08em no-repeat; }
span.brace { display: inline-block; margin-right: .15em; }
.step { margin: .9rem 0 .3rem; }
.step code { white-space: nowrap; }
.exercise { border: 1px solid #ced4da; padding: .6rem .9rem; margin: .8rem 0;
            break-inside: avoid; }
.answers { break-before: page; page-break-before: always; }
.meta, .note { color: #495057; font-size: .85rem; }
.note { border-left: 3px solid #f08c00; padding-left: .6rem; }
h2, h3, .step { break-after: avoid; }
.formula, .table { break-inside: avoid; }
@media print { body { margin: 0 auto; max-width: none; padding: 0; } a { color: inherit; }
  .table { overflow: visible; } table { font-size: 7.5pt; } caption { font-size: 10pt; } }
"""


def handout_html(record: Record, labels: Mapping[str, str], url: str,
                 params: Mapping[str, str] | None = None, lang: str = "en") -> str:
    """A standalone HTML page that prints cleanly: formulas as MathML, matrices as
    bracketed tables (no network, no script), every step of the page's worked examples
    (see Record.resolve: params is the URL at the moment of the download)."""
    items, complete = record.resolve(params)
    body = [f"<h1>{html.escape(record.title)}</h1>", _markdown(record.lead),
            f'<p class="meta">{html.escape(labels["made_from"])} <a href="{html.escape(url)}">'
            f"{html.escape(url)}</a></p>"]
    if not complete:
        body.append(f'<p class="note">{html.escape(labels["partial"])}</p>')
    answers, number = [], 0
    for kind, item in items:
        if kind == "section":
            body.append(f"<h2>{html.escape(str(item))}</h2>")
        elif kind == "subsection":
            body.append(f"<h3>{html.escape(str(item))}</h3>")
        elif kind == "step":
            step, label, result = item
            body.append(f'<p class="step"><b>{step} · {_inline(label)}</b>'
                        + (f" — {_inline(result)}" if result else "") + "</p>")
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
                        + ("<ol type='A'>" + "".join(f"<li>{_inline(o)}</li>"
                                                     for o in options) + "</ol>"
                           if options else "") + "</div>")
            answers.append(f"<p><b>{number}.</b> {_inline(answer)}</p>{_markdown(steps)}")
    if answers:
        body.append(f'<section class="answers"><h2>{html.escape(labels["answers"])}</h2>'
                    + "".join(answers) + "</section>")
    return (f"<!doctype html><html lang=\"{html.escape(lang)}\"><head><meta charset='utf-8'>"
            f"<title>{html.escape(record.title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>")


def _table(table: Table) -> str:
    head = "".join(f"<th scope='col'>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join(f"<tr><th scope='row'>{html.escape(name)}</th>"
                   + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for name, row in zip(table.rows, table.cells, strict=True))
    caption = f"<caption>{html.escape(table.title)}</caption>" if table.title else ""
    return f'<div class="table"><table>{caption}<tr><td></td>{head}</tr>{rows}</table></div>'


# --- LaTeX to MathML -----------------------------------------------------------------------
_ENV = re.compile(r"\\(begin|end)\{([A-Za-z*]+)\}")
_LINES = re.compile(r"\\begin\{(aligned|gathered|split)\}")
_ROW_GAP = re.compile(r"\s*\[[^\]]*\]")  # the "[8pt]" of "\\[8pt]"
# A sized delimiter named by a command (\Big\|): latex2mathml would print the command
# as written, so it gets the delimiter's own character.
_SIZED = re.compile(r"(\\[bB]igg?[lr]?)\s*\\(\||[lr]?Vert|langle|rangle)(?![A-Za-z])")
_DELIMITERS = {"|": "‖", "Vert": "‖", "lVert": "‖", "rVert": "‖", "langle": "⟨", "rangle": "⟩"}


def _math(latex: str, display: str = "block") -> str:
    """MathML for one formula. A formula of several lines (aligned, gathered) becomes one
    line each, its alignment marks dropped; matrices keep their rows and columns."""
    return "".join(_one_formula(line, display) for line in formula_lines(latex))


def formula_lines(latex: str) -> list[str]:
    """The lines of a formula: an aligned or gathered block split at its top-level line
    breaks, whatever comes before it joined to its first line and after it to its last;
    & kept inside matrices, dropped between aligned columns."""
    latex = _SIZED.sub(lambda m: m.group(1) + _DELIMITERS[m.group(2)], latex)
    found = _LINES.search(latex)
    if found is None:
        return [line for line in _split(latex) if line.strip()]
    end = _matching_end(latex, found.end())
    head, body, tail = latex[:found.start()], latex[found.end():end[0]], latex[end[1]:]
    lines = [line for line in _split(body) if line.strip()] or [""]
    lines[0], lines[-1] = head + lines[0], lines[-1] + tail
    return [line for line in lines if line.strip()]


def _matching_end(latex: str, start: int) -> tuple[int, int]:
    """Where the environment opened just before `start` ends: (start, end) of its
    \\end{...}; the end of the text when it is not closed."""
    depth = 1
    for found in _ENV.finditer(latex, start):
        depth += 1 if found.group(1) == "begin" else -1
        if depth == 0:
            return found.start(), found.end()
    return len(latex), len(latex)


def _split(body: str) -> list[str]:
    """Split at the line breaks (\\\\) outside braces and inner environments, dropping
    the alignment marks (&) found there."""
    lines, current, braces, envs, i = [], [], 0, 0, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            found = _ENV.match(body, i)
            if found:
                envs += 1 if found.group(1) == "begin" else -1
                current.append(found.group(0))
                i = found.end()
            elif body.startswith("\\\\", i) and braces == envs == 0:
                lines.append("".join(current))
                current = []
                i += 2
                gap = _ROW_GAP.match(body, i)
                i = gap.end() if gap else i
            else:
                current.append(body[i:i + 2])  # a command's backslash, or \{ \& ...
                i += 2
            continue
        braces += {"{": 1, "}": -1}.get(char, 0)
        if not (char == "&" and braces == envs == 0):
            current.append(char)
        i += 1
    lines.append("".join(current))
    return lines


# Brackets and braces that must grow with what they enclose: without a maths font
# (a school's PC may have none) a browser draws them one line high. A matrix gets its
# brackets from CSS instead (mtable.bmatrix), the brace of cases is stretched.
_BMATRIX = re.compile(r"<mo>&#x0005B;</mo><mtable>(.*?)</mtable><mo>&#x0005D;</mo>", re.S)
_BRACE = re.compile(r'<mo stretchy="true" fence="true" form="prefix">&#x0007B;</mo>'
                    r"(<mtable>.*?</mtable>)", re.S)


# A minus sign that opens a row, a cell or a bracket, or follows an operator (= -0.178),
# is a sign, not a subtraction: no space after it.
_UNARY_MINUS = re.compile(r"(<math[^>]*>|<mrow>|<mtd[^>]*>|<mo[^>]*>(?!&#x00029;|&#x0005D;|"
                          r"&#x0007D;|&#x0007C;)[^<]*</mo>)<mo>&#x02212;</mo>")


def _one_formula(latex: str, display: str = "block") -> str:
    from latex2mathml.converter import convert  # imported on demand: only for handouts

    try:
        mathml = convert(latex.strip(), display=display)
    except Exception:  # an unsupported command: the formula as readable text
        return f"<span>{html.escape(plain_text(latex))}</span>"
    mathml = _BMATRIX.sub(r'<mtable class="bmatrix">\1</mtable>', mathml)
    mathml = _UNARY_MINUS.sub(r'\1<mo lspace="0" rspace="0">&#x02212;</mo>', mathml)
    mathml = mathml.replace('<mo stretchy="false">&#x0007C;</mo>',  # |q|: bars hug
                            '<mo stretchy="false" lspace="0" rspace="0">&#x0007C;</mo>')
    return _BRACE.sub(lambda m: '<mtext><span class="brace" style="transform: scaleY('
                      f'{max(1, m.group(1).count("<mtr>")) * 1.1:.1f})">{{</span></mtext>'
                      + m.group(1), mathml)


def plain_text(latex: str) -> str:
    """A formula as text, when it cannot be typeset: commands become their symbols or
    their names, braces go."""
    text = re.sub(r"\\(?:text|mathrm|operatorname|mathbf|mathit)\{([^{}]*)\}", r"\1", latex)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    symbols = {"cdot": "·", "times": "×", "le": "≤", "ge": "≥", "to": "→", "infty": "∞",
               "sqrt": "√", "sum": "Σ", "approx": "≈", "odot": "⊙", "quad": "  ",
               "qquad": "  "}
    text = re.sub(r"\\([A-Za-z]+)", lambda m: symbols.get(m.group(1), m.group(1)), text)
    return re.sub(r"[{}]|\\.", lambda m: " " if m.group(0) in ("\\,", "\\ ") else "", text)


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
        parts.append(_emphasis(text[last:match.start()]))
        latex = match.group(1) or match.group(2)
        parts.append(_math(latex, "block" if match.group(1) else "inline"))
        last = match.end()
    parts.append(_emphasis(text[last:]))
    return "".join(parts)


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # Markdown's \< \* \_ ...: the character itself
_PRIVATE = 0xE000  # an escaped character waits here, out of the emphasis rules' way


def _emphasis(text: str) -> str:
    """Plain text to HTML: **bold**, *italic*, `code`, and Markdown's escapes."""
    text = _ESCAPED.sub(lambda m: chr(_PRIVATE + ord(m.group(1))), text)
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return re.sub("[\ue000-\ue07f]", lambda m: html.escape(chr(ord(m.group(0)) - _PRIVATE)),
                  text)
