"""Stage 10.2 (decoding) in AppTest: seeded draws against torch.multinomial, the
generation loop against a plain greedy / sampled loop over TinyDecoder, every bad input,
both exercises and the step-by-step loop."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import BAD_CELL, ONE_LANG, answer, assert_clean, open_page, page_text, reveal
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN
from tinyformer.model import TinyDecoder
from ui.i18n import catalogue

PAGE = "pages/10_decoding.py"
# The exercises answered before the first run: the draws' chart and the loop are drawn.
ANSWERED = {"_decoding.ex.expect.answered": 66.5, "_decoding.ex.scatter.answered": 0,
            "_decoding.ex.reads.answered": 1}
IDS = [3, 8, 12, 5, 17, 42, 23, 6]
PAYERS = ("商家", "买家", "未知")
RANDOM = {"decoding.loop_model": "random"}  # the article's random TinyDecoder, IDs


def counts(logits=(2.0, 1.0, 0.0), n: int = 100, seed: int = 0, t: float = 1.0) -> list[int]:
    probs = torch.softmax(torch.tensor(logits, dtype=torch.float64) / t, -1)
    drawn = torch.multinomial(probs, n, replacement=True,
                              generator=torch.Generator().manual_seed(seed))
    return torch.bincount(drawn, minlength=3).tolist()


def count_lines(found: list[int], expected: list[str]) -> list[str]:
    return [f"「{w}」: p = {p}, expected {e}" for w, (p, e) in
            zip(PAYERS, expected, strict=True)] + [f"drawn **{c}**" for c in found]


def loop(prompt: list[int], steps: int, t: float = 0.0, seed: int = 0) -> list[int]:
    """A plain loop: full forward pass, last logits, argmax or one seeded draw, append."""
    model, ids = TinyDecoder.seeded(7), list(prompt)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        logits = model(torch.tensor(ids))[0][0, -1].detach()
        probs = torch.softmax(logits / t, -1) if t else None
        ids.append(int(logits.argmax()) if t == 0 else
                   int(torch.multinomial(probs, 1, generator=generator)))
    return ids[len(prompt):]


def sequence(prompt: list[int], new: list[int]) -> str:
    return f"`{' '.join(map(str, prompt))}` + **`{' '.join(map(str, new))}`**"


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_page(PAGE, request.param, state=ANSWERED)


def trained_loop(question: str, steps: int = 5) -> tuple[str, list[tuple[str, float]]]:
    """A plain greedy loop on the shipped model: the text it writes, each step's pick."""
    trained = load_model()
    ids, picks = list(trained.vocab.encode(question).ids), []
    for _ in range(steps):
        probs = torch.softmax(trained.model(torch.tensor(ids))[0][0, -1].detach(), -1)
        ids.append(int(probs.argmax()))
        picks.append((trained.vocab.tokens[ids[-1]], float(probs.max())))
    return trained.vocab.decode(ids[-steps:]), picks


def test_defaults(default_page) -> None:
    assert_clean(default_page)
    text = page_text(default_page)
    assert "decoding." not in text and "errors." not in text  # every key is translated
    lang = default_page.query_params["lang"]
    assert catalogue(lang)["kit.random_weights"] not in text  # the trained model by default
    for number in ("66.5 ± 4.7", "24.5 ± 4.3", "9.0 ± 2.9", *map(str, counts())):
        assert number in text
    written, picks = trained_loop(RUNNING_EXAMPLE)
    assert written == "商家承担。"
    assert f"`{RUNNING_EXAMPLE}` + **`{written}`**" in text
    for char, p in picks:
        assert f"**{char}**（p = {p:.3f}）" in text


def test_the_twin_and_a_character_the_model_never_saw() -> None:
    at = open_page(PAGE, "zh", state=ANSWERED)
    next(b for b in at.button if (b.key or "").endswith("prompt_text~q2")).click().run()
    assert_clean(at)
    written, _ = trained_loop(TWIN)
    assert written == "买家承担。" and f"`{TWIN}` + **`{written}`**" in page_text(at)
    at.text_input("decoding.prompt_text").input("电脑坏了，运费谁承担？").run()
    assert_clean(at)
    assert [e.value for e in at.error] == [catalogue("zh")["errors.trained_question_unknown"]
                                           .format(chars="脑")]


def test_counts_follow_the_seed_the_draws_and_the_temperature() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.number_input("decoding.seed").set_value(42).run()
    at.number_input("decoding.n").set_value(1000).run()
    assert_clean(at)
    text = page_text(at)
    for line in count_lines(counts(n=1000, seed=42), [("0.665", "665.2"), ("0.245", "244.7"),
                                                      ("0.090", "90.0")]):
        assert line in text
    at.number_input("_decoding.T~n").set_value(0.0).run()  # greedy: every draw is 商家
    assert "drawn **1000**" in page_text(at) and "drawn **0**" in page_text(at)
    assert at.query_params["decoding.seed"] == "42"


def test_a_shared_link_reproduces_the_draws_and_the_loop() -> None:
    params = {**RANDOM, "decoding.z": "0, 1, 2", "decoding.T": "2", "decoding.seed": "5",
              "decoding.prompt": "1, 2, 3", "decoding.steps": "3", "decoding.loop_T": "0.5",
              "decoding.loop_seed": "9"}
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    text = page_text(at)
    for c in counts((0.0, 1.0, 2.0), seed=5, t=2.0):
        assert f"drawn **{c}**" in text
    assert sequence([1, 2, 3], loop([1, 2, 3], 3)) in text
    assert sequence([1, 2, 3], loop([1, 2, 3], 3, 0.5, 9)) in text


def test_the_random_model_labelled_and_one_first_token_then_different_continuations() -> None:
    at = open_page(PAGE, params=RANDOM, state=ANSWERED)
    assert_clean(at)
    text = page_text(at)
    assert catalogue("en")["kit.random_weights"] in text
    assert "40 (0.054), 20 (0.047), 35 (0.044)" in text  # stage 11's top 3
    assert sequence(IDS, loop(IDS, 5)) in text
    assert sequence(IDS, loop(IDS, 5, 1.0, 0)) in text
    assert 0 in loop(IDS, 5)  # greedy picks ID 0 at its last step: [PAD] on stage 1.1
    assert "IDs on screen: 0 = [PAD], 3 = " in text
    first = loop(IDS, 1)[0]
    rests = [loop([*IDS, first], 4, 1.0, seed) for seed in (1, 2, 3)]
    for rest in rests:
        assert f"**`{first}`** + `{' '.join(map(str, rest))}`" in text
    assert len({tuple(r) for r in rests}) > 1  # the same first token went on differently


@pytest.mark.parametrize(("key", "bad"), [
    ("decoding.prompt", ""), ("decoding.prompt", "abc"), ("decoding.prompt", "1, 2, 50"),
    ("decoding.prompt", "-1"), ("decoding.prompt", ", ".join(["1"] * 17)),
    ("decoding.prompt", ", ".join(["1"] * 12)),  # 12 + 5 new tokens > 16 positions
    ("decoding.steps", "99"), ("decoding.steps", "0"), ("decoding.steps", "nan"),
    ("decoding.n", "0"), ("decoding.n", "1e300"), ("decoding.n", "abc"),
    ("decoding.T", "-1"), ("decoding.T", "nan"), ("decoding.loop_T", "1e300"),
    ("decoding.seed", "-1"), ("decoding.loop_seed", "2.5"), ("decoding.loop.step", "9"),
    *[("decoding.z", bad) for bad in (BAD_CELL, "1, 2")],
])
def test_bad_input_gives_one_message_and_the_page_goes_on(key: str, bad: str) -> None:
    at = open_page(PAGE, params={**RANDOM, key: bad}, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1
    text = page_text(at)
    assert "66.5 ± 4.7" in text  # the draws section still renders
    stops_the_loop = bad == ", ".join(["1"] * 12)  # a valid prompt with no room to grow
    assert ("40 (0.054), 20 (0.047), 35 (0.044)" in text) != stops_the_loop


def test_a_prompt_too_long_for_the_steps_says_why() -> None:
    at = open_page(PAGE, "zh", params={**RANDOM, "decoding.prompt": ", ".join(["1"] * 12)},
                   state=ANSWERED)
    assert at.error[0].value == catalogue("zh")["errors.generation_too_long"].format(
        prompt=12, steps=5, total=17, max_length=16)


def test_exercises_come_before_what_answers_them(lang: str) -> None:
    at = open_page(PAGE, lang, params=RANDOM)
    assert not at.success
    text = page_text(at)
    assert "66.52" not in text and "66.5 ± 4.7" not in text  # no n · p before the exercise
    assert sequence(IDS, loop(IDS, 5)) not in text  # no step line before "reads"
    reveal(at, "decoding.reads", 1)
    assert len(at.success) == 1
    assert sequence(IDS, loop(IDS, 5)) in page_text(at)
    answer(at, "decoding.expect", 66.5)
    assert len(at.success) == 2 and "66.5" in at.success[0].value  # the draws come first
    assert "100 × 0.6652 = 66.52" in page_text(at)  # the worked steps
    assert "66.5 ± 4.7" not in page_text(at)  # the chart waits for the why exercise
    reveal(at, "decoding.scatter", 0)
    assert "66.5 ± 4.7" in page_text(at)
    answer(at, "decoding.expect", 60.0)
    assert len(at.warning) == 1


def test_the_loop_step_by_step_and_fewer_steps() -> None:
    at = open_page(PAGE, params={**RANDOM, "decoding.loop.step": "2"}, state=ANSWERED)
    assert_clean(at)
    text = page_text(at)
    new = loop(IDS, 5)
    assert sequence(IDS, new[:2]) in text and sequence(IDS, new[:3]) not in text
    next(b for b in at.button if (b.key or "").endswith("loop.step~next")).click().run()
    assert sequence(IDS, new[:3]) in page_text(at)
    at.number_input("decoding.steps").set_value(2).run()  # the step shown (3) no longer exists
    assert_clean(at)
    assert not at.error and sequence(IDS, new[:2]) in page_text(at)
