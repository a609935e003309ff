"""The hand example of docs/curriculum.md (softmax, stage 3, and scaling, stage 4): q = [1, 0];
k_A = [1, 0], k_B = [0, 1]; v_A = [2, 0], v_B = [0, 4]. The two stages share these inputs on purpose
(URL keys hand.q, hand.kA, ...), so an edit made on one stage is still there on the
other."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st
import torch

from ui.fmt import dot_terms, latex_vec, num, vec
from ui.formula import formula
from ui.inputs import matrix_input
from ui.reveal import Stepper

DEFAULTS = {"q": [1, 0], "kA": [1, 0], "kB": [0, 1], "vA": [2, 0], "vB": [0, 4]}
SYMBOLS = {"q": "q", "kA": "k_A", "kB": "k_B", "vA": "v_A", "vB": "v_B"}


class HandExample(NamedTuple):
    q: torch.Tensor  # [2]
    k_a: torch.Tensor  # [2]
    k_b: torch.Tensor  # [2]
    v_a: torch.Tensor | None  # [2], when the values are asked for
    v_b: torch.Tensor | None


def _vector(name: str) -> torch.Tensor:
    symbol = SYMBOLS[name]
    labels = [f"{symbol}[{i}]" for i in range(2)]  # q[0], q[1], counted from 0 as in PyTorch
    return matrix_input(f"hand.{name}", symbol, DEFAULTS[name], sliders=True,
                        slider_labels=labels)


def hand_example_inputs(with_values: bool) -> HandExample:
    """q, the two keys and (optionally) the two values, each with named sliders."""
    cols = st.columns(3)
    with cols[0]:
        q = _vector("q")
    # With values: keys share the middle column, values take the last one.
    with cols[1]:
        k_a = _vector("kA")
    with cols[1] if with_values else cols[2]:
        k_b = _vector("kB")
    if not with_values:
        return HandExample(q, k_a, k_b, None, None)
    with cols[2]:
        v_a, v_b = _vector("vA"), _vector("vB")
    return HandExample(q, k_a, k_b, v_a, v_b)


def set_hand_example(**texts: str) -> None:
    """A preset button's callback: hand.kB = "2, 0" and so on."""
    for name, text in texts.items():
        st.session_state[f"hand.{name}"] = text


def score_steps(steps: Stepper, q: torch.Tensor, k_a: torch.Tensor, k_b: torch.Tensor,
                scores: torch.Tensor, scaled: torch.Tensor) -> None:
    """Steps 1 and 2 of the hand example, the same on the softmax and scaling stages: the two dot
    products, then their division by √d_k (one line each, so that a phone fits them)."""
    d_k = q.numel()
    if steps.step(1, f"`{vec(scores)}`"):
        formula(r"s_j = q \cdot k_j",
                rf"\begin{{gathered}}s_A = {dot_terms(q, k_a)} = {num(scores[0])} \\ "
                rf"s_B = {dot_terms(q, k_b)} = {num(scores[1])}\end{{gathered}}")
    if steps.step(2, f"`{vec(scaled)}`"):
        formula(r"\tilde s_j = \frac{s_j}{\sqrt{d_k}}",
                rf"\frac{{{latex_vec(scores)}}}{{\sqrt{{{d_k}}}}} = "
                rf"\frac{{{latex_vec(scores)}}}{{{num(d_k ** 0.5)}}} = {latex_vec(scaled)}")
