"""Stage 10.1 (logits) in AppTest: the worked numbers of CURRICULUM section 10 in both
languages, the live cut after edits and from a shared link, every bad input, both
exercises, the step-by-step cut and the explained table of worked settings. Expected
numbers come from torch.softmax (a cut is softmax over the kept logits)."""

from __future__ import annotations

import math

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
    ONE_LANG,
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from ui.fmt import vec
from ui.i18n import catalogue

PAGE = "pages/10_logits.py"
# The three exercises answered before the first run: the worked table they gate is drawn.
ANSWERED = {"_logits.ex.cool.answered": 0, "_logits.ex.renorm.answered": 0,
            "_logits.ex.topk.answered": 0.731}
WORKED = [["0.665", "0.245", "0.090"], ["0.867", "0.117", "0.016"], ["0.506", "0.307", "0.186"],
          ["0.731", "0.269", "0.000"], ["0.731", "0.269", "0.000"], ["1.000", "0.000", "0.000"],
          ["1.000", "0.000", "0.000"]]  # T = 1, 0.5, 2; top-k 2; top-p 0.8, 0.6; T = 0


def cut(logits: list[float], temperature: float = 1.0, keep: list[int] | None = None) -> str:
    """softmax(z / T) over the kept ids (the others -inf): temperature, cut, renormalise."""
    z = torch.tensor(logits, dtype=torch.float64) / temperature
    if keep is not None:
        z = torch.full_like(z, -math.inf).index_copy(0, torch.tensor(keep), z[keep])
    return vec(torch.softmax(z, -1))


def worked_table(at) -> list[list[str]]:
    return tables(at)[0].values.tolist()


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_page(PAGE, request.param, state=ANSWERED)


def test_defaults_show_every_worked_number(default_page) -> None:
    assert_clean(default_page)
    text = page_text(default_page)
    assert worked_table(default_page) == WORKED
    assert cut([2, 1, 0]) == "[0.665, 0.245, 0.090]" and "[0.665, 0.245, 0.090]" in text
    assert r"2\cdot0.5 + 1\cdot(-1) = 0.000" in text  # z_未知 = h · E_未知
    for number in ("400", "1,784", "1,384", "100,000", "99,997", "37%", "63%"):
        assert number in text
    assert "logits." not in text and "errors." not in text  # every key is translated


@pytest.mark.parametrize(("box", "value", "expected"), [
    ("_logits.T~n", 0.5, cut([2, 1, 0], 0.5)),
    ("_logits.T~n", 2.0, cut([2, 1, 0], 2.0)),
    ("_logits.p~n", 0.8, cut([2, 1, 0], keep=[0, 1])),
    ("_logits.p~n", 0.6, "[1.000, 0.000, 0.000]"),
])
def test_each_setting_gives_its_worked_numbers(box: str, value: float, expected: str) -> None:
    at = open_page(PAGE)
    at.number_input(box).set_value(value).run()
    assert_clean(at)
    assert f"`{expected}`" in page_text(at)  # the cut's own result, not the table's
    assert at.query_params[box[1:-2]] == f"{value:g}"  # in the URL: a link reproduces it


def test_top_k_two_and_past_the_vocabulary() -> None:
    at = open_page(PAGE)
    at.slider("logits.k").set_value(2).run()
    assert f"`{cut([2, 1, 0], keep=[0, 1])}`" in page_text(at)
    at.slider("logits.k").set_value(5).run()
    assert_clean(at)
    note = catalogue("en")["logits.k_all"].format(k=5, v=3)
    assert note in page_text(at) and "`[0.665, 0.245, 0.090]`" in page_text(at)


def test_temperature_zero_is_greedy_without_an_error(lang: str) -> None:
    at = open_page(PAGE, lang, params={"logits.T": "0"})
    assert_clean(at)
    assert not at.error
    notes = [i.value for i in at.info][1:]  # after the running example's "not trained" note
    assert notes == [catalogue(lang)["logits.greedy_note"].format(w="商家")]
    assert "`[1.000, 0.000, 0.000]`" in page_text(at)


def test_edited_logits_change_every_number() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.text_input("logits.z").input("1, 3, 0.5").run()
    assert_clean(at)
    text = page_text(at)
    assert f"`{cut([1, 3, 0.5])}`" in text
    assert worked_table(at)[1] == cut([1, 3, 0.5], 0.5).strip("[]").split(", ")
    assert worked_table(at)[3] == cut([1, 3, 0.5], keep=[0, 1]).strip("[]").split(", ")
    assert worked_table(at)[6] == ["0.000", "1.000", "0.000"]  # greedy: 买家 now
    at.slider("_logits.z~2").set_value(4.0).run()  # the named slider of 未知
    assert at.text_input("logits.z").value == "1, 3, 4"


def test_a_shared_link_reproduces_the_cut() -> None:
    at = open_page(PAGE, params={"logits.z": "2, 1, 0", "logits.T": "0.5", "logits.k": "2"})
    assert_clean(at)
    assert f"`{cut([2, 1, 0], 0.5, keep=[0, 1])}`" in page_text(at)


@pytest.mark.parametrize(("key", "bad"), [
    ("logits.T", "-1"), ("logits.T", "nan"), ("logits.T", "1e300"), ("logits.T", "abc"),
    ("logits.k", "2.5"), ("logits.k", "99"), ("logits.p", "1.5"), ("logits.p", "inf"),
    ("logits.z", "abc"), ("logits.z", "1, 2"), ("logits.h", "1e300, 0"),
    ("logits.E", "1, 0; 0, 1"), ("logits.cut.step", "9"), ("chain.U", "1, 0; 0, 1"),
])
def test_a_bad_link_value_gives_one_note_and_the_default(key: str, bad: str) -> None:
    at = open_page(PAGE, params={key: bad}, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1
    assert worked_table(at) == WORKED and "`[0.665, 0.245, 0.090]`" in page_text(at)


@pytest.mark.parametrize(("widget", "value", "words"), [
    ("logits.k", 0, "at least 1"), ("_logits.p~n", 0.0, "p = 0")])
def test_impossible_cuts_say_why_and_the_page_goes_on(widget, value, words) -> None:
    at = open_page(PAGE, state=ANSWERED)
    (at.slider if widget == "logits.k" else at.number_input)(widget).set_value(value).run()
    assert_clean(at)
    assert len(at.error) == 1 and words in at.error[0].value
    assert worked_table(at) == WORKED  # the rest of the page still renders
    assert "99,997" in page_text(at)


def test_the_impossible_cut_is_translated() -> None:
    at = open_page(PAGE, "zh", params={"logits.p": "0"})
    assert len(at.error) == 1 and at.error[0].value == catalogue("zh")["errors.top_p_invalid"]


@pytest.mark.parametrize("key", ["logits.z", "logits.h", "logits.E"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2, 3, 4; 5"])
def test_bad_cells_keep_the_last_value(key: str, bad: str) -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.text_input(key).input(bad).run()
    assert_clean(at)
    assert len(at.error) == 1
    assert worked_table(at) == WORKED


def test_exercises_come_before_the_worked_table(lang: str) -> None:
    at = open_page(PAGE, lang)
    assert not at.success and not tables(at)  # its rows T = 0.5 and top-k = 2 answer them
    reveal(at, "logits.renorm", 0)  # why top-k's kept words grow: renormalising
    assert len(at.success) == 1 and "未知" in at.success[0].value  # the word cut, computed
    answer(at, "logits.topk", 0.731)
    assert len(at.success) == 2
    assert r"p_{3,0} = \frac{0.665}{0.665 + 0.245} = 0.731" in explanations(at)
    assert not tables(at)  # the temperature exercise is still open
    reveal(at, "logits.cool", 0)
    assert len(at.success) == 3 and "0.867" in at.success[0].value
    assert worked_table(at) == WORKED


def test_a_wrong_number_still_shows_the_renormalising() -> None:
    at = open_page(PAGE)
    assert r"\frac{0.665}{0.665 + 0.245}" not in explanations(at)
    answer(at, "logits.topk", 0.665)
    assert len(at.warning) == 2  # the legal-probability note and the wrong answer
    assert r"p_{3,0} = \frac{0.665}{0.665 + 0.245} = 0.731" in explanations(at)


@pytest.mark.parametrize(("cell", "shown"), [
    ("1,0", r"\frac{e^{4.000}}{e^{4.000} + e^{2.000} + e^{0.000}}"),  # T = 0.5 doubles z
    ("4,1", r"p_{4,1} = \frac{0.245}{0.665 + 0.245} = 0.269"),
    ("5,1", "p_{5,1} = 0"), ("6,0", "p_{6,0} = 1"),
])
def test_worked_cells_explain_themselves(cell: str, shown: str) -> None:
    at = open_page(PAGE, params={"logits.worked": cell}, state=ANSWERED)
    assert shown in explanations(at)


def test_the_cut_step_by_step() -> None:
    at = open_page(PAGE, params={"logits.p": "0.6", "logits.cut.step": "3"})
    assert_clean(at)
    text = page_text(at)
    assert catalogue("en")["logits.p_keeps"].format(p="0.6", w="商家") in text
    assert "`[1.000, 0.000, 0.000]`" not in text  # step 4 not yet shown
    next(b for b in at.button if (b.key or "").endswith("cut.step~next")).click().run()
    assert "`[1.000, 0.000, 0.000]`" in page_text(at)
