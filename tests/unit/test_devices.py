"""Every function computes on its inputs' device (no hidden CPU tensors).

The "meta" device has shapes but no data: any CPU tensor created inside a function
and mixed with meta inputs raises, so this checks device hygiene without a GPU.
CUDA runs the same checks with real numbers when a GPU is present.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from tinyformer import attention, ffn, masks, moe, norm, positional
from tinyformer.model import TinyDecoder

IDS = [3, 8, 12, 5, 17, 42, 23, 6]


def _cases(device: str) -> dict[str, Callable[[], torch.Tensor]]:
    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device)

    valid = torch.ones(2, 5, dtype=torch.bool, device=device)
    mask = masks.combine(masks.causal_mask(5, device=device), masks.padding_mask(valid))
    return {
        "sdpa": lambda: (
            attention.scaled_dot_product_attention(
                r(2, 5, 4), r(2, 5, 4), r(2, 5, 4), mask=mask
            ).output
        ),
        "mha_gqa": lambda: (
            attention.multi_head_attention(
                r(2, 5, 8), r(8, 8), r(8, 4), r(8, 4), r(8, 8), n_heads=4, n_kv_heads=2, mask=mask
            ).output
        ),
        "sinusoidal": lambda: positional.sinusoidal(5, 8, device=device),
        "rope": lambda: positional.rope(r(2, 5, 8), torch.arange(5, device=device)),
        "rotate_2d": lambda: positional.rotate_2d(r(3, 2), 0.5),
        "ffn": lambda: ffn.feed_forward(r(5, 4), r(4, 8), r(8), r(8, 4), None, "gelu").output,
        "swiglu": lambda: ffn.swiglu(r(5, 4), r(4, 8), r(4, 8), r(8, 4)).output,
        "layer_norm": lambda: norm.layer_norm(r(5, 4), r(4), r(4)).output,
        "rms_norm": lambda: norm.rms_norm(r(5, 4), r(4)).output,
        "route": lambda: moe.route(r(5, 4), r(4, 6), 2).weights,
        "mha_cached": lambda: (
            attention.multi_head_attention(
                r(2, 1, 8),
                r(8, 8),
                r(8, 8),
                r(8, 8),
                r(8, 8),
                n_heads=2,
                mask=attention.cached_causal_mask(1, 4, device=device),
                b_q=r(8),
                b_o=r(8),
                past_k=r(2, 2, 4, 4),
                past_v=r(2, 2, 4, 4),
            ).output
        ),
        "decoder": lambda: TinyDecoder.seeded(7, layers=2, device=device)(IDS)[0],
        "decoder_trace": lambda: TinyDecoder.seeded(7, device=device).trace(IDS).probs,
        "decoder_cached": lambda: _decode_twice(TinyDecoder.seeded(7, layers=2, device=device)),
    }


def _decode_twice(model: TinyDecoder) -> torch.Tensor:
    """Prompt, then one new token reading the cache: every cache tensor on the model's device."""
    first = model.decode(IDS[:5])
    return model.decode(IDS[5:6], first.cache).logits


@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_meta_inputs_give_meta_outputs(name: str) -> None:
    out = _cases("meta")[name]()
    assert out.device.type == "meta"


def test_seeded_model_moves_to_the_asked_device() -> None:
    model = TinyDecoder.seeded(7, device="meta")
    assert {p.device.type for p in model.parameters()} == {"meta"} and model.device.type == "meta"
    step = model.decode(IDS)
    assert {t.device.type for layer in step.cache.layers for t in (layer.k, layer.v)} == {"meta"}


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_cuda_inputs_give_cuda_outputs(name: str) -> None:
    out = _cases("cuda")[name]()
    assert out.device.type == "cuda" and torch.isfinite(out).all()


@cuda
def test_tiny_decoder_on_cuda_matches_cpu() -> None:
    from tinyformer.sampling import next_token_probs, sample

    cpu = TinyDecoder.seeded(7)
    gpu = TinyDecoder.seeded(7, device="cuda")
    for a, b in zip(cpu.parameters(), gpu.parameters(), strict=True):
        assert torch.equal(a, b.cpu())  # drawn on the CPU, then moved: identical weights
    logits, attention_weights = gpu(IDS)
    assert logits.device.type == attention_weights.device.type == "cuda"
    torch.testing.assert_close(logits.cpu(), cpu(IDS)[0], rtol=1e-4, atol=1e-4)
    probs = next_token_probs(logits[0, -1], temperature=0.7, top_k=5, top_p=0.9).probs
    token = sample(probs, torch.Generator(device="cuda").manual_seed(0))
    assert 0 <= token < 50 and probs[token] > 0
    cached = gpu.decode(IDS[5:], gpu.decode(IDS[:5]).cache).logits
    torch.testing.assert_close(cached.cpu(), cpu(IDS)[0][:, 5:].detach(), rtol=1e-4, atol=1e-4)
