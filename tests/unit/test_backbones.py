"""tinyformer.lessons.backbones against PyTorch: cross-attention with a rectangular Q/K
(F.scaled_dot_product_attention, nn.MultiheadAttention), the Post-Norm encoder and
decoder layers (nn.TransformerEncoderLayer / nn.TransformerDecoderLayer with the same
weights), the three mask patterns, and the seeded translation example."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.backbones import (
    MAX_TOKENS,
    START,
    AttentionWeights,
    FFNWeights,
    backbone_masks,
    cross_attention,
    decoder_layer,
    encoder_layer,
    shift_right,
    split_words,
    translation_example,
)
from tinyformer.masks import causal_mask
from tinyformer.positional import sinusoidal

SOURCE = ("who", "pays", "the", "shipping", "?")
TARGET = ("运费", "谁", "承担")


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _attn(d: int, seed: int) -> AttentionWeights:
    return AttentionWeights(*(_rand(d, d, seed=seed + i) / d**0.5 for i in range(4)))


def _ffn(d: int, seed: int) -> FFNWeights:
    return FFNWeights(_rand(d, 4 * d, seed=seed), _rand(4 * d, seed=seed + 1),
                      _rand(4 * d, d, seed=seed + 2), _rand(d, seed=seed + 3))


def _load_mha(mha: nn.MultiheadAttention, w: AttentionWeights) -> None:
    """Our x @ W weights into PyTorch's x @ W^T layout; PyTorch's biases set to 0."""
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w.w_q.T, w.w_k.T, w.w_v.T]))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(w.w_o.T)
        mha.out_proj.bias.zero_()


def _load_ffn(layer, ffn: FFNWeights) -> None:
    with torch.no_grad():
        layer.linear1.weight.copy_(ffn.w1.T)
        layer.linear1.bias.copy_(ffn.b1)
        layer.linear2.weight.copy_(ffn.w2.T)
        layer.linear2.bias.copy_(ffn.b2)


@pytest.mark.parametrize(("n_target", "n_source", "d"), [(3, 5, 8), (1, 7, 4), (6, 2, 2)])
def test_cross_attention_matches_pytorch_with_rectangular_q_and_k(n_target, n_source, d):
    h_dec, h_enc = _rand(n_target, d, seed=1), _rand(n_source, d, seed=2)
    w_q, w_k, w_v = (_rand(d, d, seed=s) for s in (3, 4, 5))
    trace = cross_attention(h_dec, h_enc, w_q, w_k, w_v)
    q, k, v = h_dec @ w_q, h_enc @ w_k, h_enc @ w_v
    assert trace.attention.weights.shape == (n_target, n_source)  # rows target, columns source
    expected = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]  # [Nt, d]
    torch.testing.assert_close(trace.output, expected)
    torch.testing.assert_close(trace.attention.weights, torch.softmax(q @ k.T / d**0.5, -1))
    torch.testing.assert_close(trace.attention.weights.sum(-1),
                               torch.ones(n_target, dtype=torch.float64))
    torch.testing.assert_close(trace.k, k)  # K and V come from the encoder rows
    torch.testing.assert_close(trace.q, q)  # Q from the decoder rows


def test_cross_attention_with_a_mask_and_an_output_projection_matches_pytorch():
    d, n_target, n_source = 6, 4, 5
    h_dec, h_enc = _rand(1, n_target, d, seed=7), _rand(1, n_source, d, seed=8)
    w = _attn(d, 10)
    mha = nn.MultiheadAttention(d, 1, batch_first=True, dtype=torch.float64)
    _load_mha(mha, w)
    out, weights = mha(h_dec, h_enc, h_enc, need_weights=True)
    trace = cross_attention(h_dec, h_enc, *w)
    torch.testing.assert_close(trace.output, out)
    torch.testing.assert_close(trace.attention.weights, weights)
    allowed = torch.rand(n_target, n_source, generator=torch.Generator().manual_seed(0)) > 0.4
    allowed[:, 0] = True  # every row keeps a key
    masked = cross_attention(h_dec, h_enc, w.w_q, w.w_k, w.w_v, mask=allowed)
    q, k, v = h_dec @ w.w_q, h_enc @ w.w_k, h_enc @ w.w_v
    torch.testing.assert_close(masked.output,
                               F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
    assert bool((masked.attention.weights[0][~allowed] == 0).all())


def test_cross_attention_refuses_mismatched_widths():
    with pytest.raises(ShapeError) as err:
        cross_attention(_rand(3, 4), _rand(5, 6), *(_rand(4, 4) for _ in range(3)))
    assert err.value.key == "cross_width"
    with pytest.raises(ShapeError) as err:
        cross_attention(_rand(3, 4), _rand(5, 4), _rand(4, 4), _rand(3, 4), _rand(4, 4))
    assert err.value.key == "cross_weight_shape"
    with pytest.raises(ShapeError) as err:
        cross_attention(_rand(3, 4), _rand(5, 4), _rand(4, 4), _rand(4, 2), _rand(4, 4))
    assert err.value.key == "cross_qk_width"
    with pytest.raises(ShapeError) as err:
        cross_attention(_rand(4), _rand(5, 4), *(_rand(4, 4) for _ in range(3)))
    assert err.value.key == "cross_not_2d"


def test_mask_patterns_of_the_three_backbones():
    masks = backbone_masks(5, 3)
    assert masks.encoder_self.shape == (5, 5) and bool(masks.encoder_self.all())
    assert torch.equal(masks.decoder_self, causal_mask(3))
    assert masks.cross.shape == (3, 5) and bool(masks.cross.all())
    assert int(masks.decoder_self.sum()) == 6  # 1 + 2 + 3 cells may be read
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ShapeError) as err:
            backbone_masks(bad, 3)
        assert err.value.key == "backbones_mask_size"


def test_encoder_layer_matches_pytorch_post_norm_layer():
    d, n = 8, 5
    attn, ffn, x = _attn(d, 20), _ffn(d, 30), _rand(n, d, seed=40)
    ours = encoder_layer(x, attn, ffn)
    layer = nn.TransformerEncoderLayer(d, 1, 4 * d, dropout=0.0, batch_first=True,
                                       norm_first=False, dtype=torch.float64).eval()
    _load_mha(layer.self_attn, attn)
    _load_ffn(layer, ffn)
    torch.testing.assert_close(ours.output, layer(x[None])[0])
    assert bool((ours.self_attention.weights > 0).all())  # nothing blocked


def test_decoder_layer_matches_pytorch_post_norm_layer():
    d, n_target, n_source = 8, 3, 5
    self_w, cross_w, ffn = _attn(d, 50), _attn(d, 60), _ffn(d, 70)
    y, h_enc = _rand(n_target, d, seed=80), _rand(n_source, d, seed=81)
    ours = decoder_layer(y, h_enc, self_w, cross_w, ffn)
    layer = nn.TransformerDecoderLayer(d, 1, 4 * d, dropout=0.0, batch_first=True,
                                       norm_first=False, dtype=torch.float64).eval()
    _load_mha(layer.self_attn, self_w)
    _load_mha(layer.multihead_attn, cross_w)
    _load_ffn(layer, ffn)
    future = nn.Transformer.generate_square_subsequent_mask(n_target, dtype=torch.float64)
    expected = layer(y[None], h_enc[None], tgt_mask=future)[0]
    torch.testing.assert_close(ours.output, expected)
    assert ours.cross.attention.weights.shape == (n_target, n_source)
    assert bool((ours.self_attention.weights[0, 0][~causal_mask(n_target)] == 0).all())


def test_translation_example_shapes_and_reproducibility():
    ex = translation_example(SOURCE, TARGET, 8, 0)
    assert ex.h_enc.shape == (5, 8)  # [N_source, d]
    assert ex.cross.attention.weights.shape == (3, 5)  # [N_target, N_source]
    assert ex.cross.q.shape == (3, 8) and ex.cross.k.shape == (5, 8)
    assert ex.decoder.output.shape == (3, 8)
    again = translation_example(list(SOURCE), list(TARGET), 8, 0)
    assert torch.equal(again.cross.attention.weights, ex.cross.attention.weights)
    other = translation_example(SOURCE, TARGET, 8, 1)
    assert not torch.equal(other.cross.attention.weights, ex.cross.attention.weights)
    torch.testing.assert_close(ex.cross.h_enc, ex.h_enc)  # K, V read the encoder output


def test_a_word_keeps_its_embedding_row_in_another_sentence():
    a = translation_example(SOURCE, TARGET, 6, 3)  # the decoder reads [BOS] 运费 谁
    b = translation_example(("shipping", "who"), ("运费", "付"), 6, 3)  # reads [BOS] 运费
    pe_a, pe_b = sinusoidal(5, 6, dtype=torch.float64), sinusoidal(2, 6, dtype=torch.float64)
    torch.testing.assert_close(a.x_source[3] - pe_a[3], b.x_source[0] - pe_b[0])
    torch.testing.assert_close(a.x_target[:2], b.x_target)  # [BOS] and 运费, same positions


def test_the_decoder_reads_the_target_shifted_right_behind_a_start_token():
    assert shift_right(TARGET) == (START, "运费", "谁")  # teacher forcing
    assert shift_right(("运费",)) == (START,)
    ex = translation_example(SOURCE, TARGET, 8, 0)
    assert ex.target == TARGET and ex.decoder_input == (START, "运费", "谁")
    assert ex.x_target.shape == (3, 8) and ex.cross.attention.weights.shape == (3, 5)
    # The last target word is only predicted, never read: changing it changes no row.
    last_changed = translation_example(SOURCE, (*TARGET[:-1], "付"), 8, 0)
    assert torch.equal(last_changed.decoder.output, ex.decoder.output)


def test_the_encoder_reads_later_words_and_the_decoder_does_not():
    base = translation_example(SOURCE, TARGET, 8, 0)
    source_changed = translation_example((*SOURCE[:-1], "!"), TARGET, 8, 0)
    # Bidirectional: the first source row changes when only the last source word does.
    assert not torch.allclose(base.h_enc[0], source_changed.h_enc[0])
    target_changed = translation_example(SOURCE, (TARGET[0], "你", TARGET[2]), 8, 0)
    # Causal: rows 0 and 1 ([BOS], 运费) cannot see row 2, which now reads 你, not 谁.
    torch.testing.assert_close(base.decoder.output[:2], target_changed.decoder.output[:2])
    assert not torch.allclose(base.decoder.output[2], target_changed.decoder.output[2])


@pytest.mark.parametrize(("source", "target", "width", "seed", "key"), [
    ((), TARGET, 8, 0, "backbones_source_length"),
    (("a",) * (MAX_TOKENS + 1), TARGET, 8, 0, "backbones_source_length"),
    (SOURCE, (), 8, 0, "backbones_target_length"),
    (SOURCE, ("字",) * (MAX_TOKENS + 1), 8, 0, "backbones_target_length"),
    (SOURCE, TARGET, 1, 0, "backbones_width"),
    (SOURCE, TARGET, 17, 0, "backbones_width"),
    (SOURCE, TARGET, 8.0, 0, "backbones_width"),
    (SOURCE, TARGET, 8, -1, "backbones_seed"),
    (SOURCE, TARGET, 8, 2**31, "backbones_seed"),
])
def test_bad_settings_raise_keyed_errors(source, target, width, seed, key):
    with pytest.raises(ParameterError) as err:
        translation_example(source, target, width, seed)
    assert err.value.key == key


def test_split_words():
    assert split_words("  who pays  the shipping ? ") == SOURCE
    assert split_words("运费 谁 承担") == TARGET
    assert split_words("   ") == ()
