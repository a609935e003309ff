"""Stage 11's cell explanations: for one cell of any intermediate of the decoder's
forward pass, the formula with that cell's own numbers (ui.explain's formats); and the
trace of a number back to the token IDs (tinyformer/lessons/trace.py), its trail kept in
the URL ("forward.trace").

    formula(FORMULA[step.name][1], explain.latex_part(explain_cell(step, g, i, c, rows, tok)))
    trace_button(Address(step.id, g, i, c), key)   # under a clicked cell
    trace_view(run, rows, tok)                     # the breadcrumb, one step, its inputs
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from tinyformer.lessons import forward_pass as fp
from tinyformer.lessons import trace as tr
from tinyformer.softmax import softmax_steps
from ui import explain, state
from ui.fmt import num, term
from ui.headings import subsection
from ui.i18n import t

NORM = r"\frac{{{0}_c - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}}\,\gamma_c + \beta_c"  # of row i
FORMULA = {  # step name -> (the symbol of one cell, the step's formula)
    "tok": ("e", r"e_i = E[\mathrm{id}_i]"),
    "pos": ("p", r"p_i = P[i]"),
    "x0": ("x", "x = e + p"),
    "norm1": (r"\hat x", r"\hat x_c = " + NORM.format("x")),
    "q": ("q", r"Q = \hat x W_q"),
    "k": ("k", r"K = \hat x W_k"),
    "v": ("v", r"V = \hat x W_v"),
    "scores": ("s", r"S^{(h)} = \frac{Q^{(h)} K^{(h)\top}}{\sqrt{d_h}} + M"),
    "weights": ("a", r"A^{(h)} = \mathrm{softmax}(S^{(h)})"),
    "heads": ("o", r"O^{(h)} = A^{(h)} V^{(h)}"),
    "merged": ("o", r"O = [O^{(0)} \cdots O^{(H-1)}]"),
    "proj": ("y", "y = O W_o"),
    "resid1": ("h", "h = x + y"),
    "norm2": (r"\hat h", r"\hat h_c = " + NORM.format("h")),
    "ffn_hidden": ("u", r"u = \mathrm{GELU}(\hat h W_1 + b_1)"),
    "ffn_out": ("f", "f = u W_2 + b_2"),
    "resid2": ("x'", "x' = h + f"),
    "final": (r"\bar x", r"\bar x_c = " + NORM.format("x'")),
    "logits": ("z", r"z = \bar x W"),
    "probs": ("p", r"p = \mathrm{softmax}(z_{N-1})"),
}


def explain_cell(step: fp.Step, g: int, i: int, c: int, rows: list[str],
                 tok: Callable[[int], str]) -> str:
    """Cell (i, c) of head (or group) g of `step`, explained with its numbers.
    rows: the positions' labels; tok: a token ID as the page names it."""
    cell = step.cell(g, i, c)
    last = len(rows) - 1  # the probabilities are position N-1's
    name = explain.cell_name(FORMULA[step.name][0], last if step.name == "probs" else i, c)
    lead = t(f"forward.cell_{step.name}", i=rows[i], c=c, h=g, row=cell.row, head=cell.head,
             col=cell.column, j=rows[c] if c < len(rows) else c, tok=tok(c))
    value = num(cell.value, 4 if step.name == "probs" else 3)
    if cell.blocked:
        blocked = r"-\infty" if cell.op == "score" else "0"
        return explain.formula(t("forward.cell_blocked", i=rows[i], j=rows[c]),
                               f"{name} = {blocked}")
    if cell.op == "add":
        return explain.sum_of(lead, name, list(cell.parts), cell.value)
    if cell.op == "score" or (cell.op == "linear" and cell.bias is None):
        return explain.dot(lead, name, cell.left, cell.right, cell.value,
                           scale_by=cell.scale_dim)
    if cell.op == "softmax" and step.name == "weights":
        return explain.softmax(lead, name, cell.scores, c)
    return explain.formula(lead, f"{name} = {_worked(step, cell, i, c)} = {value}")


def _worked(step: fp.Step, cell, i: int, c: int) -> str:
    """The middle of "name = ... = value" for the ops written out in one line."""
    if cell.op == "lookup":
        return f"{'E' if step.name == 'tok' else 'P'}_{{{cell.row},{c}}}"
    if cell.op == "norm":
        x, mu, sd, gamma, beta = (term(v, 3) for v in cell.parts)
        return rf"\frac{{{x} - {mu}}}{{{sd}}} \cdot {gamma} + {beta}"
    if cell.op == "concat":
        return rf"o^{{({cell.head})}}_{{{i},{cell.column}}}"
    if cell.op == "softmax":  # V logits: the sum is named, not written out
        s = softmax_steps(cell.scores)
        return (rf"\frac{{e^{{{num(s.scores[c])}}}}}{{\sum_k e^{{z_{{N-1,k}}}}}} = "
                rf"\frac{{{num(s.exps[c], 4)}}}{{{num(s.total, 4)}}}")
    # A row times a column, plus a bias (and GELU in the FFN's hidden layer).
    latex = f"{num(cell.dot)} + {term(cell.bias, 3)}"
    if cell.activation:
        latex = rf"\mathrm{{GELU}}({latex}) = \mathrm{{GELU}}({num(cell.pre)})"
    return latex


# --- Trace a number back (tinyformer/lessons/trace.py) ----------------------------------
TRAIL = "trace"  # the stage's URL key: "forward.trace=logits-0-13-2~final-0-13-5~..."
PER_HEAD = ("scores", "weights", "heads")  # steps whose group is a head
MAX_BUTTONS = 4  # sources offered as buttons; the others in a select box


def _trail_codec(run: fp.ForwardRun) -> state.Codec:
    def valid(trail) -> bool:
        if not isinstance(trail, tuple) or len(trail) > tr.MAX_TRAIL or not all(
                isinstance(a, tr.Address) for a in trail):
            return False
        try:
            return tr.parse_trail(run, tr.trail_text(trail)) == trail
        except tr.TrailError:
            return False

    return state.Codec(encode=tr.trail_text, decode=lambda raw: tr.parse_trail(run, raw),
                       valid=valid)


_PLAIN = {r"\hat x": "x̂", r"\hat h": "ĥ", r"\bar x": "x̄"}  # for a select box: no LaTeX


def crumb(run: fp.ForwardRun, address: tr.Address, tok: Callable[[int], str],
          plain: bool = False) -> str:
    """One cell of a trail as the breadcrumb names it: "Logits $z_{13,2}$" (plain: in
    text that draws no LaTeX, "Logits z[13, 2]")."""
    if address.step == tr.IDS:
        return t("forward.crumb_id", i=address.i, tok=tok(run.ids[address.i]))
    step = tr.steps_by_id(run)[address.step]
    symbol = FORMULA[step.name][0]
    row = len(run.ids) - 1 if step.name == "probs" else address.i
    block = "" if step.block is None else t("forward.block", b=step.block) + " · "
    if plain:
        head = f"⁽{address.g}⁾" if step.name in PER_HEAD else ""
        name = f"{_PLAIN.get(symbol, symbol)}{head}[{row}, {address.c}]"
    else:
        head = f"^{{({address.g})}}" if step.name in PER_HEAD else ""
        name = f"${explain.cell_name(symbol + head, row, address.c)}$"
    if step.name in ("logits", "probs") and tok(address.c) != str(address.c):
        name += f" {tok(address.c)}"  # the column is a token ID: name its character
    return f"{block}{t(f'forward.step_{step.name}')} {name}"


def _set_trail(key: str, trail: tuple[tr.Address, ...]) -> None:
    st.session_state[key] = trail


def trace_button(address: tr.Address, key: str) -> None:
    """Under a clicked cell: start a trail there (it replaces the one before)."""
    st.button(t("forward.trace_start"), key=state.private(TRAIL, key),
              icon=":material/route:", on_click=_set_trail,
              args=(state.qualify(TRAIL), (address,)))


def trace_view(run: fp.ForwardRun, rows: list[str], tok: Callable[[int], str]) -> None:
    """The trail so far as a breadcrumb, the last cell's computation with the numbers
    that went into it, and its inputs: one click follows one of them a step back."""
    key = state.qualify(TRAIL)
    codec = _trail_codec(run)
    trail = state.initial(key, (), codec, t("forward.trace_label"), quiet_stale=True)
    state.write_url(key, trail, (), codec)
    subsection(t("forward.trace_title"))
    if not trail:
        st.caption(t("forward.trace_empty"))
        return
    st.markdown(" ← ".join(crumb(run, a, tok) for a in trail), help=t("forward.trace_help"))
    here = trail[-1]
    link = tr.link(run, here)
    if here.step == tr.IDS:
        st.success(t("forward.trace_done", i=here.i, tok=tok(run.ids[here.i]), n=len(trail)),
                   icon=":material/flag:")
    else:
        step = tr.steps_by_id(run)[here.step]
        st.markdown(explain_cell(step, here.g, here.i, here.c, rows, tok))
        if link.op == "position":
            st.info(t("forward.trace_position", i=here.i), icon=":material/flag:")
        elif not link.sources:  # a blocked score: the mask, not a computation
            st.info(t("forward.trace_blocked"), icon=":material/block:")
        else:
            _sources(run, trail, link, tok, key)
    with st.container(horizontal=True):
        if len(trail) > 1:
            st.button(t("forward.trace_undo"), key=state.private(TRAIL, "undo"),
                      icon=":material/undo:", on_click=_set_trail, args=(key, trail[:-1]))
        st.button(t("forward.trace_clear"), key=state.private(TRAIL, "clear"),
                  icon=":material/close:", on_click=_set_trail, args=(key, ()))


def _sources(run: fp.ForwardRun, trail, link: tr.Link, tok, key: str) -> None:
    """The cells this one was computed from, the largest terms first."""
    st.markdown(t("forward.trace_sources", n=len(link.sources)))

    def label(source: tr.Source, plain: bool = False) -> str:
        if source.address.step == tr.IDS:  # the crumb names the ID
            return f"← {crumb(run, source.address, tok)}"
        value = num(source.value, 4 if source.address.step == "probs" else 3)
        part = "" if source.part is None else " · " + t("forward.trace_part",
                                                         part=num(source.part))
        return f"← {crumb(run, source.address, tok, plain)} = {value}{part}"

    with st.container(horizontal=True):
        for n, source in enumerate(link.sources[:MAX_BUTTONS]):
            st.button(label(source), key=state.private(TRAIL, f"src{n}"),
                      on_click=_set_trail, args=(key, (*trail, source.address)))
    rest = link.sources[MAX_BUTTONS:]
    if rest:
        with st.container(horizontal=True, vertical_alignment="bottom"):
            labels = [label(source, plain=True) for source in rest]  # this run's language
            pick = st.selectbox(t("forward.trace_more", n=len(rest)), range(len(rest)),
                                format_func=labels.__getitem__,
                                key=state.private(TRAIL, "more" + link.address.text()))
            st.button(t("forward.trace_follow"), key=state.private(TRAIL, "follow"),
                      on_click=_set_trail, args=(key, (*trail, rest[pick].address)))
