"""TinyDecoder against the article's program and an independent functional reference.

The reference (minGPT style) rebuilds the forward pass from the state dict alone with
torch.nn.functional; the article check rebuilds the article's modules with plain nn
layers after torch.manual_seed(7) and compares every weight.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tinyformer.model as model_module
from tinyformer.attention import MultiHeadTrace, multi_head_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import FeedForwardTrace
from tinyformer.model import BlockTrace, DecoderTrace, TinyDecoder
from tinyformer.norm import LayerNormTrace

IDS = [3, 8, 12, 5, 17, 42, 23, 6]
ARTICLE_TOP3 = [(40, 0.0538), (20, 0.0472), (35, 0.0444)]


def reference_forward(
    model: TinyDecoder, ids: torch.Tensor, causal: bool = True
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Pre-Norm decoder from the state dict alone, with PyTorch's own functions."""
    sd = model.state_dict()
    w, h = model.width, model.heads
    b, n = ids.shape
    x = F.embedding(ids, sd["token.weight"]) + sd["position.weight"][:n]
    all_weights = []
    for i in range(model.layers):
        p = f"blocks.{i}."
        a = F.layer_norm(x, (w,), sd[p + "norm1.weight"], sd[p + "norm1.bias"])
        qkv = F.linear(a, sd[p + "qkv.weight"], sd.get(p + "qkv.bias"))
        q, k, v = (t.reshape(b, n, h, w // h).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
        scores = q @ k.transpose(-1, -2) / (w // h) ** 0.5  # [B, H, N, N]
        if causal:
            scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        weights = F.softmax(scores, dim=-1)
        all_weights.append(weights)
        concat = (weights @ v).transpose(1, 2).reshape(b, n, w)
        x = x + F.linear(concat, sd[p + "proj.weight"], sd.get(p + "proj.bias"))
        f = F.layer_norm(x, (w,), sd[p + "norm2.weight"], sd[p + "norm2.bias"])
        f = F.gelu(F.linear(f, sd[p + "ffn_in.weight"], sd[p + "ffn_in.bias"]))
        x = x + F.linear(f, sd[p + "ffn_out.weight"], sd[p + "ffn_out.bias"])
    x = F.layer_norm(x, (w,), sd["final_norm.weight"], sd["final_norm.bias"])
    return F.linear(x, sd["lm_head.weight"]), all_weights


def article_modules() -> list[nn.Module]:
    """The article's layers built as plain nn modules in its order, after manual_seed(7)."""
    torch.manual_seed(7)
    return [
        nn.Embedding(50, 8),  # token
        nn.Embedding(16, 8),  # position
        nn.LayerNorm(8),
        nn.Linear(8, 24, bias=False),  # fused Q/K/V
        nn.Linear(8, 8, bias=False),  # output projection
        nn.LayerNorm(8),
        nn.Linear(8, 32),  # FFN in
        nn.Linear(32, 8),  # FFN out
        nn.LayerNorm(8),  # final norm
        nn.Linear(8, 50, bias=False),  # LM head
    ]


def test_seeded_7_is_the_articles_program() -> None:
    with torch.random.fork_rng(devices=[]):
        expected = [p for m in article_modules() for p in m.parameters()]
    model = TinyDecoder.seeded(7)
    actual = list(model.parameters())
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert torch.equal(a, e)
    assert sum(p.numel() for p in model.parameters()) == 1784


def test_articles_printed_top3() -> None:
    trace = TinyDecoder.seeded(7).trace(IDS)
    assert [(i, round(p, 4)) for i, p in trace.top(3)] == ARTICLE_TOP3
    expected_logits, _ = reference_forward(TinyDecoder.seeded(7), torch.tensor([IDS]))
    torch.testing.assert_close(trace.probs, F.softmax(expected_logits[:, -1], dim=-1))


def test_seeded_equals_manual_seed_then_construction() -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        plain = TinyDecoder()
    seeded = TinyDecoder.seeded(7)
    for (name, a), b in zip(plain.state_dict().items(), seeded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    for a, b in zip(plain(IDS), seeded(IDS), strict=True):
        assert torch.equal(a, b)


def test_article_shapes_and_attention_rows() -> None:
    logits, attention = TinyDecoder.seeded(7)(torch.tensor([IDS]))
    assert logits.shape == (1, 8, 50) and attention.shape == (1, 2, 8, 8)
    for head in range(2):
        assert attention[0, head, 0].tolist() == [1.0] + [0.0] * 7  # reads only position 0
        assert (attention[0, head, -1] > 0).all()  # the last row reads all 8
    assert (attention[0].triu(1) == 0).all()


def test_four_heads_have_width_two_and_the_same_logits_shape() -> None:
    model = TinyDecoder.seeded(7, heads=4)
    logits, attention = model(IDS)
    assert model.head_dim == 2 and model.trace(IDS).blocks[0].attention.q.shape[-1] == 2
    assert logits.shape == (1, 8, 50) and attention.shape == (1, 4, 8, 8)


def test_three_heads_with_width_eight_is_a_clear_error() -> None:
    with pytest.raises(ShapeError) as err:
        TinyDecoder(width=8, heads=3)
    assert err.value.key == "width_not_divisible"
    assert err.value.values == {"width": 8, "heads": 3}
    assert "8" in str(err.value) and "3" in str(err.value)


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("attn_bias", [False, True])
def test_matches_functional_reference(heads: int, causal: bool, attn_bias: bool) -> None:
    model = TinyDecoder.seeded(7, heads=heads, causal=causal, attn_bias=attn_bias)
    ids = torch.tensor([IDS, list(reversed(IDS))])
    logits, attention = model(ids)
    expected_logits, expected_weights = reference_forward(model, ids, causal)
    torch.testing.assert_close(logits, expected_logits)
    torch.testing.assert_close(attention, expected_weights[-1])


@pytest.mark.parametrize("init", ["pytorch", "scaled"])
def test_three_blocks_match_the_reference_block_by_block(init: str) -> None:
    model = TinyDecoder.seeded(11, vocab=30, width=12, heads=3, max_length=10, layers=3, init=init)
    ids = torch.tensor([[1, 29, 0, 7, 7], [2, 2, 2, 2, 2]])
    trace = model.trace(ids)
    expected_logits, expected_weights = reference_forward(model, ids)
    torch.testing.assert_close(trace.logits, expected_logits.detach())
    for block, weights in zip(trace.blocks, expected_weights, strict=True):
        torch.testing.assert_close(block.attention.weights, weights.detach())


def test_structure_and_state_dict_names() -> None:
    model = TinyDecoder()
    block = model.blocks[0]
    assert len(model.blocks) == 1
    assert block.qkv.weight.shape == (24, 8) and block.qkv.bias is None
    assert block.proj.bias is None and model.lm_head.bias is None
    assert block.ffn_in.weight.shape == (32, 8) and block.ffn_in.bias is not None
    assert set(model.state_dict()) == {
        "token.weight",
        "position.weight",
        *(f"blocks.0.{n}.{p}" for n in ("norm1", "norm2") for p in ("weight", "bias")),
        "blocks.0.qkv.weight",
        "blocks.0.proj.weight",
        *(f"blocks.0.{n}.{p}" for n in ("ffn_in", "ffn_out") for p in ("weight", "bias")),
        "final_norm.weight",
        "final_norm.bias",
        "lm_head.weight",
    }


def test_projections_are_column_slices_of_the_fused_weight() -> None:
    block = TinyDecoder.seeded(7).blocks[0]
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    p = block.projections()
    q, k, v = block.qkv(x).split(8, dim=-1)
    for ours, theirs in ((p.w_q, q), (p.w_k, k), (p.w_v, v)):
        torch.testing.assert_close(x @ ours, theirs)
    torch.testing.assert_close(x @ p.w_o, block.proj(x))
    assert p.b_q is None and p.b_o is None


def test_blocks_call_the_librarys_multi_head_attention(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[MultiHeadTrace] = []

    def spy(*args: object, **kwargs: object) -> MultiHeadTrace:
        calls.append(multi_head_attention(*args, **kwargs))  # type: ignore[arg-type]
        return calls[-1]

    monkeypatch.setattr(model_module, "multi_head_attention", spy)
    trace = TinyDecoder.seeded(7, layers=2).trace(IDS)
    assert len(calls) == 2  # one call per block, and the block keeps the very object
    assert all(b.attention is call for b, call in zip(trace.blocks, calls, strict=True))


def test_traces_nest() -> None:
    model = TinyDecoder.seeded(7, layers=2)
    trace = model.trace(IDS)
    assert isinstance(trace, DecoderTrace) and len(trace.blocks) == 2
    torch.testing.assert_close(trace.token_rows[0], model.token.weight[IDS].detach())
    assert torch.equal(trace.position_ids, torch.arange(8))
    assert torch.equal(trace.x0, trace.token_rows + trace.position_rows)
    x = trace.x0
    for block in trace.blocks:
        assert isinstance(block, BlockTrace) and block.input is x
        assert isinstance(block.norm1, LayerNormTrace) and isinstance(block.norm2, LayerNormTrace)
        assert isinstance(block.attention, MultiHeadTrace)
        assert isinstance(block.ffn, FeedForwardTrace)
        torch.testing.assert_close(block.norm1.output, F.layer_norm(x, (8,)))
        assert torch.equal(block.resid1, x + block.attention.output)  # what attention added
        assert torch.equal(block.resid2, block.resid1 + block.ffn.output)
        torch.testing.assert_close(block.ffn.hidden, F.gelu(block.ffn.hidden_pre))
        assert block.attention.q.shape == (1, 2, 8, 4) and block.ffn.hidden.shape == (1, 8, 32)
        x = block.output
    torch.testing.assert_close(trace.final_norm.output, F.layer_norm(x, (8,)))
    assert torch.equal(trace.logits, model.lm_head(trace.final_norm.output))
    assert torch.equal(trace.probs, torch.softmax(trace.logits[:, -1], dim=-1))
    assert trace.attention_weights is trace.blocks[-1].attention.weights


def test_trace_agrees_with_forward_and_forward_is_differentiable() -> None:
    model = TinyDecoder.seeded(7)
    logits, attention = model(IDS)
    trace = model.trace(IDS)
    assert logits.requires_grad and not trace.logits.requires_grad
    assert torch.equal(trace.logits, logits.detach())
    assert torch.equal(trace.attention_weights, attention.detach())


def test_without_causal_mask_row_zero_reads_the_future() -> None:
    model = TinyDecoder.seeded(7, causal=False)
    _, attention = model(IDS)
    assert (attention[0, :, 0, 1:] > 0).all()
    torch.testing.assert_close(attention.sum(-1), torch.ones(1, 2, 8))


def test_causal_can_be_switched_on_a_built_model() -> None:
    model = TinyDecoder.seeded(7)
    model.causal = False
    assert model.config.causal is False
    assert torch.equal(model(IDS)[1], TinyDecoder.seeded(7, causal=False)(IDS)[1])


@pytest.mark.parametrize("init", ["pytorch", "scaled"])
def test_seeded_is_reproducible_and_leaves_the_global_rng_alone(init: str) -> None:
    state = torch.random.get_rng_state()
    a, b = TinyDecoder.seeded(7, init=init), TinyDecoder.seeded(7, init=init)
    c = TinyDecoder.seeded(8, init=init)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (name, pa), pb, pc in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), strict=True
    ):
        assert torch.equal(pa, pb), name
        if name.endswith(("token.weight", "qkv.weight")):
            assert not torch.equal(pa, pc), name


def test_single_sequence_and_list_input_are_a_batch_of_one() -> None:
    model = TinyDecoder.seeded(7)
    logits_list, _ = model(IDS)
    logits_tensor, _ = model(torch.tensor([IDS]))
    assert logits_list.shape == (1, 8, 50)
    assert torch.equal(logits_list, logits_tensor)


def test_prefix_logits_do_not_depend_on_later_tokens() -> None:
    model = TinyDecoder.seeded(7, layers=2)
    a, _ = model(torch.tensor([IDS]))
    b, _ = model(torch.tensor([[*IDS[:4], 0, 1, 2, 3]]))
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_gradients_flow_for_training() -> None:
    model = TinyDecoder.seeded(7, layers=2, attn_bias=True)
    logits, _ = model(torch.tensor([IDS]))
    F.cross_entropy(logits[0, :-1], torch.tensor(IDS[1:])).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_float64_model_works() -> None:
    model = TinyDecoder.seeded(7).to(torch.float64)
    logits, attention = model(torch.tensor([IDS]))
    assert logits.dtype == attention.dtype == torch.float64
    torch.testing.assert_close(logits.float(), TinyDecoder.seeded(7)(torch.tensor([IDS]))[0])


@pytest.mark.parametrize(
    ("ids", "key"),
    [
        ([3, 50], "ids_out_of_range"),
        ([-1, 3], "ids_out_of_range"),
        (list(range(17)), "sequence_too_long"),
        (torch.tensor([1.0, 2.0]), "ids_not_integer"),
        (torch.tensor([True, False]), "ids_not_integer"),
        (torch.zeros(1, 0, dtype=torch.long), "ids_bad_shape"),
        (torch.zeros(1, 1, 2, dtype=torch.long), "ids_bad_shape"),
    ],
)
def test_bad_ids_are_rejected(ids: object, key: str) -> None:
    with pytest.raises((ParameterError, ShapeError)) as err:
        TinyDecoder.seeded(7)(ids)
    assert err.value.key == key


def test_max_length_sequence_is_accepted() -> None:
    logits, attention = TinyDecoder.seeded(7)(list(range(16)))
    assert logits.shape == (1, 16, 50) and attention.shape == (1, 2, 16, 16)
