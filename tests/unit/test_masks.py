"""Boolean masks (True = may attend), and the position ids of a padded batch (stage 5.1)."""

from __future__ import annotations

import pytest
import torch

from tinyformer.errors import ShapeError
from tinyformer.masks import attention_mask, causal_mask, combine, padding_mask, position_ids


def test_causal_mask_reads_itself_and_the_past_only() -> None:
    mask = causal_mask(5)
    assert mask.dtype == torch.bool and mask.shape == (5, 5)
    for i in range(5):
        for j in range(5):
            assert bool(mask[i, j]) == (j <= i)


def test_causal_mask_of_length_zero_is_empty() -> None:
    assert causal_mask(0).shape == (0, 0)


def test_causal_mask_rejects_negative_length() -> None:
    with pytest.raises(ShapeError) as err:
        causal_mask(-1)
    assert err.value.key == "negative_length"


def test_causal_mask_is_built_on_the_requested_device() -> None:
    assert causal_mask(3, device="meta").device.type == "meta"


def test_padding_mask_blocks_padded_keys_for_every_query() -> None:
    valid = torch.tensor([[False, False, True, True], [True, True, True, False]])
    mask = padding_mask(valid)
    assert mask.shape == (2, 4, 4) and mask.dtype == torch.bool
    for b in range(2):
        for i in range(4):
            assert torch.equal(mask[b, i], valid[b])


def test_padding_mask_result_does_not_alias_its_input() -> None:
    valid = torch.tensor([[True, True]])
    mask = padding_mask(valid)
    mask[0, 0, 0] = False
    assert valid[0, 0] and mask[0, 1, 0]


@pytest.mark.parametrize(
    ("valid", "key"),
    [(torch.ones(2, 3), "mask_not_bool"), (torch.ones(3, dtype=torch.bool), "valid_not_2d")],
)
def test_padding_mask_rejects_bad_input(valid: torch.Tensor, key: str) -> None:
    with pytest.raises(ShapeError) as err:
        padding_mask(valid)
    assert err.value.key == key


def test_combine_is_logical_and_with_broadcasting() -> None:
    valid = torch.tensor([[False, False, True, True]])  # left padding of 2
    mask = combine(causal_mask(4), padding_mask(valid))
    expected = torch.tensor(
        [
            [False, False, False, False],
            [False, False, False, False],
            [False, False, True, False],
            [False, False, True, True],
        ]
    )
    assert mask.shape == (1, 4, 4)
    assert torch.equal(mask[0], expected)


def test_combine_of_one_mask_is_that_mask() -> None:
    assert torch.equal(combine(causal_mask(3)), causal_mask(3))


@pytest.mark.parametrize(
    ("masks", "key"), [((), "no_masks"), ((torch.ones(2, 2),), "mask_not_bool")]
)
def test_combine_rejects_bad_input(masks: tuple[torch.Tensor, ...], key: str) -> None:
    with pytest.raises(ShapeError) as err:
        combine(*masks)
    assert err.value.key == key


def test_additive_mask_matches_pytorch_float_masks():
    """PyTorch accepts a float mask added to the scores; ours must give the same output."""
    import torch.nn.functional as F

    from tinyformer.attention import scaled_dot_product_attention
    from tinyformer.masks import additive

    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(5, 4, generator=gen) for _ in range(3))
    allowed = causal_mask(5)
    m = additive(allowed)
    assert m[0, 1] == float("-inf") and m[1, 0] == 0 and m[3, 3] == 0
    ours = scaled_dot_product_attention(q, k, v, mask=allowed).output
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=m))


# --- attention_mask: the mask a page switches on and off -------------------------------


def test_attention_mask_causal_alone_is_the_causal_mask() -> None:
    assert torch.equal(attention_mask(4), causal_mask(4))
    assert attention_mask(4).int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0],
                                                [1, 1, 1, 1]]


def test_attention_mask_without_any_mask_allows_every_cell() -> None:
    mask = attention_mask(3, causal=False)
    assert mask.dtype == torch.bool and mask.shape == (3, 3) and bool(mask.all())


def test_left_padded_request_never_reads_its_two_empty_positions() -> None:
    """CURRICULUM 4: left-padded with 2 empty positions, both masks on."""
    valid = torch.tensor([[False, False, True, True, True, True]])
    both = attention_mask(6, causal=True, valid=valid)
    assert both.shape == (1, 6, 6)
    assert not bool(both[0, :, :2].any())  # no row reads a [PAD] key
    assert torch.equal(both[0, 2:, 2:], causal_mask(4))  # the real tokens: causal, 4 positions
    pad_only = attention_mask(6, causal=False, valid=valid)
    assert torch.equal(pad_only, padding_mask(valid))
    # The causal mask alone lets real tokens read the padding: it lies in their past.
    assert bool(attention_mask(6, causal=True)[2, :2].all())


def test_attention_mask_matches_pytorch_with_combined_masks() -> None:
    """Both masks in tinyformer's attention agree with PyTorch's boolean attn_mask on the
    rows that can read something (PyTorch gives NaN for fully blocked rows, we give 0)."""
    import torch.nn.functional as F

    from tinyformer.attention import scaled_dot_product_attention

    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 6, 4, generator=gen) for _ in range(3))
    valid = torch.tensor([[False, False, True, True, True, True]])
    mask = attention_mask(6, causal=True, valid=valid)  # [1, 6, 6]
    ours = scaled_dot_product_attention(q, k, v, mask=mask)
    theirs = F.scaled_dot_product_attention(q[:, 2:], k, v, attn_mask=mask[:, 2:])
    torch.testing.assert_close(ours.output[:, 2:], theirs)
    assert bool((ours.weights[:, :2] == 0).all()) and bool((ours.output[:, :2] == 0).all())


def test_position_ids_count_real_tokens_only() -> None:
    """Against the obvious formula: cumulative count of real tokens − 1, at real tokens;
    left, right and inner padding, random batches included."""
    left = torch.tensor([[False, False, True, True, True, True]])  # the page's request
    assert position_ids(left).tolist() == [[0, 0, 0, 1, 2, 3]]  # 运费 at 0, pads 0
    right = torch.tensor([[True, True, True, False]])
    assert position_ids(right).tolist() == [[0, 1, 2, 0]]  # right padding: ids = columns
    gen = torch.Generator().manual_seed(0)
    batch = torch.rand(64, 9, generator=gen) < 0.6  # [64, 9] random valid flags
    for valid in (left, right, batch):
        expected = valid.long().cumsum(-1) - 1  # [B, N]
        ids = position_ids(valid)
        assert ids.dtype == torch.int64
        assert torch.equal(ids[valid], expected[valid])
        assert bool((ids[~valid] == 0).all())


@pytest.mark.parametrize(("valid", "key"), [(torch.ones(1, 3), "mask_not_bool"),
                                            (torch.ones(3, dtype=torch.bool), "valid_not_2d")])
def test_position_ids_reject_bad_input(valid: torch.Tensor, key: str) -> None:
    with pytest.raises(ShapeError) as err:
        position_ids(valid)
    assert err.value.key == key
