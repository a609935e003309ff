"""The running example's hand model (tinyformer.lessons.chain) against PyTorch's own
functions, and its default numbers as the stages show them."""

import math

import pytest
import torch
import torch.nn.functional as F

from tinyformer.lessons.chain import IDS, VOCAB, WORDS, ChainParams, run_chain, unmasked_weights


def torch_reference(p: ChainParams) -> tuple[torch.Tensor, torch.Tensor]:
    """The same block written with torch.nn.functional only: the last position's logits
    and every position's output Y."""
    X = p.X.unsqueeze(0)  # [1, N, d]
    q, k, v = X @ p.Wq, X @ p.Wk, X @ p.Wv
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # scale 1/sqrt(d)
    h = F.rms_norm(X + a, (X.shape[-1],), eps=1e-6)
    y = h + F.relu(h @ p.W1) @ p.W2
    return y[0, -1] @ p.U.T, y[0]


def test_the_chain_matches_pytorch_at_defaults_and_after_an_edit():
    params = ChainParams.defaults()
    edited = ChainParams(**{**params.__dict__, "X": params.X + torch.tensor([[0.5, -2.0]] * 4)})
    for p in (params, edited):
        run = run_chain(p)
        logits, y = torch_reference(p)
        assert torch.allclose(run.Y, y, atol=1e-12)
        assert torch.allclose(run.logits, logits, atol=1e-12)
        assert torch.allclose(run.probs, torch.softmax(logits, -1), atol=1e-12)
    assert not torch.allclose(run_chain(edited).logits, run_chain(params).logits)


def test_the_token_ids_select_the_chain_rows_of_the_table():
    run = run_chain()
    assert [VOCAB[i] for i in IDS] == list(WORDS) == ["运费", "谁", "承担", "？"]
    assert torch.equal(run.X, run.table[list(IDS)])
    assert torch.equal(run.X, run.params.X)


def test_the_default_numbers():
    """The digits the chain's stages show (docs/curriculum.md, "The chain")."""
    run = run_chain()
    assert run.Q[0].tolist() == [1, 0]  # 运费's query
    assert run.K[3].tolist() == [-1, 0]  # ？'s key
    assert run.scores.tolist() == [[0, 1, 1, -1], [1, 2, 3, -1], [1, 3, 4, -2], [-1, -1, -2, 0]]
    assert run.scaled[1, 2] == pytest.approx(3 / math.sqrt(2))
    assert torch.isinf(run.masked[0, 1]) and run.weights[0].tolist() == [1, 0, 0, 0]
    assert [round(w, 3) for w in run.weights[3].tolist()] == [0.221, 0.221, 0.109, 0.449]
    assert [round(a, 3) for a in run.A[3].tolist()] == [0.779, -0.237]
    assert [round(r, 3) for r in run.R[3].tolist()] == [1.779, -1.237]
    assert [round(h, 3) for h in run.H[3].tolist()] == [1.161, -0.807]
    assert [round(h, 3) for h in run.ffn.hidden[3].tolist()] == [1.161, 0, 0]  # ReLU cut two
    assert [round(y, 3) for y in run.Y[3].tolist()] == [2.322, -0.807]
    assert [round(z, 3) for z in run.logits.tolist()] == [2.322, -0.807, 0.758]
    assert [round(p, 3) for p in run.probs.tolist()] == [0.798, 0.035, 0.167]


def test_stage_3s_unmasked_view_of_the_chain():
    """No mask: every row reads all four words; the last row is the chain's own."""
    run = run_chain()
    weights = unmasked_weights(run)
    assert torch.allclose(weights, torch.softmax(run.scores / math.sqrt(2), dim=-1))
    assert [round(w, 3) for w in weights[0].tolist()] == [0.180, 0.365, 0.365, 0.089]
    assert torch.equal(weights[3], run.weights[3])
