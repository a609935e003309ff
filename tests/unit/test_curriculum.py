"""Every pure-maths worked number of docs/curriculum.md, computed by tinyformer.

One table: (name, computation, expected, tolerance). Values are compared at the
precision the app displays (3 decimals); tolerance applies after that rounding
and is 0 for every row: the rounded figure must be exactly the one in the text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

from tinyformer.attention import multi_head_attention, scaled_dot_product_attention
from tinyformer.errors import TinyformerError
from tinyformer.ffn import feed_forward, swiglu
from tinyformer.lessons.kv_cache import gqa_saving
from tinyformer.masks import causal_mask, combine, padding_mask
from tinyformer.model import TinyDecoder
from tinyformer.moe import param_counts
from tinyformer.ngram import NGramModel
from tinyformer.norm import layer_norm, rms_norm
from tinyformer.positional import rotate_2d
from tinyformer.sampling import next_token_probs

# Section 0: after 动, 动漫 6 times and 动物 4; after 看动, 看动漫 4 and 看动物 2.
CORPUS = ["看动漫"] * 4 + ["看动物"] * 2 + ["动漫"] * 2 + ["动物"] * 2
BIGRAM = NGramModel(2).fit(CORPUS)
TRIGRAM = NGramModel(3).fit(CORPUS)

# Sections 3 and 5: one query, two keys, two values.
Q = torch.tensor([[1.0, 0.0]])
K = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # k_A, k_B
K_EDITED = torch.tensor([[1.0, 0.0], [2.0, 0.0]])  # k_B edited to [2, 0]
V = torch.tensor([[2.0, 0.0], [0.0, 4.0]])  # v_A, v_B

# Section 8: FFN hand example, biases 0.
X_FFN = torch.tensor([1.0, -1.0])
W1 = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]])
W2 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])

IDS = [3, 8, 12, 5, 17, 42, 23, 6]  # section 11
SIXTY = math.radians(60)


def attend(k: torch.Tensor) -> Any:
    return scaled_dot_product_attention(Q, k, V)


def silu_inverse(y: float) -> float:
    """Gate input whose SiLU is y (Newton's method), so the gate is exactly y."""
    g = 1.0
    for _ in range(50):
        s = 1 / (1 + math.exp(-g))
        g -= (g * s - y) / (s + g * s * (1 - s))
    return g


def gate_example() -> torch.Tensor:
    """SwiGLU with gate 0.2 and value 3 (W_down = 1): gated value = 3 x 0.2."""
    x = torch.tensor([[1.0]], dtype=torch.float64)
    w_gate = torch.tensor([[silu_inverse(0.2)]], dtype=torch.float64)
    w_up = torch.tensor([[3.0]], dtype=torch.float64)
    trace = swiglu(x, w_gate, w_up, torch.eye(1, dtype=torch.float64))
    return torch.cat([trace.gate[0], trace.up[0], trace.output[0]])


def left_padded_weights() -> torch.Tensor:
    """4 positions, the first 2 left padding, causal + padding mask, equal scores."""
    valid = torch.tensor([[False, False, True, True]])
    mask = combine(causal_mask(4), padding_mask(valid))
    x = torch.ones(1, 4, 2)
    return scaled_dot_product_attention(x, x, x, mask=mask).weights[0]


def mha_shapes(d: int, heads: int, kv_heads: int, n: int = 4) -> list[list[int]]:
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(0))
    hd = d // heads
    w = torch.ones(d, d)
    t = multi_head_attention(
        x, w, torch.ones(d, kv_heads * hd), torch.ones(d, kv_heads * hd), w, heads, kv_heads
    )
    return [[t.head_dim], list(t.q.shape), list(t.weights.shape), list(t.concat.shape)]


def gqa_group_and_cache() -> list[float]:
    t = multi_head_attention(
        torch.ones(1, 2, 64),
        torch.ones(64, 64),
        torch.ones(64, 16),
        torch.ones(64, 16),
        torch.ones(64, 64),
        n_heads=32,
        n_kv_heads=8,
    )
    group = t.kv_group_of_head.count(0)  # query heads reading K/V head 0
    saving = gqa_saving(32, 32, 8, 128, 4096, 2)  # the page's cache calculator
    return [group, t.k.numel() / t.k_expanded.numel(), saving.group_size, float(saving.ratio)]


def rope_dot(angle_q: float, angle_k: float) -> float:
    q = rotate_2d(torch.tensor([1.0, 0.0]), angle_q)
    k = rotate_2d(torch.tensor([1.0, 0.0]), angle_k)
    return float(q @ k)


def decoder(**kwargs: Any) -> Any:
    return TinyDecoder.seeded(7, **kwargs)(torch.tensor([IDS]))


def error_key(build: Callable[[], object]) -> str:
    try:
        build()
    except TinyformerError as err:
        assert isinstance(err, ValueError)
        return err.key
    return "no error"


ROWS: list[tuple[str, Callable[[], Any], Any, float]] = [
    # 0. n-grams, one-hot
    ("bigram P(漫|动)", lambda: BIGRAM.next_token_probs("动")["漫"], 0.6, 0),
    ("bigram P(物|动)", lambda: BIGRAM.next_token_probs("动")["物"], 0.4, 0),
    ("trigram P(漫|看动)", lambda: TRIGRAM.next_token_probs("看动")["漫"], 0.667, 0),
    ("trigram P(物|看动)", lambda: TRIGRAM.next_token_probs("看动")["物"], 0.333, 0),
    ("unseen combination", lambda: TRIGRAM.next_token_probs("吃梨"), {}, 0),
    ("table size V^n", lambda: NGramModel.table_size(100_000, 5), 10**25, 0),
    ("one-hot dot product", lambda: float(torch.eye(5)[1] @ torch.eye(5)[3]), 0.0, 0),
    # 3. scores and scaling
    ("scores q·k", lambda: attend(K).scores[0], [1.0, 0.0], 0),
    ("scaled by sqrt(2)", lambda: attend(K).scaled[0], [0.707, 0.0], 0),
    # 5. softmax and weighted sum
    ("exp(0.707)", lambda: attend(K).scaled[0].exp(), [2.028, 1.0], 0),
    ("weights", lambda: attend(K).weights[0], [0.670, 0.330], 0),
    ("output blend", lambda: attend(K).output[0], [1.340, 1.321], 0),
    ("k_B=[2,0] scores", lambda: attend(K_EDITED).scores[0], [1.0, 2.0], 0),
    ("k_B=[2,0] scaled", lambda: attend(K_EDITED).scaled[0], [0.707, 1.414], 0),
    ("k_B=[2,0] weights", lambda: attend(K_EDITED).weights[0], [0.330, 0.670], 0),
    ("k_B=[2,0] output", lambda: attend(K_EDITED).output[0], [0.660, 2.679], 0),
    # 4. masks
    (
        "causal 4x4",
        lambda: causal_mask(4).int(),
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
        0,
    ),
    (
        "left padding 2",
        left_padded_weights,
        [[0.0] * 4, [0.0] * 4, [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.5, 0.5]],
        0,
    ),
    # 6. multi-head, GQA
    ("d=8, 2 heads", lambda: mha_shapes(8, 2, 2), [[4], [1, 2, 4, 4], [1, 2, 4, 4], [1, 4, 8]], 0),
    ("GQA 32/8: group, K/V share, cache", gqa_group_and_cache, [4, 0.25, 4, 0.25], 0),
    ("MQA: one K/V head for all", lambda: mha_shapes(8, 4, 1)[0], [2], 0),
    # 7. RoPE
    ("RoPE same angle", lambda: rope_dot(0.3, 0.3), 1.0, 0),
    ("RoPE 60 degrees apart", lambda: rope_dot(0.3, 0.3 + SIXTY), 0.5, 0),
    # 8. FFN, SwiGLU, MoE
    ("FFN x W1", lambda: feed_forward(X_FFN, W1, None, W2, None).hidden_pre, [1.0, -1.0, 2.0], 0),
    ("FFN ReLU", lambda: feed_forward(X_FFN, W1, None, W2, None).hidden, [1.0, 0.0, 2.0], 0),
    ("FFN output", lambda: feed_forward(X_FFN, W1, None, W2, None).output, [1.0, 2.0], 0),
    ("no activation: (x W1) W2", lambda: (X_FFN @ W1) @ W2, [1.0, 1.0], 0),
    ("collapsed W1 W2", lambda: W1 @ W2, [[1.0, 1.0], [0.0, 0.0]], 0),
    ("collapsed x (W1 W2)", lambda: X_FFN @ (W1 @ W2), [1.0, 1.0], 0),
    ("gate 0.2, value 3 -> 0.6", gate_example, [0.2, 3.0, 0.6], 0),
    (
        "MoE total / active",
        lambda: list(param_counts(8, 10_000_000, 2)),
        [80_000_000, 20_000_000],
        0,
    ),
    # 9. residual and norms
    ("residual", lambda: torch.tensor([2.0, 1.0]) + torch.tensor([0.1, -0.2]), [2.1, 0.8], 0),
    ("LayerNorm mean", lambda: layer_norm(torch.tensor([1.0, 3.0])).mean, [2.0], 0),
    ("LayerNorm [1,3]", lambda: layer_norm(torch.tensor([1.0, 3.0])).output, [-1.0, 1.0], 0),
    ("RMS of [1,3]", lambda: rms_norm(torch.tensor([1.0, 3.0])).rms, [2.236], 0),
    ("RMSNorm [1,3]", lambda: rms_norm(torch.tensor([1.0, 3.0])).output, [0.447, 1.342], 0),
    # 10. logits
    (
        "softmax [2,1,0]",
        lambda: next_token_probs(torch.tensor([2.0, 1.0, 0.0])).probs,
        [0.665, 0.245, 0.090],
        0,
    ),
    # 11. TinyDecoder, seed 7: the article's program
    ("parameters", lambda: sum(p.numel() for p in TinyDecoder.seeded(7).parameters()), 1784, 0),
    (
        "top-3, printed to 4 decimals as in the article",
        lambda: [(i, f"{p:.4f}") for i, p in TinyDecoder.seeded(7).trace(IDS).top(3)],
        [[40, "0.0538"], [20, "0.0472"], [35, "0.0444"]],
        0,
    ),
    ("blocks", lambda: len(TinyDecoder.seeded(7).blocks), 1, 0),
    ("logits shape", lambda: list(decoder()[0].shape), [1, 8, 50], 0),
    ("attention shape", lambda: list(decoder()[1].shape), [1, 2, 8, 8], 0),
    ("first row, every head", lambda: decoder()[1][0, :, 0], [[1.0] + [0.0] * 7] * 2, 0),
    ("last row reads all 8", lambda: (decoder()[1][0, :, -1].round(decimals=3) > 0).all(), True, 0),
    ("4 heads: head width", lambda: TinyDecoder.seeded(7, heads=4).head_dim, 2, 0),
    ("4 heads: logits shape", lambda: list(decoder(heads=4)[0].shape), [1, 8, 50], 0),
    ("3 heads: error", lambda: error_key(lambda: TinyDecoder(heads=3)), "width_not_divisible", 0),
]


def shown(value: Any) -> Any:
    """What the app displays: tensors as lists, floats rounded to 3 decimals."""
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


def assert_displayed(actual: Any, expected: Any, tol: float) -> None:
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected, strict=True):
            assert_displayed(a, e, tol)
    elif isinstance(expected, float):
        assert isinstance(actual, float | int) and abs(actual - expected) <= tol + 1e-9, (
            actual,
            expected,
        )
    else:
        assert actual == expected and type(actual) is type(expected), (actual, expected)


@pytest.mark.parametrize(("name", "compute", "expected", "tol"), ROWS, ids=[r[0] for r in ROWS])
def test_worked_number(name: str, compute: Callable[[], Any], expected: Any, tol: float) -> None:
    assert_displayed(shown(compute()), expected, tol)
