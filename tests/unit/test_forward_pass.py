"""tinyformer.lessons.forward_pass: the forward pass as ordered steps, each cell's operands
recomputed with PyTorch's own functions, and the typed ID list."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import TinyformerError
from tinyformer.lessons.example import RUNNING_EXAMPLE
from tinyformer.lessons.example import TWIN as TWIN_QUESTION
from tinyformer.lessons.forward_pass import (
    ARTICLE_IDS,
    BLOCK_STEPS,
    HEAD_STEPS,
    TAIL_STEPS,
    Step,
    forward_run,
    forward_steps,
    later_weight,
    parse_ids,
    seeded_run,
    trained_run,
)
from tinyformer.lessons.train import load_model
from tinyformer.model import TinyDecoder

IDS = list(ARTICLE_IDS)


def steps_of(**settings: object) -> tuple[TinyDecoder, tuple[Step, ...]]:
    model = TinyDecoder.seeded(7, **settings)
    return model, forward_steps(model, model.trace(IDS))


def recompute(step: Step, g: int, i: int, c: int, model: TinyDecoder,
              steps: tuple[Step, ...]) -> float:
    """The cell's value from its operands alone, with PyTorch's own functions."""
    cell = step.cell(g, i, c)
    if cell.op == "lookup":
        table = model.token.weight if step.name == "tok" else model.position.weight
        return float(table[cell.row, c].detach())
    if cell.op == "add":
        return cell.parts[0] + cell.parts[1]
    if cell.op == "norm":
        x, mean, std, gamma, beta = cell.parts
        return (x - mean) / std * gamma + beta
    if cell.op == "linear":
        pre = float(cell.left @ cell.right) + (cell.bias or 0.0)
        assert cell.pre == pytest.approx(pre, abs=1e-5)
        return float(F.gelu(torch.tensor(pre))) if cell.activation == "gelu" else pre
    if cell.op == "score":
        return -math.inf if cell.blocked else float(cell.left @ cell.right) / cell.scale_dim**0.5
    if cell.op == "softmax":
        return float(torch.softmax(cell.scores.double(), dim=-1)[c])
    heads = next(s for s in steps if s.id == step.id.replace("merged", "heads"))  # concat
    return float(heads.output[cell.head, i, cell.column])


def test_steps_come_in_the_order_of_the_pass() -> None:
    _, steps = steps_of(layers=2)
    names = [s.name for s in steps]
    assert names == [*HEAD_STEPS, *BLOCK_STEPS, *BLOCK_STEPS, *TAIL_STEPS]
    assert len({s.id for s in steps}) == len(steps)  # ids are unique: "b0.q", "b1.q"
    assert [s.block for s in steps if s.name == "q"] == [0, 1]
    assert all(s.output.device.type == "cpu" and s.output.dim() == 3 for s in steps)


def test_articles_shapes_and_numbers() -> None:
    model, steps = steps_of()
    by = {s.id: s for s in steps}
    assert by["logits"].output.shape == (1, 8, 50)
    assert by["b0.weights"].output.shape == (2, 8, 8) and by["b0.heads"].output.shape == (2, 8, 4)
    assert by["b0.ffn_hidden"].output.shape == (1, 8, 32)
    probs = by["probs"].output[0, 0]
    top = probs.topk(3)
    assert top.indices.tolist() == [40, 20, 35]
    assert [round(p, 4) for p in top.values.tolist()] == [0.0538, 0.0472, 0.0444]
    assert sum(p.numel() for p in model.parameters()) == 1784


@pytest.mark.parametrize(
    "settings",
    [{}, {"heads": 4}, {"heads": 1, "causal": False}, {"layers": 2, "width": 12, "heads": 3}],
)
def test_every_cell_is_its_operands_recomputed(settings: dict) -> None:
    model, steps = steps_of(**settings)
    for step in steps:
        groups, rows, cols = step.output.shape
        for g in range(groups):
            for i in {0, rows // 2, rows - 1}:
                for c in {0, cols // 3, cols - 1}:
                    expected = recompute(step, g, i, c, model, steps)
                    actual = float(step.output[g, i, c])
                    assert actual == pytest.approx(expected, abs=1e-5), (step.id, g, i, c)


def test_steps_agree_with_a_functional_rebuild() -> None:
    """Each step's tensor from the previous ones with torch.nn.functional (not tinyformer)."""
    model, steps = steps_of(heads=4)
    by = {s.id: s for s in steps}
    block = model.blocks[0]
    x0 = model.token.weight[IDS] + model.position.weight[:8]
    torch.testing.assert_close(by["x0"].output[0], x0.detach())
    normed = F.layer_norm(x0, (8,), block.norm1.weight, block.norm1.bias).detach()
    torch.testing.assert_close(by["b0.norm1"].output[0], normed)
    q, k, v = block.qkv(normed).detach().split(8, dim=-1)
    for name, expected in (("q", q), ("k", k), ("v", v)):
        torch.testing.assert_close(by[f"b0.{name}"].output[0], expected)
    heads = (t.reshape(8, 4, 2).transpose(0, 1) for t in (q, k, v))  # [H, N, hd]
    qh, kh, vh = heads
    out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)  # [H, N, hd]
    torch.testing.assert_close(by["b0.heads"].output, out)
    merged = out.transpose(0, 1).reshape(8, 8)
    torch.testing.assert_close(by["b0.merged"].output[0], merged)
    torch.testing.assert_close(by["b0.proj"].output[0], block.proj(merged).detach())


def test_blocked_cells_and_later_weight() -> None:
    _, steps = steps_of()
    by = {s.id: s for s in steps}
    assert by["b0.scores"].cell(1, 0, 3).blocked and by["b0.weights"].cell(0, 2, 7).blocked
    assert not by["b0.weights"].cell(0, 7, 0).blocked
    weights = by["b0.weights"].output  # [H, N, N]
    assert torch.equal(later_weight(weights), torch.zeros(2, 8))
    _, open_steps = steps_of(causal=False)
    free = next(s for s in open_steps if s.id == "b0.weights").output
    torch.testing.assert_close(later_weight(free), (free * torch.ones(8, 8).triu(1)).sum(-1))
    assert (later_weight(free)[:, 0] > 0).all()
    torch.testing.assert_close(later_weight(free)[:, 0], 1 - free[:, 0, 0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
def test_cuda_gives_the_same_steps_within_float_tolerance() -> None:
    cpu = TinyDecoder.seeded(7)
    gpu = TinyDecoder.seeded(7, device="cuda")
    a = forward_steps(cpu, cpu.trace(IDS))
    b = forward_steps(gpu, gpu.trace(IDS))
    for sa, sb in zip(a, b, strict=True):
        assert sb.output.device.type == "cpu"
        torch.testing.assert_close(sa.output, sb.output, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("text", "ids"),
    [("3, 8, 12, 5, 17, 42, 23, 6", IDS), ("3 8，12、5", [3, 8, 12, 5]), (" 0 ", [0]),
     ("49;1", [49, 1]), (", ".join(["1"] * 16), [1] * 16)],
)
def test_parse_ids(text: str, ids: list[int]) -> None:
    assert parse_ids(text, 50, 16) == ids


@pytest.mark.parametrize(
    ("text", "key", "values"),
    [("", "ids_empty", {}), (" ,, ", "ids_empty", {}),
     ("3, a", "ids_not_whole", {"token": "a"}), ("3.5", "ids_not_whole", {"token": "3.5"}),
     ("1e3", "ids_not_whole", {"token": "1e3"}), ("nan", "ids_not_whole", {"token": "nan"}),
     (", ".join(["1"] * 17), "ids_too_many", {"count": 17, "limit": 16}),
     ("3, 50", "ids_outside_vocab", {"id": 50, "last": 49}),
     ("-1", "ids_outside_vocab", {"id": -1, "last": 49}),
     ("99999999999", "ids_outside_vocab", {"id": 99999999999, "last": 49})],
)
def test_parse_ids_errors(text: str, key: str, values: dict) -> None:
    with pytest.raises(TinyformerError) as err:
        parse_ids(text, 50, 16)
    assert err.value.key == key and err.value.values == values


def test_the_mask_leaves_one_blocks_prediction_alone_but_not_two_blocks() -> None:
    """What the page says when the mask is switched off: the last row reads every position
    either way, so one block predicts the same; with two, the earlier rows feed block 2."""
    for layers, same in ((1, True), (2, False)):
        on = TinyDecoder.seeded(7, layers=layers).trace(IDS)
        off = TinyDecoder.seeded(7, layers=layers, causal=False).trace(IDS)
        assert torch.allclose(on.probs, off.probs, atol=1e-7) is same
        assert not torch.allclose(on.logits[:, 0], off.logits[:, 0])  # row 0 changes


# --- One run for a page, and the trained model's run ----------------------------------

RUNNING, TWIN = RUNNING_EXAMPLE, TWIN_QUESTION


@pytest.fixture(scope="module")
def trained():
    return load_model()


def test_forward_run_bundles_the_trace_and_its_steps() -> None:
    run = seeded_run(7, IDS, width=8, heads=4)
    model = TinyDecoder.seeded(7, heads=4)
    trace = model.trace(IDS)
    torch.testing.assert_close(run.trace.logits, trace.logits)
    assert [s.id for s in run.steps] == [s.id for s in forward_steps(model, trace)]
    assert list(run.top) == trace.top(10) and run.top[0][0] == int(trace.probs[0].argmax())
    torch.testing.assert_close(run.attention, trace.attention_weights[0])
    assert run.ids == tuple(IDS) and run.names == tuple(str(i) for i in range(50))
    assert run.grid == 10  # 50 IDs drawn 10 to a row


@pytest.mark.parametrize(
    ("settings", "key"),
    [({"width": 10**6, "heads": 1}, "size_too_large"),
     ({"vocab": 65_536, "width": 1_024}, "model_too_large"),
     ({"dropout": 0.1}, "config_unknown_field")],
)
def test_a_random_run_beyond_the_classroom_limits_is_refused(settings, key) -> None:
    """Refused before any weight is drawn (a million-wide table would not fit)."""
    with pytest.raises(TinyformerError) as err:
        seeded_run(7, IDS, **settings)
    assert err.value.key == key


@pytest.mark.parametrize(("vocab", "grid"), [(50, 10), (115, 5), (7, 7), (13, 1), (64, 8)])
def test_the_probability_grid_divides_the_vocabulary(vocab: int, grid: int) -> None:
    run = forward_run(TinyDecoder.seeded(0, vocab=vocab), [0, 1])
    assert run.grid == grid and vocab % run.grid == 0


def test_forward_run_needs_one_name_per_id() -> None:
    with pytest.raises(TinyformerError) as err:
        forward_run(TinyDecoder.seeded(7), IDS, names=["a"] * 49)
    assert err.value.key == "forward_names" and err.value.values == {"count": 49, "vocab": 50}


@pytest.mark.parametrize(("question", "answer"), [(RUNNING, "商"), (TWIN, "买")])
def test_the_trained_run_is_the_shipped_models_own_pass(trained, question, answer) -> None:
    run = trained_run(question)
    ids = trained.vocab.encode(question).ids
    assert run.ids == tuple(ids) and run.names == trained.vocab.tokens
    logits, attention = trained.model(torch.tensor(ids)[None])  # the model's own forward
    torch.testing.assert_close(run.trace.logits, logits)
    torch.testing.assert_close(run.attention, attention[0])
    probs = torch.softmax(logits[0, -1], -1)
    assert run.names[run.top[0][0]] == answer  # 商 after the running example, 买 after the twin
    assert run.top[0][1] == pytest.approx(float(probs.max()))
    assert [s.name for s in run.steps] == [*HEAD_STEPS, *BLOCK_STEPS, *BLOCK_STEPS, *TAIL_STEPS]
    assert run.model is not trained.model  # a copy: moving it never moves the shipped one


def test_every_trained_cell_is_its_operands_recomputed(trained) -> None:
    run = trained_run(RUNNING, trained=trained)
    for step in run.steps:
        groups, rows, cols = step.output.shape
        for g in range(groups):
            for i in {0, rows - 1}:
                for c in {0, cols - 1}:
                    expected = recompute(step, g, i, c, run.model, run.steps)
                    assert float(step.output[g, i, c]) == pytest.approx(expected, abs=1e-4), \
                        (step.id, g, i, c)


@pytest.mark.parametrize(("question", "key"), [
    ("", "trained_question_empty"), ("猫有质量问题，运费谁承担？", "trained_question_unknown"),
    ("商品有质量问题，运费谁付？", "trained_question_pattern"),
    ("商品" * 20, "trained_question_too_long"),
])
def test_the_trained_run_refuses_questions_outside_the_corpus(trained, question, key) -> None:
    with pytest.raises(TinyformerError) as err:
        trained_run(question, trained=trained)
    assert err.value.key == key
