"""Stage 11's trace (tinyformer/lessons/trace.py): every cell of every intermediate is
recomputed from its sources' own values, for the seeded and the trained model, and a
trail from a logit (or a probability) reaches a token ID."""

from __future__ import annotations

import pytest

from tinyformer.lessons import forward_pass as fp
from tinyformer.lessons import trace as tr
from tinyformer.lessons.example import RUNNING_EXAMPLE
from tinyformer.lessons.train import load_model


@pytest.fixture(scope="module")
def seeded() -> fp.ForwardRun:
    return fp.seeded_run(7, fp.ARTICLE_IDS, layers=2)  # two blocks: a block reads the last


@pytest.fixture(scope="module")
def trained() -> fp.ForwardRun:
    model = load_model()
    return fp.forward_run(model.model, model.vocab.encode(RUNNING_EXAMPLE).ids,
                          model.vocab.tokens)


def some_cells(step: fp.Step) -> list[tr.Address]:
    g, r, c = step.output.shape
    picks = {(0, 0, 0), (g - 1, r - 1, c - 1), (g - 1, r // 2, c // 2), (0, r - 1, 0)}
    return [tr.Address(step.id, *p) for p in sorted(picks)]


@pytest.mark.parametrize("which", ["seeded", "trained"])
def test_every_step_is_recomputed_from_its_sources(which, request):
    run = request.getfixturevalue(which)
    ops = set()
    for step in run.steps:
        for address in some_cells(step):
            link = tr.link(run, address)
            ops.add(link.op)
            assert link.value == pytest.approx(link.recomputed, rel=1e-4, abs=1e-5), address
            for source in link.sources:  # each source is a cell of an EARLIER step
                assert tr.value_of(run, source.address) == source.value
                assert source.address.step == tr.IDS or \
                    [s.id for s in run.steps].index(source.address.step) < \
                    [s.id for s in run.steps].index(step.id)
            if link.op in ("add", "linear", "score"):  # the terms add up to the sum
                parts = sum(s.part for s in link.sources) / (2 if step.name in (
                    "scores", "heads") else 1)  # a product's two factors carry one term
                bias = 0.0 if step.bias is None else float(step.bias[address.c])
                if step.activation is None:
                    assert parts + bias == pytest.approx(link.recomputed, abs=1e-6)
    assert ops == {"lookup", "position", "add", "norm", "linear", "score", "softmax",
                   "concat"}


def test_a_blocked_score_and_its_weight_have_no_live_input(seeded):
    blocked = tr.link(seeded, tr.Address("b0.scores", 0, 0, 3))
    assert blocked.value == float("-inf") and blocked.sources == ()
    weight = tr.link(seeded, tr.Address("b0.weights", 0, 0, 3))
    assert weight.value == 0.0 == weight.recomputed
    assert all(s.address.c == 0 for s in weight.sources)  # row 0 reads position 0 only


@pytest.mark.parametrize("which", ["seeded", "trained"])
def test_a_trail_from_a_logit_reaches_an_id(which, request):
    run = request.getfixturevalue(which)
    last = len(run.ids) - 1
    top = run.top[0][0]
    for start in (tr.Address("logits", 0, last, top), tr.Address("probs", 0, 0, top)):
        trail = tr.trail_to_ids(run, start)
        assert trail[-1] == tr.Address(tr.IDS, 0, last, 0)  # the last token's ID
        assert tr.value_of(run, trail[-1]) == run.ids[last]
        names = [a.step.split(".")[-1] for a in trail]
        assert names[-3:] == ["x0", "tok", "ids"]
        assert "final" in names and "resid2" in names
        assert tr.parse_trail(run, tr.trail_text(trail)) == trail  # the URL round trip


def test_a_forged_trail_is_refused_with_a_key(seeded):
    good = tr.trail_text(tr.trail_to_ids(seeded, tr.Address("logits", 0, 7, 40)))
    forged = {
        "logits-0-7-40~tok-0-3-0": "not_source",  # not an input of that logit
        "logits-0-9-40": "no_cell",  # 8 positions
        "nonsense": "bad_cell",
        "logits-0-7-40;drop": "bad_cell",
        "~".join([good] * 10): "too_long",
    }
    for text, key in forged.items():
        with pytest.raises(tr.TrailError) as caught:
            tr.parse_trail(seeded, text)
        assert caught.value.key == key, text
    assert tr.parse_trail(seeded, "") == ()
