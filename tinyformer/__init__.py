"""tinyformer: the maths of a decoder-only Transformer, one traced step at a time.

PyTorch only (no Streamlit, Plotly or UI code), usable from a notebook. Every
function that teaches returns a small frozen dataclass holding its intermediates,
so a page can show each step without recomputing it.

Modules (the core: general Transformer maths):
- attention: scaled dot-product and multi-head attention (with GQA / MQA)
- bpe: a byte-level BPE tokenizer (Hugging Face ``tokenizers``), merge by merge
- embedding: one-hot vectors, dense embeddings, cosine similarity, whitening
- errors: the keyed errors every module raises
- ffn: position-wise feed-forward networks (classic and SwiGLU)
- masks: boolean attention masks (causal and others) and their additive form
- model: TinyDecoder, a small decoder-only Transformer, traced, with a K/V cache
- moe: mixture of experts: routing, combining, load, parameter counts
- ngram: n-gram language models from counts
- norm: LayerNorm and RMSNorm
- positional: sinusoidal tables and rotary embeddings (RoPE)
- residual: residual connections, Post-Norm against Pre-Norm
- sampling: temperature, top-k, top-p and seeded sampling
- softmax: softmax written out step by step
- tokenizer: a character vocabulary, and token IDs to embedding rows
- training: next-token training pairs, losses, learning-rate schedule

tinyformer.lessons holds the models behind the classroom's pages (the corpus, the
shipped trained model, the page-sized worked examples), built on these.

Bad arguments raise ``tinyformer.errors.TinyformerError`` (a ValueError) with a stable
``key`` and ``values`` for translation.
"""

from tinyformer import (
    attention,
    errors,
    ffn,
    masks,
    model,
    moe,
    ngram,
    norm,
    positional,
    sampling,
)
from tinyformer.errors import ParameterError, ShapeError, TinyformerError

__all__ = [
    "ParameterError",
    "ShapeError",
    "TinyformerError",
    "attention",
    "errors",
    "ffn",
    "masks",
    "model",
    "moe",
    "ngram",
    "norm",
    "positional",
    "sampling",
]
