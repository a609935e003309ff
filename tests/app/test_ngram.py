"""Stage 0 page: n-gram counts, the limits of counting, one-hot, embeddings, whitening."""

from __future__ import annotations

import pytest
import torch

from tests.app.conftest import assert_clean, open_page, page_text, reveal, tables
from tinyformer.embedding import anisotropic_cloud, mean_pairwise_cosine, whiten
from ui.fmt import num

PAGE = "pages/00_before_transformers.py"


def table_rows(at, label: str, rows: int | None = None) -> dict[str, list[str]]:
    """Rows (label -> cells) of the first table whose index holds `label` (and has `rows`)."""
    for table in tables(at):
        frame = table
        if label in [str(i) for i in frame.index] and rows in (None, len(frame)):
            return {str(i): [str(v) for v in row] for i, row in zip(frame.index, frame.values,
                                                                      strict=True)}
    raise AssertionError(f"no table with row {label!r}")


def next_table(at) -> dict[str, tuple[str, str]]:
    """The count / probability table: next character -> (count, probability)."""
    for table in tables(at):
        frame = table
        if frame.shape[1] == 3 and frame.index.tolist()[0] == 0:
            return {str(r[0]): (str(r[1]), str(r[2])) for r in frame.values}
    return {}


def test_renders_clean_in_both_languages(lang: str) -> None:
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    assert "ngram." not in text and "errors." not in text  # every key is translated
    assert not at.error
    title = {"en": "Before Transformers", "zh": "Transformer 之前"}[lang]
    assert title in at.title[0].value


def test_worked_numbers_at_defaults(lang: str) -> None:
    at = open_page(PAGE, lang)
    text = page_text(at)
    # bigram (n = 2, one character of context): the typed 看动 is read as 动
    assert next_table(at) == {"漫": ("6", "0.600"), "物": ("4", "0.400")}
    assert r"P(\text{漫}\mid \text{动}) = 6/10 = 0.600" in text
    assert r"P(\text{物}\mid \text{动}) = 4/10 = 0.400" in text
    assert ":gray-background[看]" in text  # the ignored part of the context
    orders = table_rows(at, "n=3 · " + {"en": "trigram", "zh": "三元（trigram）"}[lang])
    assert [v for k, v in orders.items() if k.startswith("n=2")] == [["0.600", "0.400"]]
    assert [v for k, v in orders.items() if k.startswith("n=3")] == [["0.667", "0.333"]]
    # sparsity: 吃苹果 is seen, 吃梨 never
    assert r"P(\text{梨}\mid \text{吃}) = 0/2 = 0.000" in text
    assert r"P(\text{苹}\mid \text{吃}) = 2/2 = 1.000" in text
    assert "**0**" in text and "**2**" in text
    # V^n
    assert "100{,}000^{5} = 10^{25}" in text
    assert "10,000,000,000,000,000,000,000,000" in text
    # one-hot: every pair of different words has dot product 0
    vectors, dots = (t for t in tables(at) if "动物" in t.index)
    for frame, one, zero in ((vectors, "1", "0"), (dots, "1.000", "0.000")):
        assert [list(map(str, row)) for row in frame.values] == [
            [one if i == j else zero for j in range(4)] for i in range(4)]
    # embeddings: 苹果 and 梨 point the same way, 动漫 away from both
    cos = table_rows(at, "动漫", 3)
    assert cos["苹果"] == ["1.000", "0.993", "-0.933"]
    assert r"\cos(\text{苹果}, \text{梨}) = \frac{1.440}{1.204\cdot1.204} = 0.993" in text
    # whitening: exact readouts, a narrow cone before, about 0 after
    cloud = anisotropic_cloud(200, torch.Generator().manual_seed(0))
    before, after = mean_pairwise_cosine(cloud), mean_pairwise_cosine(whiten(cloud).whitened)
    assert [m.value for m in at.metric] == [num(before), num(after)]
    assert before > 0.9 and abs(after) < 0.05


def test_trigram_via_slider() -> None:
    at = open_page(PAGE, "en")
    at.slider("n").set_value(3).run()
    assert_clean(at)
    assert next_table(at) == {"漫": ("4", "0.667"), "物": ("2", "0.333")}
    text = page_text(at)
    assert r"P(\text{漫}\mid \text{看动}) = 4/6 = 0.667" in text
    assert "gray-background" not in text  # nothing ignored: the window holds all of it


def test_shared_link_trigram_and_window_forgets() -> None:
    at = open_page(PAGE, "en", {"n": 3, "ctx": "我看动"})
    assert_clean(at)
    assert next_table(at)["漫"] == ("4", "0.667")
    assert ":gray-background[我]" in page_text(at)
    # a different earlier character, the same bigram answer: the window forgot it
    at = open_page(PAGE, "en", {"n": 2, "ctx": "吃动"})
    assert next_table(at)["漫"] == ("6", "0.600")


def test_unigram_counts_whole_corpus() -> None:
    at = open_page(PAGE, "en", {"n": 1, "ctx": ""})
    assert_clean(at)
    table = next_table(at)
    assert table["，"] == ("5", num(5 / 167))
    assert table["动"] == ("10", num(10 / 167))
    assert "more characters" in page_text(at)


def test_unseen_context_and_unknown_characters() -> None:
    at = open_page(PAGE, "en", {"n": 3, "ctx": "吃梨"})
    assert_clean(at)
    assert any("never occurs" in w.value for w in at.warning)
    assert next_table(at) == {}
    at.text_input("ctx").input("看X").run()  # unknown inside the window
    assert_clean(at)
    assert any("「X」" in e.value for e in at.error)
    at = open_page(PAGE, "en", {"n": 2, "ctx": "X动"})  # unknown but outside the window
    assert_clean(at)
    assert any("「X」" in i.value and "outside" in i.value for i in at.info)
    assert next_table(at)["漫"] == ("6", "0.600")


@pytest.mark.parametrize("ctx", ["", "动", " ", "*$_\\{}", "好" * 40, "nan", "1e300"])
def test_bad_context_never_breaks_the_page(ctx: str) -> None:
    at = open_page(PAGE, "en", {"n": 4, "ctx": ctx})
    assert_clean(at)
    assert at.error or at.warning


def test_phrases_edit_and_bad_input() -> None:
    at = open_page(PAGE, "en")
    at.text_input("pb").input("梨很甜").run()
    assert_clean(at)
    text = page_text(at)
    assert "「梨很甜」 occurs **1** times" in text
    assert r"P(\text{很}\mid \text{梨}) = 1/2 = 0.500" in text
    for bad in ("", "吃", "吃X", "inf"):
        at.text_input("pb").input(bad).run()
        assert_clean(at)
        assert at.error, bad


def test_table_size_inputs() -> None:
    at = open_page(PAGE, "en", {"V": 1000, "tn": 3})
    assert "1{,}000^{3} = 10^{9}" in page_text(at)
    at.number_input("V").set_value(3).run()
    at.slider("tn").set_value(4).run()
    text = page_text(at)
    assert r"3^{4} = \approx 8.100 \times 10^{1}" in text and "**81**" in text
    for bad in (0, 10**9):  # a link outside the widget's range falls back to the default
        at = open_page(PAGE, "en", {"V": bad, "tn": 2})
        assert_clean(at)
        assert "100{,}000^{2} = 10^{10}" in page_text(at)


def test_corpus_table_size_follows_n() -> None:
    at = open_page(PAGE, "en", {"n": 3})
    assert "V = 70 and n = 3 give 343,000 possible windows" in page_text(at)


def test_embedding_edit_updates_cosines() -> None:
    at = open_page(PAGE, "en")
    at.text_input("E").input("1, 0; 0, 1; -1, 0").run()
    assert_clean(at)
    cos = table_rows(at, "动漫", 3)
    assert cos["苹果"] == ["1.000", "0.000", "-1.000"]
    assert cos["梨"] == ["0.000", "1.000", "0.000"]


@pytest.mark.parametrize("bad", ["nan, 1; 1, 1; 1, 1", "inf, 1; 1, 1; 1, 1",
                                 "1e300, 1; 1, 1; 1, 1", "", "1, 2; 3, 4", "1, 2, 3; 1, 2, 3; 1",
                                 "a, b; c, d; e, f"])
def test_bad_embedding_input_keeps_last_value(bad: str) -> None:
    at = open_page(PAGE, "en")
    at.text_input("E").input(bad).run()
    assert_clean(at)
    assert at.error
    assert table_rows(at, "动漫", 3)["苹果"] == ["1.000", "0.993", "-0.933"]


def test_zero_vector_has_no_cosine() -> None:
    at = open_page(PAGE, "en", {"E": "0, 0; 1, 1; 1, 0"})
    assert_clean(at)
    assert any("zero vector" in e.value for e in at.error)
    assert table_rows(at, "动漫", 3)["梨"] == ["NaN", "1.000", "0.707"]


def test_clicked_cells_explain_with_live_numbers() -> None:
    at = open_page(PAGE, "en")
    at.session_state["cos_map"] = {"selection": {"points": [{"x": 1, "y": 0}]}}
    at.session_state["orders_map"] = {"selection": {"points": [{"x": 0, "y": 2}]}}
    at.session_state["onehot_dots"] = {"selection": {"points": [{"x": 1, "y": 0}]}}
    at.run()
    assert_clean(at)
    text = page_text(at)
    assert (r"\frac{0.9\cdot0.8 + 0.8\cdot0.9}{1.204\cdot1.204} = \frac{1.440}{1.450} = 0.993"
            in text)
    assert r"P(\text{漫}\mid \text{看动}) = 4/6 = 0.667" in text
    assert r"e_{苹果}\cdot e_{梨} = 1\cdot0 + 0\cdot1 + 0\cdot0 + 0\cdot0 = 0" in text


def test_whitening_follows_points_and_seed() -> None:
    at = open_page(PAGE, "en")
    at.slider("pts").set_value(20).run()
    at.number_input("seed").set_value(7).run()
    assert_clean(at)
    cloud = anisotropic_cloud(20, torch.Generator().manual_seed(7))
    expected = [num(mean_pairwise_cosine(cloud)), num(mean_pairwise_cosine(whiten(cloud).whitened))]
    assert [m.value for m in at.metric] == expected
    at = open_page(PAGE, "en", {"pts": 500, "seed": -3})  # an out-of-range seed: the default
    assert_clean(at)
    cloud = anisotropic_cloud(500, torch.Generator().manual_seed(0))
    assert at.metric[0].value == num(mean_pairwise_cosine(cloud))


def test_exercise_reveals_the_bigram_answer() -> None:
    at = open_page(PAGE, "en")
    reveal(at, "ngram", 0)
    assert_clean(at)
    assert any("6/10 = 0.600" in s.value for s in at.success)
