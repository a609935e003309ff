"""Stage 13.2's experiments on the shipped model: ablation and activation patching,
each checked against an independent computation (changed weights, the model's own
blocks run by hand)."""

from __future__ import annotations

import copy

import pytest
import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons import train as tr
from tinyformer.lessons.checkpoint import TrainedModel, load_model
from tinyformer.lessons.corpus import find_question
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN, TWIN_SAME_PLACE
from tinyformer.lessons.interventions import (
    Ablation,
    ablations,
    patch_one,
    patch_span,
    patching,
    run,
    untrained_like,
)
from tinyformer.lessons.probe import probe
from tinyformer.masks import causal_mask


@pytest.fixture(scope="module")
def trained() -> TrainedModel:
    return load_model()


def test_run_without_an_intervention_is_the_models_forward_pass(trained) -> None:
    ids = torch.tensor([trained.vocab.encode(RUNNING_EXAMPLE).ids])
    logits, streams = run(trained.model, ids)
    torch.testing.assert_close(logits, trained.model(ids)[0])
    trace = trained.model.trace(ids)
    for got, block in zip(streams, trace.blocks, strict=False):
        torch.testing.assert_close(got, block.input)
    torch.testing.assert_close(streams[-1], trace.blocks[-1].output)


def _without(trained: TrainedModel, ablation: Ablation) -> TrainedModel:
    """The same model with the part's weights set to 0: an independent ablation."""
    model = copy.deepcopy(trained.model)
    block = model.blocks[ablation.block]
    if ablation.head is None:
        block.ffn_out.weight.zero_()
        block.ffn_out.bias.zero_()
    else:
        hd = model.head_dim
        block.proj.weight[:, ablation.head * hd:(ablation.head + 1) * hd] = 0  # [out, in]
    return TrainedModel(model, trained.vocab, trained.settings, trained.config)


def test_ablating_every_head_and_ffn_gives_the_table(trained) -> None:
    rows = ablations(trained, [RUNNING_EXAMPLE, TWIN])
    assert [r.ablation for r in rows] == [None, Ablation(0, 0), Ablation(0, 1), Ablation(1, 0),
                                          Ablation(1, 1), Ablation(0), Ablation(1)]
    for row in rows:
        model = trained if row.ablation is None else _without(trained, row.ablation)
        for question, found in zip((RUNNING_EXAMPLE, TWIN), row.probs, strict=True):
            expected = probe(model, question).word
            assert found.merchant == pytest.approx(expected.merchant, abs=1e-5)
            assert found.buyer == pytest.approx(expected.buyer, abs=1e-5)


def test_patching_one_cell_is_the_run_computed_by_hand(trained) -> None:
    """Twin-same-place patched with the running example's stream entering block 1 at
    position 2 (有 in place of 无): the model's own blocks, run one by one."""
    found = patching(trained, TWIN_SAME_PLACE, RUNNING_EXAMPLE)
    model, vocab = trained.model, trained.vocab
    source = model.trace(torch.tensor(vocab.encode(RUNNING_EXAMPLE).ids))
    replacement = source.blocks[0].output[0, 2]  # [w]
    words = [vocab.encode(w).ids for w in ("商家", "买家")]
    ids = torch.tensor([[*vocab.encode(TWIN_SAME_PLACE).ids, w[0]] for w in words])  # [2, N+1]
    n = ids.shape[1]
    mask = causal_mask(n)
    with torch.no_grad():
        x = model.token(ids) + model.position(torch.arange(n))
        x = model.blocks[0](x, mask).output.clone()
        x[:, 2] = replacement
        x = model.blocks[1](x, mask).output
        probs = model.lm_head(model.final_norm(x)).softmax(-1)  # [2, N+1, V]
    merchant = float(probs[0, n - 2, words[0][0]] * probs[0, n - 1, words[0][1]])
    assert found.merchant[1][2] == pytest.approx(merchant, abs=1e-5)
    assert found.clean.merchant < 0.01 and found.merchant[1][2] > 0.5  # one character flips it
    assert patch_one(trained, TWIN_SAME_PLACE, RUNNING_EXAMPLE, 1, 2).merchant == \
        pytest.approx(merchant, abs=1e-5)


def test_the_whole_reason_patched_at_once(trained) -> None:
    start, end = find_question(RUNNING_EXAMPLE).reason_span
    by_stream = patch_span(trained, RUNNING_EXAMPLE, TWIN_SAME_PLACE, range(start, end))
    clean = probe(trained, RUNNING_EXAMPLE).word.merchant
    assert by_stream[0].merchant < 0.1 < 0.9 < clean  # the reason swapped at the input
    assert by_stream[-1].merchant == pytest.approx(clean, abs=1e-5)  # after the last block
    # the reason's positions no longer matter there: the answer was already read out


def test_a_position_the_twin_does_not_have(trained) -> None:
    found = patching(trained, RUNNING_EXAMPLE, TWIN)  # 14 characters against 12
    assert found.missing == (12, 13)
    assert all(row[12] is None and row[13] is None and row[11] is not None
               for row in found.merchant)
    with pytest.raises(ParameterError) as error:
        patch_one(trained, RUNNING_EXAMPLE, TWIN, 0, 12)
    assert error.value.key == "train_setting_range" and error.value.values["high"] == 11


def test_the_untrained_model_is_where_training_started(trained) -> None:
    before = untrained_like(trained)
    start = tr.build_model(trained.settings, len(trained.vocab))
    for name, value in start.state_dict().items():
        torch.testing.assert_close(before.model.state_dict()[name], value)
    assert not torch.equal(before.model.token.weight, trained.model.token.weight)
    rows = probe(before, RUNNING_EXAMPLE).attention[:, :, -1]  # [L, H, N]
    torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[:2]))
