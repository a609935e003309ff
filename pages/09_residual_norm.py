"""Stage 9.1: a residual adds a sub-layer's output to its input; a norm rescales a row."""

import math

import streamlit as st
import torch

from tinyformer.lessons.chain import EPS
from tinyformer.norm import compare_norms, layer_norm
from tinyformer.residual import residual_add
from ui import chain, explain, state
from ui.charts import bars
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import decimals_for, latex_matrix, latex_vec, num, places, term, vec
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, matrix_input, number
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import matrix_table

SHIFT_ANSWERED = state.private("shift", "answered")  # read by running_example() below
EPS_CHOICES = (1e-12, 1e-8, 1e-6, 1e-5, 1e-3, 1e-2, 1e-1, 1.0)
X_DEFAULT = (1, 3, 0, 4, 2, -1)  # the first d numbers are the default x


def vector(name: str, symbol: str, default, sliders: bool = True) -> torch.Tensor:
    labels = [f"{symbol}[{i}]" for i in range(len(default))]
    return matrix_input(name, symbol, default, sliders=sliders, slider_labels=labels)


def col(values, decimals: int = 3) -> str:
    return latex_matrix([[float(v)] for v in values], decimals)


def side(layer: list, rms: list) -> None:
    """One step of both norms on one row: LayerNorm left, RMSNorm right. A part is a
    derivation (lhs, rhs, rhs, ...) written lhs = rhs = rhs down the lines, or a text."""
    for column, parts in zip(st.columns(2), (layer, rms), strict=True):
        with column:
            for part in parts:
                if isinstance(part, str):
                    st.markdown(part)
                    continue
                formula_steps(*part)


def mean_of(values, squared: bool = False) -> str:
    """\\frac{1 + 3}{2}, or \\frac{1^2 + 3^2}{2}: an average written out."""
    parts = [f"{term(v)}^2" if squared else term(v) for v in values]
    return rf"\frac{{{' + '.join(parts)}}}{{{len(parts)}}}"


@part
def residual() -> None:  # x and f(x): this section only
    section(t("residual_norm.res_title"))
    st.caption(t("residual_norm.on_its_own"))
    left, right = st.columns(2)
    with left:
        x_res = vector("x", "x", [2, 1])
        fx = vector("fx", "f(x)", [0.1, -0.2])
    with right, shown_errors():
        y = col(residual_add(x_res, fx).output)
        formula(r"y = x + f(x)", rf"{col(x_res, places(x_res))} + {col(fx, places(fx))} = {y}")
        st.markdown(t("residual_norm.res_note", d=x_res.numel()))


@part
def norms() -> None:  # d, x, epsilon, gamma and beta: the rest of the page
    section(t("residual_norm.norm_title"), folded=True)
    st.caption(t("residual_norm.on_its_own"))
    st.markdown(t("residual_norm.norm_lead"))
    left, right = st.columns([3, 2])
    with left:
        d = number("d", t("residual_norm.d"), 2, 6, 2, gesture="slider")
        x = vector(f"x{d}", "x", X_DEFAULT[:d])
    with right:
        eps = choice("eps", "ε", EPS_CHOICES, 1e-5, widget="slider",
                     format_func=lambda e: f"1e{round(math.log10(e))}")
        gamma = matrix_input(f"g{d}", t("residual_norm.gamma"), [1] * d)
        beta = matrix_input(f"b{d}", t("residual_norm.beta"), [0] * d)
    shifted = compare_norms(torch.tensor([11.0, 13.0], dtype=torch.float64), eps=eps)
    base = compare_norms(torch.tensor([1.0, 3.0], dtype=torch.float64), eps=eps)
    shift = choice_exercise("shift", t("residual_norm.ex_question"),
                            [t(f"residual_norm.ex_{k}") for k in
                             ("layer", "rms", "both", "neither")],
                            correct=0, explanation=t("residual_norm.ex_explain", layer=vec(
                                shifted.layer.output), rms=num(shifted.rms.rms), rms_out=vec(
                                shifted.rms.output), rms_before=vec(base.rms.output)))
    st.session_state[SHIFT_ANSWERED] = shift
    with shown_errors():
        cmp = compare_norms(x, gamma, beta, eps)
        ln = cmp.layer
        rn = cmp.rms
        px = places(x)
        e = f"10^{{{round(math.log10(eps))}}}"
        rms_steps = (rf"\hat x_0 = \frac{{x_0}}{{\sqrt{{{mean_of(x.tolist(), True)} + {e}}}}}"
                     rf" = \frac{{{term(x[0])}}}{{{num(rn.rms)}}} = {num(rn.normalized[0])}")
        why = choice_exercise("why_rms", t("residual_norm.why_question"),
                              [t(f"residual_norm.why_{k}") for k in ("sign", "cheap", "largest")],
                              correct=0, explanation=t("residual_norm.why_explain"))
        computed = number_exercise("rms1", t("residual_norm.ex2_question"),
                                   float(rn.normalized[0]),
                                   explain.formula(t("residual_norm.ex2_steps"), rms_steps))
        if not (why and computed):  # every step below, and the ε table, show x̂
            after_answer()
            return
        steps = Stepper("norm", [t(f"residual_norm.step_{k}") for k in
                                 ("center", "size", "divide", "scale")])
        side(["**LayerNorm**"], ["**RMSNorm**"])
        if steps.shows(1):
            side([(r"\mu", r"\tfrac{1}{d}\textstyle\sum_i x_i", rf"{mean_of(x.tolist())} = "
                   rf"{num(ln.mean)}"),
                  (r"x - \mu", rf"{col(x, px)} - {num(ln.mean)}", col(cmp.centered))],
                 [t("residual_norm.no_center", x=vec(x, px))])
        if steps.shows(2):
            side([(r"\sigma^2", r"\tfrac{1}{d}\textstyle\sum_i (x_i - \mu)^2",
                   rf"{mean_of(cmp.centered.tolist(), True)} = {num(ln.var)}"),
                  (r"\sigma", r"\sqrt{\sigma^2 + \varepsilon}",
                   rf"\sqrt{{{num(ln.var)} + {e}}} = {num(ln.std)}")],
                 [(r"\overline{x^2}", r"\tfrac{1}{d}\textstyle\sum_i x_i^2",
                   rf"{mean_of(x.tolist(), True)} = {num(cmp.mean_square)}"),
                  (r"\mathrm{RMS}", r"\sqrt{\overline{x^2} + \varepsilon}",
                   rf"\sqrt{{{num(cmp.mean_square)} + {e}}} = {num(rn.rms)}")])
        if steps.shows(3):
            side([(r"\hat x", r"\frac{x - \mu}{\sigma}",
                   rf"\frac{{{col(cmp.centered)}}}{{{num(ln.std)}}} = {col(ln.normalized)}")],
                 [(r"\hat x", r"\frac{x}{\mathrm{RMS}}",
                   rf"\frac{{{col(x, px)}}}{{{num(rn.rms)}}} = {col(rn.normalized)}")])
            if d == 2:
                st.caption(t("residual_norm.two_numbers"))
        if steps.shows(4):
            pg = places(gamma)
            pb = places(beta)
            side([("y", r"\gamma \odot \hat x + \beta", rf"{col(gamma, pg)} \odot "
                   rf"{col(ln.normalized)} + {col(beta, pb)}", col(ln.output))],
                 [("y", r"\gamma \odot \hat x", rf"{col(gamma, pg)} \odot {col(rn.normalized)}",
                   col(rn.output)), t("residual_norm.no_beta")])
            series = dict(x=x.tolist(), LayerNorm=ln.output.tolist(), RMSNorm=rn.output.tolist())
            span = 1.2 * max(abs(v) for values in series.values() for v in values) + 0.2
            bars([f"x[{i}]" for i in range(d)], series, key="compare", height=300,
                 y_title=t("residual_norm.value"), y_range=(-span, span))
        section(t("residual_norm.eps_title"))
        st.markdown(t("residual_norm.eps_lead"))
        with st.container(horizontal=True):
            for name, value in (("try_constant", "2"), ("try_zero", "0")):
                text = ", ".join([value] * d)
                st.button(t(f"residual_norm.{name}", x=text), on_click=st.session_state.__setitem__,
                          args=(f"residual_norm.x{d}", text))
        rows = [ln.normalized, cmp.layer_no_eps.normalized, rn.normalized,
                cmp.rms_no_eps.normalized]
        names = [f"{n} x̂ · {t('residual_norm.' + w)}" for n in ("LayerNorm", "RMSNorm")
                 for w in ("with_eps", "without_eps")]
        matrix_table(torch.stack(rows), [f"x̂[{i}]" for i in range(d)], names)
        for name, effect, by in (("layer", cmp.layer_eps_effect, ln.std),
                                 ("rms", cmp.rms_eps_effect, rn.rms)):
            if math.isnan(effect):  # 0/0 without epsilon
                st.warning(t(f"residual_norm.{name}_zero", eps=f"${e}$",
                             by=num(by, decimals_for(by))))
        if not math.isnan(cmp.layer_eps_effect + cmp.rms_eps_effect):
            places_ = decimals_for([cmp.layer_eps_effect, cmp.rms_eps_effect])
            st.info(
                t(
                    "residual_norm.eps_effect",
                    eps=f"${e}$",
                    layer=num(cmp.layer_eps_effect, places_),
                    rms=num(cmp.rms_eps_effect, places_),
                ),
                icon=":material/straighten:",
            )


def running_example() -> None:
    """The running example's hand model (tinyformer.lessons.chain): R = X + A,
    H = RMSNorm(R), and after stage 8.1's FFN, Y = H + FFN(H)."""
    section(t("residual_norm.chain_title"))
    st.markdown(t("residual_norm.chain_lead"))
    gloss(TAIL4)
    run = chain.run()
    words = list(TAIL4)
    last = len(words) - 1
    matrix_table(torch.cat([run.X, run.A, run.R], dim=1).tolist(),
                       ["X[0]", "X[1]", "A[0]", "A[1]", "R[0]", "R[1]"], words,
          name=t("residual_norm.chain_r_table"))
    st.markdown(t("residual_norm.chain_norm"))
    matrix_table(torch.cat([run.norm.rms, run.H], dim=1).tolist(),
                       ["RMS(R)", "H[0]", "H[1]"], words, name=t("residual_norm.chain_h_table"))
    r = run.R[last]
    e = f"10^{{{round(math.log10(EPS))}}}"
    rms = rf"\sqrt{{\overline{{R_{last}^2}} + \varepsilon}}"
    formula_steps(rf"H_{last} = \frac{{R_{last}}}{{{rms}}}",
                  rf"\frac{{{latex_vec(r)}}}{{\sqrt{{{mean_of(r.tolist(), True)} + {e}}}}}",
                  rf"\frac{{{latex_vec(r)}}}{{{num(run.norm.rms[last])}}}",
                  latex_vec(run.H[last]))
    if st.session_state.get(SHIFT_ANSWERED):  # LayerNorm of two numbers answers "shift"
        layer = layer_norm(run.R, eps=EPS).output  # [N, d]
        st.markdown(t("residual_norm.chain_why_rms"))
        matrix_table(torch.cat([layer, run.H], dim=1).tolist(),
                           ["LayerNorm(R)[0]", "LayerNorm(R)[1]", "RMSNorm(R)[0]",
                            "RMSNorm(R)[1]"], words, name=t("residual_norm.chain_ln_table"))
    else:
        after_answer()
    st.markdown(t("residual_norm.chain_y"))
    matrix_table(torch.cat([run.H, run.ffn.output, run.Y], dim=1).tolist(),
                       ["H[0]", "H[1]", "FFN(H)[0]", "FFN(H)[1]", "Y[0]", "Y[1]"], words,
          name=t("residual_norm.chain_y_table"))
    st.markdown(t("residual_norm.chain_next", y=vec(run.Y[last])))


st.caption(t("residual_norm.tokens"))
residual()
norms()
running_example()
