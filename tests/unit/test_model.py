"""TinyDecoder against an independent reference written with torch.nn.functional."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.model import TinyDecoder

IDS = [3, 8, 12, 5, 17, 42, 23, 6]


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
        q, k, v = F.linear(a, sd[p + "qkv.weight"], sd[p + "qkv.bias"]).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, h, w // h).transpose(1, 2) for t in (q, k, v))
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        scores = q @ k.transpose(-1, -2) / (w // h) ** 0.5
        if causal:
            future = torch.ones(n, n, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        all_weights.append(F.softmax(scores, dim=-1))
        concat = heads.transpose(1, 2).reshape(b, n, w)
        x = x + F.linear(concat, sd[p + "proj.weight"], sd[p + "proj.bias"])
        f = F.layer_norm(x, (w,), sd[p + "norm2.weight"], sd[p + "norm2.bias"])
        f = F.gelu(F.linear(f, sd[p + "ffn_in.weight"], sd[p + "ffn_in.bias"]))
        x = x + F.linear(f, sd[p + "ffn_out.weight"], sd[p + "ffn_out.bias"])
    x = F.layer_norm(x, (w,), sd["final_norm.weight"], sd["final_norm.bias"])
    return F.linear(x, sd["lm_head.weight"]), all_weights


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_matches_functional_reference(heads: int, causal: bool) -> None:
    model = TinyDecoder.seeded(7, heads=heads, causal=causal)
    ids = torch.tensor([IDS, list(reversed(IDS))])
    logits, attention = model(ids)
    expected_logits, expected_weights = reference_forward(model, ids, causal)
    torch.testing.assert_close(logits, expected_logits)
    torch.testing.assert_close(attention, expected_weights[-1])


def test_three_layers_match_the_reference_too() -> None:
    model = TinyDecoder.seeded(11, vocab=30, width=12, heads=3, max_length=10, layers=3)
    ids = torch.tensor([[1, 29, 0, 7, 7]])
    logits, _ = model(ids)
    torch.testing.assert_close(logits, reference_forward(model, ids)[0])


def test_structure_follows_the_curriculum() -> None:
    model = TinyDecoder()
    block = model.blocks[0]
    assert block.qkv.weight.shape == (24, 8)  # one fused projection, split three ways
    assert block.ffn_in.weight.shape == (32, 8)  # FFN width 4d
    assert model.lm_head.bias is None
    assert model.position.weight.shape == (16, 8)
    assert len(model.blocks) == 2


def test_causal_first_row_reads_only_position_zero() -> None:
    trace = TinyDecoder.seeded(7).trace(torch.tensor([IDS]))
    for block in trace.blocks:
        assert torch.equal(block.weights[0, :, 0], torch.eye(8)[0].expand(2, 8))
        assert (block.weights[0].triu(1) == 0).all()
        assert (block.weights[0, :, -1] > 0).all()


def test_without_causal_mask_the_first_row_reads_the_future() -> None:
    model = TinyDecoder.seeded(7)
    model.causal = False
    _, attention = model(torch.tensor([IDS]))
    assert (attention[0, :, 0, 1:] > 0).all()


def test_trace_agrees_with_forward_and_chains_the_residuals() -> None:
    model = TinyDecoder.seeded(7)
    ids = torch.tensor([IDS])
    logits, attention = model(ids)
    trace = model.trace(ids)
    torch.testing.assert_close(trace.logits, logits.detach())
    torch.testing.assert_close(trace.attention, attention.detach())
    assert not trace.logits.requires_grad
    torch.testing.assert_close(trace.embeddings[0], model.token.weight[IDS].detach())
    torch.testing.assert_close(trace.x0, trace.embeddings + trace.positions)
    first, second = trace.blocks
    torch.testing.assert_close(first.resid1, trace.x0 + first.attn_out)
    torch.testing.assert_close(first.resid2, first.resid1 + first.ffn_out)
    torch.testing.assert_close(first.ffn_hidden, F.gelu(first.ffn_pre))
    torch.testing.assert_close(second.norm1, F.layer_norm(first.resid2, (8,)))
    assert first.q.shape == (1, 2, 8, 4) and first.ffn_hidden.shape == (1, 8, 32)


def test_single_sequence_and_list_input_are_a_batch_of_one() -> None:
    model = TinyDecoder.seeded(7)
    logits_list, _ = model(IDS)
    logits_tensor, _ = model(torch.tensor([IDS]))
    assert logits_list.shape == (1, 8, 50)
    torch.testing.assert_close(logits_list, logits_tensor)


def test_prefix_logits_do_not_depend_on_later_tokens() -> None:
    model = TinyDecoder.seeded(7)
    a, _ = model(torch.tensor([IDS]))
    b, _ = model(torch.tensor([[*IDS[:4], 0, 1, 2, 3]]))
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_seeded_is_reproducible_and_leaves_the_global_rng_alone() -> None:
    state = torch.get_rng_state()
    a, b, c = TinyDecoder.seeded(7), TinyDecoder.seeded(7), TinyDecoder.seeded(8)
    assert torch.equal(torch.get_rng_state(), state)
    for (name, pa), pb, pc in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), strict=True
    ):
        assert torch.equal(pa, pb), name
        if name.endswith(("token.weight", "qkv.weight")):
            assert not torch.equal(pa, pc), name


def test_gradients_flow_for_training() -> None:
    model = TinyDecoder.seeded(7)
    logits, _ = model(torch.tensor([IDS]))
    F.cross_entropy(logits[0, :-1], torch.tensor(IDS[1:])).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_float64_model_works() -> None:
    model = TinyDecoder.seeded(7).to(torch.float64)
    logits, attention = model(torch.tensor([IDS]))
    assert logits.dtype == attention.dtype == torch.float64
    torch.testing.assert_close(logits.float(), TinyDecoder.seeded(7)(torch.tensor([IDS]))[0])


def test_width_not_divisible_by_heads_is_a_clear_error() -> None:
    with pytest.raises(ShapeError) as err:
        TinyDecoder(width=8, heads=3)
    assert err.value.key == "width_not_divisible"
    assert err.value.values == {"width": 8, "heads": 3}
    assert "8" in str(err.value) and "3" in str(err.value)


@pytest.mark.parametrize("field", ["vocab", "width", "heads", "max_length", "layers"])
def test_sizes_must_be_positive(field: str) -> None:
    with pytest.raises(ParameterError) as err:
        TinyDecoder(**{field: 0})
    assert err.value.key == "size_not_positive" and err.value.values["name"] == field


@pytest.mark.parametrize(
    ("ids", "key"),
    [
        ([3, 50], "ids_out_of_range"),
        ([-1, 3], "ids_out_of_range"),
        (list(range(17)), "sequence_too_long"),
        (torch.tensor([1.0, 2.0]), "ids_not_integer"),
        (torch.zeros(1, 0, dtype=torch.long), "ids_bad_shape"),
        (torch.zeros(1, 1, 2, dtype=torch.long), "ids_bad_shape"),
    ],
)
def test_bad_ids_are_rejected(ids: object, key: str) -> None:
    with pytest.raises(ValueError) as err:
        TinyDecoder.seeded(7)(ids)
    assert err.value.key == key  # type: ignore[attr-defined]


def test_max_length_sequence_is_accepted() -> None:
    logits, attention = TinyDecoder.seeded(7)(list(range(16)))
    assert logits.shape == (1, 16, 50) and attention.shape == (1, 2, 16, 16)
