"""Stage 12 in AppTest: the three backbones' masks and the cross-attention example, live."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import (
    ONE_LANG,
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from tinyformer.lessons.backbones import shift_right, split_words, translation_example
from ui.fmt import num
from ui.i18n import catalogue

PAGE = "pages/12_backbones.py"
SOURCE, TARGET = "who pays the shipping ?", "运费 谁 承担"
FACTS = ("GPT", "Llama", "Qwen", "Post-Norm", "请解释Transformer", "H_enc [5, 8]",
         "H_dec [3, 8]", "[3 × 5]", "Add & Norm")
# The three exercises answered: cross-attention's steps (3 and 4) are drawn only then.
ANSWERED = {f"_backbones.ex.{name}.answered": value
            for name, value in (("qkv", 1), ("cells", 15.0), ("rect", 0))}


def expected(source: str = SOURCE, target: str = TARGET, d: int = 8, seed: int = 0):
    """The cross-attention weights as PyTorch's softmax gives them from the page's Q and K
    (the layers themselves are checked against nn.Transformer*Layer in the unit tests)."""
    ex = translation_example(split_words(source), split_words(target), d, seed)
    q, k = ex.cross.q, ex.cross.k  # [Nt, d], [Ns, d]
    weights = torch.softmax(q @ k.T / d**0.5, dim=-1)  # [Nt, Ns]
    return [[num(w) for w in row] for row in weights.tolist()]


def cross_tables(at, source: str = SOURCE, target: str = TARGET) -> list:
    """The scores table, then the weights table: rows the decoder's input ([BOS] and the
    target shifted right), columns source words."""
    rows = shift_right(split_words(target))
    return [f.values.tolist() for f in tables(at)
            if tuple(f.index) == rows and tuple(f.columns) == split_words(source)]


def opened(params=None, lang: str = "en", state=None):
    return open_page(PAGE, lang, params=params, state={**ANSWERED, **(state or {})})


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return opened(lang=request.param)


def test_defaults_show_the_facts_and_the_cross_attention_table(default_page):
    assert_clean(default_page)
    text = page_text(default_page)
    for fact in FACTS:
        assert fact in text
    scores, weights = cross_tables(default_page)
    assert weights == expected()
    assert len(scores) == 3 and len(scores[0]) == 5  # N_target rows x N_source columns
    masks = [f for f in tables(default_page) if f.shape in ((4, 4), (3, 3), (3, 4))][:3]
    assert [f.shape for f in masks] == [(4, 4), (3, 3), (3, 4)]
    assert "−∞" not in masks[0].values and "−∞" not in masks[2].values  # nothing blocked
    assert masks[1].values.tolist()[0] == ["0", "−∞", "−∞"]  # causal
    assert "3 × 5 = 15" not in text  # the numeric exercise's answer is not given away
    shifted = next(f for f in tables(default_page) if f.shape == (2, 3) and "[BOS]" in f.values)
    assert shifted.values.tolist() == [["[BOS]", "运费", "谁"], ["运费", "谁", "承担"]]


def test_english_view_glosses_the_target_words():
    assert "运费 *shipping fee*" in page_text(opened())


@pytest.mark.parametrize(("source", "d", "seed"), [("who pays ?", 8, 0), (SOURCE, 4, 0),
                                                   (SOURCE, 8, 3)])
def test_edits_and_shared_links_give_the_same_numbers(source, d, seed):
    at = opened()
    at.text_input("backbones.src").input(source).run()
    at.slider("_backbones.d~s").set_value(d).run()
    at.number_input("backbones.seed").set_value(seed).run()
    assert_clean(at)
    ns = len(split_words(source))
    assert f"H_enc [{ns}, {d}]" in page_text(at) and f"[3 × {ns}]" in page_text(at)
    assert cross_tables(at, source)[1] == expected(source, d=d, seed=seed)
    params = {k: v for k, v in at.query_params.items() if k.startswith("backbones.")}
    linked = opened(params)
    assert cross_tables(linked, source)[1] == expected(source, d=d, seed=seed)
    if seed:
        assert expected(seed=seed) != expected()


def test_a_longer_target_adds_rows():
    at = opened()
    at.text_input("backbones.tgt").input("运费 谁 承担 ？").run()
    assert cross_tables(at, target="运费 谁 承担 ？")[1] == expected(target="运费 谁 承担 ？")


@pytest.mark.parametrize(("key", "text", "message"), [
    ("backbones.src", "", "The source needs 1 to 8 words"),
    ("backbones.src", "a b c d e f g h i", "it has 9"),
    ("backbones.tgt", "   ", "The target needs 1 to 8 words"),
    ("backbones.tgt", "一 二 三 四 五 六 七 八 九", "it has 9"),
])
def test_bad_words_show_one_message_and_the_page_goes_on(key, text, message):
    at = opened()
    at.text_input(key).input(text).run()
    assert_clean(at)
    assert len(at.error) == 1 and message in at.error[0].value
    text_now = page_text(at)
    assert "Why decoder-only suits" in text_now and "Who reads whom" in text_now
    at.text_input(key).input(SOURCE if key == "backbones.src" else TARGET).run()
    assert not at.error and cross_tables(at)[1] == expected()  # and it recovers


def test_bad_words_message_is_translated():
    at = open_page(PAGE, "zh")
    at.text_input("backbones.src").input("").run()
    assert "源文本需要 1 到 8 个词" in at.error[0].value


@pytest.mark.parametrize("params", [
    {"backbones.d": "abc"}, {"backbones.d": "1e300"}, {"backbones.d": "7.5"},
    {"backbones.d": "17"}, {"backbones.seed": "nan"}, {"backbones.seed": "-1"},
    {"backbones.src": "x" * 81},
])
def test_bad_link_values_fall_back_with_a_note(params):
    at = opened(params)
    assert_clean(at)
    assert len(at.error) == 1
    assert cross_tables(at)[1] == expected()


def test_choice_exercises(lang):
    at = open_page(PAGE, lang)
    reveal(at, "backbones.qkv", 1)
    assert len(at.success) == 1 and "H_enc" in at.success[0].value
    reveal(at, "backbones.rect", 0)  # why the table is rectangular, with this example's sizes
    why = catalogue(lang)["backbones.ex3_explain"].format(nt=3, ns=5)
    assert len(at.success) == 2 and why in at.success[1].value


def test_number_exercise_then_the_cross_attention_tables():
    others = {k: v for k, v in ANSWERED.items() if ".cells." not in k}
    at = open_page(PAGE, state=others)
    waiting = catalogue("en")["kit.after_answer"]
    assert not cross_tables(at) and "[3 × 5]" not in page_text(at) and waiting in page_text(at)
    answer(at, "backbones.cells", 8)
    assert len(at.warning) == 1 and "3 × 5 = 15" in page_text(at)
    answer(at, "backbones.cells", 15)
    assert len(at.success) == 1
    assert cross_tables(at)[1] == expected() and waiting not in page_text(at)


_EX = translation_example(split_words(SOURCE), split_words(TARGET), 8, 0)
_CROSS = _EX.cross.attention  # scaled [3, 5], weights [3, 5]


@pytest.mark.parametrize(("cell", "shown"), [
    ({"backbones.cross_w": "1,2"}, (r"a_{1,2}", f"e^{{{num(_CROSS.scaled[1, 2])}}}",
                                    f"= {num(_CROSS.weights[1, 2])}")),
    ({"backbones.cross_s": "0,3"}, (r"\tilde s_{0,3}", r"\sqrt{8}",
                                    f"= {num(_CROSS.scaled[0, 3])}")),
    ({"backbones.dec_w": "0,2"}, (r"a_{0,2} = e^{-\infty}",)),
    ({"backbones.enc_w": "4,1"}, (r"a_{4,1}", "= 0.405")),
    ({"backbones.dec_mask": "0,1"}, (r"M_{0,1} = -\infty",)),
    ({"backbones.cross_mask": "2,3"}, (r"M_{2,3} = 0", "cross-attention blocks no")),
])
def test_cells_explain_themselves(cell, shown):
    text = explanations(opened(cell))
    for part in shown:
        assert part in text


def test_a_link_to_a_step_shows_only_the_steps_so_far():
    at = opened({"backbones.flow.step": "2"})
    text = page_text(at)
    assert "Decoder masked self-attention weights" in text
    assert "Cross-attention weights" not in text and not cross_tables(at)
