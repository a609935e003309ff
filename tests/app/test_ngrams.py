"""Stage 0.1 in AppTest: n-gram counts, the limits of counting and one-hot vectors, with the
worked numbers of docs/curriculum.md, stage 0, live."""

from __future__ import annotations

import re

import pytest

from tests.app.helpers import (
    ONE_LANG,
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
    text_above,
)
from ui.fmt import num

PAGE = "pages/00_ngrams.py"
BIGRAM = [r"P(\text{漫} \mid \text{动}) = \frac{6}{10} = 0.600",
          r"P(\text{物} \mid \text{动}) = \frac{4}{10} = 0.400"]
TRIGRAM = r"P(\text{漫} \mid \text{看动}) = \frac{4}{6} = 0.667"
SIZE_25 = ["100{,}000^{5} = 10^{25}", "10,000,000,000,000,000,000,000,000"]


# The exercises answered, as if by the learner: what they gate is drawn.
ANSWERED = {"_ngrams.ex.trigram.answered": 0.667, "_ngrams.ex.trigram_why.answered": 2,
            "_ngrams.ex.pear.answered": 0}


def opened(lang: str = "en", **kwargs):
    return open_page(PAGE, lang, state=ANSWERED, **kwargs)


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return opened(request.param), request.param


def next_table(at) -> dict[str, tuple[str, str]]:
    """The count table of the playground: next character -> (count, probability)."""
    for frame in tables(at):
        if frame.shape[1] == 3 and frame.index.tolist()[0] == 0:
            return {str(r[0]): (str(r[1]), str(r[2])) for r in frame.values}
    return {}


def orders(at) -> dict[str, list[str]]:
    """The orders heatmap: row label -> cells."""
    frame = next(f for f in tables(at) if any("n=3" in str(i) for i in f.index))
    return {str(i).split(" ·")[0]: [str(v) for v in row]
            for i, row in zip(frame.index, frame.values, strict=True)}


def test_defaults_show_every_worked_number(default_page) -> None:
    at, lang = default_page
    assert_clean(at)
    text = page_text(at)
    assert "ngrams." not in text and "errors." not in text  # every key translated
    for number in [*BIGRAM, *SIZE_25]:
        assert number in text
    assert next_table(at) == {"漫": ("6", "0.600"), "物": ("4", "0.400")}
    assert orders(at)["n=2"] == ["0.600", "0.400"]
    assert orders(at)["n=3"] == ["0.667", "0.333"]  # the trigram reads 看动
    # sparsity: 吃苹果 seen, 吃梨 never
    assert r"P(\text{梨} \mid \text{吃}) = \frac{0}{2} = 0.000" in text
    assert r"P(\text{苹} \mid \text{吃}) = \frac{2}{2} = 1.000" in text
    # one-hot: every pair of different words has dot product 0
    dots = [f for f in tables(at) if "动物" in f.index]
    assert len(dots) == 2  # the vectors and their dot products
    for frame in dots:
        assert [list(map(str, row)) for row in frame.values] == [
            ["1" if i == j else "0" for j in range(4)] for i in range(4)]
    assert {"en": "100,000 components", "zh": "100,000 个分量"}[lang] in text


def test_singular_and_plural(default_page) -> None:
    at, lang = default_page
    text = page_text(at)
    if lang == "en":
        assert "n − 1 = 1 character: " in text
        assert not re.search(r"(?<!− )\b1 characters", text)  # "n − 1 characters" is fine
        assert "occurs **2** times" in text and "occurs **0** times" in text
        assert "V = 70 and n = 5 allow 1,680,700,000 different windows" in text
        assert "(< 0.01%)" in text  # not a misleading 0.00%


def test_exercise_answers_are_not_shown_above_them(default_page) -> None:
    at, _ = default_page
    above = text_above(at, "_ngrams.ex.trigram.value")
    assert "0.667" not in above and "4/6" not in above and r"\frac{4}{6}" not in above
    above = text_above(at, "_ngrams.ex.pear.choice")
    assert r"\frac{0}{2}" not in above


def has_orders(at) -> bool:
    return any(any("n=3" in str(i) for i in f.index) for f in tables(at))


@pytest.mark.parametrize("lang", ONE_LANG)
def test_number_exercise_and_its_why_come_before_the_orders_table(lang) -> None:
    at = open_page(PAGE, lang)
    assert not has_orders(at) and "0.667" not in page_text(at)
    answer(at, "ngrams.trigram", 0.667)
    assert len(at.success) == 1 and "0.667" in at.success[0].value
    assert TRIGRAM in explanations(at)  # the worked steps, from the counts
    assert not has_orders(at)  # the "why" exercise beside it is still open
    reveal(at, "ngrams.trigram_why", 2)
    assert has_orders(at) and orders(at)["n=3"] == ["0.667", "0.333"]
    answer(at, "ngrams.trigram", 0.6)  # the bigram's answer is not the trigram's
    assert len(at.warning) == 1 and "0.667" in at.warning[0].value


@pytest.mark.parametrize("lang", ONE_LANG)
def test_choice_exercise_comes_before_the_phrases(lang) -> None:
    at = open_page(PAGE, lang)
    pear = r"P(\text{梨} \mid \text{吃}) = \frac{0}{2} = 0.000"
    assert pear not in page_text(at)
    reveal(at, "ngrams.pear", 0)
    assert len(at.success) == 1 and "0/2" in at.success[0].value
    text = page_text(at)
    back_off = {"zh": "退回到更短的上下文", "en": "back off to a shorter context"}[lang]
    assert pear in text and back_off in text  # smoothing and back-off named


def test_trigram_via_slider() -> None:
    at = open_page(PAGE)
    assert "Kittens are lovely animals." in page_text(at)  # the corpus, glossed in English
    at.slider("ngrams.n").set_value(3).run()
    assert_clean(at)
    assert next_table(at) == {"漫": ("4", "0.667"), "物": ("2", "0.333")}
    text = page_text(at)
    assert TRIGRAM in text and r"P(\text{物} \mid \text{看动}) = \frac{2}{6} = 0.333" in text
    assert "2 characters: " in text  # n − 1 = 2, plural
    assert "gray[" not in text  # nothing ignored: the window holds all of 看动
    assert at.query_params["ngrams.n"] == "3"


def test_a_link_to_a_step_shows_the_steps_up_to_it() -> None:
    at = open_page(PAGE, params={"ngrams.hand.step": "1"})  # count, not yet divided
    assert_clean(at)
    counts = next(f for f in tables(at) if f.shape[1] == 2 and f.index.tolist()[0] == 0)
    assert [list(map(str, row)) for row in counts.values] == [["漫", "6"], ["物", "4"]]
    assert next_table(at) == {} and BIGRAM[0] not in page_text(at)
    next(b for b in at.button if (b.key or "").endswith("~next")).click().run()
    assert at.query_params["ngrams.hand.step"] == "2"
    assert next_table(at) == {"漫": ("6", "0.600"), "物": ("4", "0.400")}
    assert all(number in page_text(at) for number in BIGRAM)


def test_shared_link_and_the_window_forgets() -> None:
    at = open_page(PAGE, params={"ngrams.n": "3", "ngrams.ctx": "我看动"})
    assert_clean(at)
    assert next_table(at)["漫"] == ("4", "0.667")
    assert ":gray[~~我~~]" in page_text(at)
    at = open_page(PAGE, params={"ngrams.ctx": "吃动"})  # another earlier character, same answer
    assert next_table(at)["漫"] == ("6", "0.600")


def test_typed_context_updates_the_counts() -> None:
    at = open_page(PAGE)
    at.text_input("ngrams.ctx").input("吃").run()
    assert_clean(at)
    assert next_table(at) == {"苹": ("2", "1.000")}
    assert at.query_params["ngrams.ctx"] == "吃"


def test_unigram_counts_the_whole_corpus() -> None:
    at = open_page(PAGE, params={"ngrams.n": "1", "ngrams.ctx": ""})
    assert_clean(at)
    table = next_table(at)
    assert len(table) == 10  # the ten most frequent, as the column says
    assert table["，"] == ("5", num(5 / 167)) and table["动"] == ("10", num(10 / 167))


@pytest.mark.parametrize(("params", "message"), [
    ({"ngrams.n": "3", "ngrams.ctx": "吃梨"}, "never occurs"),  # sparsity
    ({"ngrams.ctx": "看X"}, "「X」"),  # a character the corpus never had, inside the window
    ({"ngrams.n": "4", "ngrams.ctx": "动"}, "holds only 1 character"),
])
def test_contexts_without_a_prediction(params, message) -> None:
    at = open_page(PAGE, params=params)
    assert_clean(at)
    assert [w.value for w in at.warning if message in w.value]
    assert next_table(at) == {}


@pytest.mark.parametrize("ctx", ["", " ", "*$_\\{}", "nan", "1e300", "好" * 12])
def test_odd_contexts_never_break_the_page(ctx: str) -> None:
    at = open_page(PAGE, params={"ngrams.n": "4"})
    at.text_input("ngrams.ctx").input(ctx).run()
    assert_clean(at)
    assert len(at.warning) == 1


@pytest.mark.parametrize("lang", ONE_LANG)
def test_bad_link_values_fall_back_with_a_note(lang) -> None:
    params = {"ngrams.n": "9", "ngrams.ctx": "好" * 40, "ngrams.V": "1e300", "ngrams.tn": "abc"}
    at = open_page(PAGE, lang, params=params)
    assert_clean(at)
    assert len(at.error) == 4
    text = page_text(at)
    for number in [*BIGRAM, *SIZE_25]:
        assert number in text


def test_phrase_edit_and_bad_phrases() -> None:
    at = opened()
    at.text_input("ngrams.pb").input("梨很甜").run()
    assert_clean(at)
    text = page_text(at)
    assert "「梨很甜」 occurs **1** time " in text  # singular
    assert r"P(\text{很} \mid \text{梨}) = \frac{1}{2} = 0.500" in text
    for bad in ("", "吃", "吃X", "inf"):
        at.text_input("ngrams.pb").input(bad).run()
        assert_clean(at)
        assert len(at.error) == 1, bad


def test_table_size_follows_its_inputs() -> None:
    at = open_page(PAGE, params={"ngrams.V": "1000", "ngrams.tn": "3"})
    text = page_text(at)
    assert "1{,}000^{3} = 10^{9}" in text and "**1,000,000,000**" in text
    assert "V = 70 and n = 3 allow 343,000 different windows" in text
    assert "1,000 components" in text  # the one-hot width follows V
    assert "Only 4 of the V = 1,000 columns are shown" in text
    at.number_input("ngrams.V").set_value(3).run()
    at.slider("ngrams.tn").set_value(4).run()
    text = page_text(at)
    assert "3^{4} = 81" in text and "**81**" in text and "3 components" in text
    assert "V = 3 gives fewer than 4 axes" in text
    at.number_input("ngrams.V").set_value(1).run()
    assert "1 component," in page_text(at)
    at = open_page(PAGE, params={"ngrams.V": "1000000", "ngrams.tn": "10"})  # the bounds
    text = page_text(at)
    assert "1{,}000{,}000^{10} = 10^{60}" in text and f"**{10**60:,}**" in text
    at = open_page(PAGE, params={"ngrams.V": "7", "ngrams.tn": "10"})
    text = page_text(at)
    assert r"7^{10} \approx 2.825 \times 10^{8}" in text and "**282,475,249**" in text


@pytest.mark.parametrize(("v", "n", "shown"), [
    ("0", "2", "100{,}000^{2} = 10^{10}"), ("1000001", "2", "100{,}000^{2} = 10^{10}"),
    ("10", "11", "10^{5} = 100{,}000"), ("10", "0", "10^{5} = 100{,}000")])
def test_table_size_refuses_values_outside_its_bounds(v, n, shown) -> None:
    at = open_page(PAGE, params={"ngrams.V": v, "ngrams.tn": n})  # one bad, one good
    assert_clean(at)
    assert len(at.error) == 1
    assert shown in page_text(at)  # the bad one is back at its default


def test_clicked_cells_explain_with_live_numbers() -> None:
    at = open_page(PAGE, state={**ANSWERED, **click(("ngrams.orders_map", 2, 0),
                                                     ("ngrams.onehot_dots", 0, 1))})
    assert_clean(at)
    text = explanations(at)
    assert TRIGRAM in text
    assert (r"e_{\text{苹果}} \cdot e_{\text{梨}} = 1\cdot0 + 0\cdot1 + 0\cdot0 + 0\cdot0 = 0"
            in text)
    at = opened(params={"ngrams.orders_map": "3,0"})  # 4-gram: 看动 is too short
    assert "holds only 2 characters" in explanations(at)
    at = opened(params={"ngrams.orders_map": "0,0"})
    assert rf"P(\text{{漫}}) = \frac{{6}}{{167}} = {num(6 / 167)}" in explanations(at)


def test_orders_the_context_is_too_short_for_have_blank_cells() -> None:
    """看动 (2 characters) feeds n = 1..3; the 4-gram needs 3, so its row holds no number
    (not 0.000, which would claim a probability of zero)."""
    at = opened()
    orders = next(f for f in tables(at) if any("n=4" in str(i) for i in f.index))
    four, three = (orders.loc[next(i for i in orders.index if f"n={k}" in i)] for k in (4, 3))
    assert all(cell == "" for cell in four)
    assert all(re.fullmatch(r"\d\.\d{3}", cell) for cell in three)
