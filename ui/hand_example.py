"""The hand example of CURRICULUM.md sections 3 and 5: q = [1, 0]; k_A = [1, 0],
k_B = [0, 1]; v_A = [2, 0], v_B = [0, 4]. Stages 3 and 5 draw the same inputs with the
same URL keys, so an edit made on one stage is still there on the other."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st
import torch

from ui.inputs import matrix_input


class HandExample(NamedTuple):
    q: torch.Tensor  # [2]
    k_a: torch.Tensor  # [2]
    k_b: torch.Tensor  # [2]
    v_a: torch.Tensor | None  # [2], when the values are asked for
    v_b: torch.Tensor | None


def hand_example_inputs(with_values: bool) -> HandExample:
    """q, the two keys and (optionally) the two values, each with sliders."""
    cols = st.columns(3)
    with cols[0]:
        q = matrix_input("q", "q", [1, 0], sliders=True)
    # With values: keys share the middle column, values take the last one.
    with cols[1]:
        k_a = matrix_input("kA", "k_A", [1, 0], sliders=True)
    with cols[1] if with_values else cols[2]:
        k_b = matrix_input("kB", "k_B", [0, 1], sliders=True)
    if not with_values:
        return HandExample(q, k_a, k_b, None, None)
    with cols[2]:
        v_a = matrix_input("vA", "v_A", [2, 0], sliders=True)
        v_b = matrix_input("vB", "v_B", [0, 4], sliders=True)
    return HandExample(q, k_a, k_b, v_a, v_b)
