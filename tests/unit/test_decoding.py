"""The LM head (tied to the embedding), the generation loop, and the same loop without
and with the K/V cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.decoding import (
    MAX_NEW_TOKENS,
    cached_or_recomputed,
    cut_of,
    generate,
    shared_start,
    tied_logits,
    tied_sizes,
)
from tinyformer.model import DecoderConfig, TinyDecoder
from tinyformer.sampling import next_token_probs

ARTICLE_IDS = [3, 8, 12, 5, 17, 42, 23, 6]


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder.seeded(7)  # the article's program: random, untrained


# --- from the last hidden state to logits ---------------------------------------------
def test_tied_head_on_the_teaching_example() -> None:
    h = torch.tensor([2.0, 1.0])
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, -1.0]])  # 商家, 买家, 未知
    head = tied_logits(h, table)
    assert head.logits.tolist() == [2.0, 1.0, 0.0]
    assert [round(p, 3) for p in torch.softmax(head.logits, -1).tolist()] == [0.665, 0.245, 0.090]


def test_tied_head_is_a_linear_layer_with_the_embedding_as_its_weight(gen) -> None:
    table = torch.randn(50, 8, generator=gen)  # [V, d], nn.Embedding's weight layout
    h = torch.randn(8, generator=gen)
    torch.testing.assert_close(tied_logits(h, table).logits, F.linear(h, table))
    embedding = torch.nn.Embedding.from_pretrained(table)
    head = torch.nn.Linear(8, 50, bias=False)
    head.weight = embedding.weight  # tying, as GPT-2 style code does it
    torch.testing.assert_close(tied_logits(h, table).logits, head(h).detach())


@pytest.mark.parametrize(("h", "table"), [(torch.ones(3), torch.ones(4, 2)),
                                          (torch.ones(2, 2), torch.ones(4, 2)),
                                          (torch.ones(2), torch.ones(2))])
def test_tied_head_shapes_must_fit(h, table) -> None:
    with pytest.raises(ShapeError) as err:
        tied_logits(h, table)
    assert err.value.key == "lm_head_shapes"


def test_tying_saves_the_head(model: TinyDecoder) -> None:
    sizes = tied_sizes(DecoderConfig())
    assert sizes.head == model.lm_head.weight.numel() == 400
    assert sizes.untied == sum(p.numel() for p in model.parameters()) == 1784
    assert sizes.tied == 1384


# --- the generation loop ----------------------------------------------------------------
def test_greedy_first_step_is_the_articles_top_candidate(model: TinyDecoder) -> None:
    run = generate(model, ARTICLE_IDS, 1)
    step = run.steps[0]
    assert [(i, f"{p:.4f}") for i, p in step.top] == [(40, "0.0538"), (20, "0.0472"),
                                                       (35, "0.0444")]
    assert step.chosen == 40 and run.new == (40,)
    assert step.context == tuple(ARTICLE_IDS) and step.position == 8


def test_greedy_is_argmax_of_a_full_forward_pass_each_step(model: TinyDecoder) -> None:
    run = generate(model, ARTICLE_IDS, 6)
    ids = list(ARTICLE_IDS)
    for step in run.steps:
        logits, _ = model(torch.tensor(ids))  # no cache: the whole sequence again
        last = logits[0, -1].detach()
        torch.testing.assert_close(step.logits, last, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(step.probs, torch.softmax(last, -1), atol=1e-6, rtol=1e-5)
        assert step.context == tuple(ids)
        assert step.chosen == int(last.argmax())
        ids.append(step.chosen)
    assert run.ids == tuple(ids) and len(run.new) == 6


def test_sampling_draws_with_one_seeded_generator(model: TinyDecoder) -> None:
    settings = {"temperature": 0.8, "top_k": 10, "top_p": 0.9}
    run = generate(model, ARTICLE_IDS, 5, seed=11, **settings)
    generator, ids = torch.Generator().manual_seed(11), list(ARTICLE_IDS)
    for step in run.steps:
        logits = model(torch.tensor(ids))[0][0, -1].detach()
        probs = next_token_probs(logits, **settings).probs
        torch.testing.assert_close(step.sampling.probs, probs, atol=1e-6, rtol=1e-5)
        expected = int(torch.multinomial(step.sampling.probs, 1, generator=generator))
        assert step.chosen == expected
        assert step.sampling.kept[step.chosen]  # never a cut token
        ids.append(step.chosen)
    assert generate(model, ARTICLE_IDS, 5, seed=11, **settings).new == run.new  # repeatable


def test_the_same_first_token_can_go_on_differently(model: TinyDecoder) -> None:
    first = generate(model, ARTICLE_IDS, 1).new[0]
    runs = {generate(model, [*ARTICLE_IDS, first], 4, temperature=1.0, seed=s).new
            for s in range(1, 4)}
    assert len(runs) > 1


def test_top_candidates_put_equal_probabilities_lower_id_first() -> None:
    model = TinyDecoder.seeded(0, vocab=6, width=4, heads=1, max_length=4)
    with torch.no_grad():
        model.lm_head.weight.zero_()  # every logit 0: six equal probabilities
    step = generate(model, [1], 1, top=3).steps[0]
    assert [i for i, _ in step.top] == [0, 1, 2]
    assert step.chosen == 0  # greedy ties go to the lowest id


def test_shared_start() -> None:
    assert shared_start((40, 44, 43), (40, 44, 7)) == 2
    assert shared_start((40,), (47,)) == 0
    assert shared_start((1, 2), (1, 2)) == 2


@pytest.mark.parametrize(
    ("prompt", "steps", "settings", "key"),
    [
        ([], 3, {}, "prompt_empty"),
        (ARTICLE_IDS, 0, {}, "generation_steps_invalid"),
        (ARTICLE_IDS, MAX_NEW_TOKENS + 1, {}, "generation_steps_invalid"),
        (ARTICLE_IDS, 2.5, {}, "generation_steps_invalid"),
        (ARTICLE_IDS, 9, {}, "generation_too_long"),
        (list(range(16)), 1, {}, "generation_too_long"),
        ([3, 50], 2, {}, "ids_out_of_range"),
        ([3, -1], 2, {}, "ids_out_of_range"),
        (ARTICLE_IDS, 2, {"temperature": -1.0}, "temperature_negative"),
        (ARTICLE_IDS, 2, {"top_k": 0}, "top_k_invalid"),
        (ARTICLE_IDS, 2, {"top_p": 0.0}, "top_p_invalid"),
        (ARTICLE_IDS, 2, {"temperature": 1.0, "seed": -3}, "seed_invalid"),
    ],
)
def test_bad_loops_are_refused(model: TinyDecoder, prompt, steps, settings, key: str) -> None:
    with pytest.raises((ParameterError, ShapeError)) as err:
        generate(model, prompt, steps, **settings)
    assert err.value.key == key


# --- the same loop without and with the cache (stage 10.3) -------------------------------


def test_the_cache_computes_only_the_new_rows_and_changes_no_logit(model) -> None:
    loop = cached_or_recomputed(model, ARTICLE_IDS, 5)
    assert loop.new == generate(model, ARTICLE_IDS, 5).new  # stage 10.2's greedy run
    assert [s.read for s in loop.steps] == [8, 9, 10, 11, 12]
    assert [s.rows_recomputed for s in loop.steps] == [8, 9, 10, 11, 12]
    assert [s.rows_cached for s in loop.steps] == [8, 1, 1, 1, 1]
    # The uncached run is full forward passes (test_greedy_is_argmax_of_a_full_forward_pass
    # _each_step): its logits agree with the cached ones up to float rounding.
    assert 0 <= max(s.logit_gap for s in loop.steps) < 1e-5


def test_the_cached_loop_refuses_what_generate_refuses(model) -> None:
    with pytest.raises(ShapeError) as info:
        cached_or_recomputed(model, [1] * 12, 5)
    assert info.value.key == "generation_too_long"


@pytest.mark.parametrize("settings", [{}, {"temperature": 0.5}, {"temperature": 0},
                                      {"top_k": 2}, {"top_p": 0.6}])
def test_a_kept_cut_is_next_token_probs_of_the_same_logits(settings: dict) -> None:
    logits = (2.0, 1.0, 0.0)
    kept = cut_of(logits, **settings)
    fresh = next_token_probs(torch.tensor(logits, dtype=torch.float64), **settings)
    for field in ("scaled_logits", "probs_before_filter", "kept", "probs"):
        assert torch.equal(getattr(kept, field), getattr(fresh, field)), field
    assert cut_of(logits, **settings) is kept  # the next run reads the same trace
