"""The running example's hand model: one chain of 2-dim numbers that stages 1-10 read.

The last four words of the running example, 运费 谁 承担 ？, go through one small
decoder block whose every weight is typed by hand (docs/curriculum.md, "The chain"):

    token IDs -> embedding rows X -> Q, K, V -> scores -> scaled -> causal mask
    -> softmax weights -> attention output A -> residual X + A -> RMSNorm H
    -> FFN(H) -> residual Y = H + FFN(H) -> logits of the last position over
    商家 / 买家 / 未知 -> probabilities

The order is the original Transformer's: normalise after the residual ("add & norm").
The norm is RMSNorm (divide by the root mean square, as Llama does), not LayerNorm: with
only two numbers per row, LayerNorm's output is always +-[1, -1] (subtract the mean of
two numbers and divide by their spread), so every edit before it would vanish; stage 9.1
shows both. After the FFN's residual there is no second norm, so the logits read Y.
There are no position rows: only the causal mask makes the positions differ here (each
reads a different prefix; the order inside a prefix stays invisible). Stage 7.1 adds them.
The weights are chosen for readable numbers, not trained: the model's "answer" is
arithmetic on hand-picked numbers, not understanding.

Every step uses tinyformer's own functions, so the chain is checked against PyTorch
through them (tests/unit/test_chain.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyformer.attention import AttentionTrace, scaled_dot_product_attention
from tinyformer.ffn import FeedForwardTrace, feed_forward
from tinyformer.lessons.example import PAYERS, RUNNING_WORDS, TAIL4
from tinyformer.masks import causal_mask
from tinyformer.norm import RMSNormTrace, rms_norm

# The hand vocabulary: the running example's words, in order, one ID each (0-8).
VOCAB: tuple[str, ...] = tuple(dict.fromkeys(RUNNING_WORDS))
WORDS: tuple[str, ...] = TAIL4  # the chain's four positions
IDS: tuple[int, ...] = tuple(VOCAB.index(w) for w in WORDS)  # (5, 6, 7, 8)
CANDIDATES: tuple[str, ...] = PAYERS  # the logits' three answers
WIDTH, FFN_WIDTH = 2, 3
EPS = 1e-6  # RMSNorm's epsilon (tinyformer.norm.rms_norm's default)

# The embedding table's rows for the words outside the chain: shown on stage 1.1, fixed.
OTHER_ROWS: dict[str, list[float]] = {
    "商品": [0.5, 1.0], "有": [0.0, -1.0], "质量": [1.0, 0.5], "问题": [-1.0, 0.5],
    "，": [0.0, 0.0],
}

# The editable values and their defaults (the URL keys are chain.<name>, ui/chain.py).
DEFAULTS: dict[str, list[list[float]]] = {
    "X": [[1, 0], [0, 1], [1, 1], [1, -1]],  # embedding rows of 运费, 谁, 承担, ？
    "Wq": [[1, 0], [1, 1]],
    "Wk": [[0, 1], [1, 1]],
    "Wv": [[1, 0], [0, 2]],
    "W1": [[1, -1, 0.5], [0, 1, 1]],
    "W2": [[1, 0], [0, 1], [-1, 1]],
    "U": [[1, 0], [0, 1], [0.5, 0.5]],  # one output row per candidate: 商家, 买家, 未知
}
SHAPES: dict[str, tuple[int, int]] = {
    "X": (len(WORDS), WIDTH), "Wq": (WIDTH, WIDTH), "Wk": (WIDTH, WIDTH),
    "Wv": (WIDTH, WIDTH), "W1": (WIDTH, FFN_WIDTH), "W2": (FFN_WIDTH, WIDTH),
    "U": (len(CANDIDATES), WIDTH),
}


@dataclass(frozen=True)
class ChainParams:
    """The hand model's values (float64)."""

    X: torch.Tensor  # [N, d] embedding rows of the chain's words
    Wq: torch.Tensor  # [d, d]
    Wk: torch.Tensor  # [d, d]
    Wv: torch.Tensor  # [d, d]
    W1: torch.Tensor  # [d, F]
    W2: torch.Tensor  # [F, d]
    U: torch.Tensor  # [C, d] output rows of the candidates

    @classmethod
    def defaults(cls) -> ChainParams:
        return cls(**{name: torch.tensor(v, dtype=torch.float64)
                      for name, v in DEFAULTS.items()})


@dataclass(frozen=True)
class ChainRun:
    """Every intermediate of the chain, in the order the stages teach them."""

    params: ChainParams
    ids: torch.Tensor  # [N] token IDs
    table: torch.Tensor  # [V, d] the whole embedding table (X's rows in it)
    X: torch.Tensor  # [N, d] = table[ids]
    Q: torch.Tensor  # [N, d] X W_q
    K: torch.Tensor  # [N, d] X W_k
    V: torch.Tensor  # [N, d] X W_v
    scores: torch.Tensor  # [N, N] Q K^T
    scaled: torch.Tensor  # [N, N] scores / sqrt(d)
    masked: torch.Tensor  # [N, N] scaled, later positions -inf
    weights: torch.Tensor  # [N, N] softmax rows
    A: torch.Tensor  # [N, d] weights V: attention's output
    R: torch.Tensor  # [N, d] X + A: the first residual
    norm: RMSNormTrace  # RMSNorm(R), weight 1
    H: torch.Tensor  # [N, d] norm.output
    ffn: FeedForwardTrace  # ReLU(H W1) W2, no biases
    Y: torch.Tensor  # [N, d] H + FFN(H): the second residual
    logits: torch.Tensor  # [C] Y[-1] U^T: the last position's scores for the candidates
    probs: torch.Tensor  # [C] softmax(logits)


def embedding_table(X: torch.Tensor) -> torch.Tensor:
    """The hand vocabulary's table, [V, d]: the fixed rows, and X's rows at the chain's IDs."""
    rows = [OTHER_ROWS.get(word) for word in VOCAB]
    table = torch.tensor([r if r is not None else [0.0] * WIDTH for r in rows],
                         dtype=torch.float64)  # [V, d]
    table[list(IDS)] = X.to(torch.float64)
    return table


def run_chain(params: ChainParams | None = None) -> ChainRun:
    """The hand model's forward pass on 运费 谁 承担 ？."""
    p = params or ChainParams.defaults()
    ids = torch.tensor(IDS)  # [N]
    table = embedding_table(p.X)  # [V, d]
    X = table[ids]  # [N, d]
    Q, K, V = X @ p.Wq, X @ p.Wk, X @ p.Wv  # [N, d] each
    attn = scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(IDS)),
                                        scale=1 / math.sqrt(WIDTH))
    R = X + attn.output  # [N, d]
    norm = rms_norm(R, eps=EPS)
    H = norm.output  # [N, d]
    ffn = feed_forward(H, p.W1, None, p.W2, None, activation="relu")
    Y = H + ffn.output  # [N, d]
    logits = Y[-1] @ p.U.T  # [C]
    return ChainRun(p, ids, table, X, Q, K, V, attn.scores, attn.scaled, attn.masked,
                    attn.weights, attn.output, R, norm, H, ffn, Y, logits,
                    torch.softmax(logits, dim=-1))


def unmasked_attention(run: ChainRun) -> AttentionTrace:
    """The chain's Q, K, V through attention with no mask: stage 3's view, taught before
    stage 5.1 adds the causal mask. Its last row is the chain's own (the last position may
    read every position, so the mask blocks nothing there)."""
    return scaled_dot_product_attention(run.Q, run.K, run.V, scale=1 / math.sqrt(WIDTH))


def unmasked_weights(run: ChainRun) -> torch.Tensor:
    """softmax(S / sqrt(d)) row by row, no mask: [N, N]."""
    return unmasked_attention(run).weights
