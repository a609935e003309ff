"""Stage 0.2 in AppTest: embeddings on an editable plane, cosines and angles, whitening."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
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
from tinyformer.embedding import anisotropic_cloud, mean_pairwise_cosine, whiten
from ui.fmt import num

PAGE = "pages/00_embeddings.py"
# The defaults: 苹果 and 梨 close together; 动漫 unrelated to both (near 90°), not opposite.
DEFAULT_COS = {"苹果": ["1.000", "0.990", "0.000"], "梨": ["0.990", "1.000", "0.141"],
               "动漫": ["0.000", "0.141", "1.000"]}
DEFAULT_DEG = {"苹果": ["0.0", "8.1", "90.0"], "梨": ["8.1", "0.0", "81.9"],
               "动漫": ["90.0", "81.9", "0.0"]}
PEAR_ANIME = (r"\cos(\text{梨}, \text{动漫}) &= \frac{0.1\cdot0.9 + 0.7\cdot0}{0.707 \cdot 0.900}"
              r" \\[4pt] &= \frac{0.090}{0.636} = 0.141 \\[4pt] \theta &= 81.9^\circ")

# The worked pair 苹果 · 梨, one string per step: dot product, lengths, cosine, angle.
WORKED = [r"\text{苹果} \cdot \text{梨} &= 0\cdot0.1 + 0.9\cdot0.7 \\ &= 0.630",
          r"\lVert \text{梨} \rVert &= \sqrt{0.1\cdot0.1 + 0.7\cdot0.7} = 0.707",
          r"&= \frac{0.630}{0.900 \cdot 0.707} = \frac{0.630}{0.636} \\ &= 0.990",
          r"\theta &= \arccos(0.990) = 8.1^\circ"]


# The exercises answered, as if by the learner: the tables they gate are drawn.
ANSWERED = {"_embeddings.ex.unrelated.answered": 1, "_embeddings.ex.cos.answered": 0.141,
            "_embeddings.ex.cos_why.answered": 1}


def opened(lang: str = "en", **kwargs):
    return open_page(PAGE, lang, state={**ANSWERED, **kwargs.pop("state", {})}, **kwargs)


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return opened(request.param), request.param


def grid(at, which: int) -> dict[str, list[str]]:
    """The word-by-word tables in page order: 0 = cosines, 1 = angles in degrees."""
    frames = [f for f in tables(at) if list(f.index) == ["苹果", "梨", "动漫"]]
    assert len(frames) == 2, "the cosine tables are missing"
    return {str(i): [str(v) for v in row]
            for i, row in zip(frames[which].index, frames[which].values, strict=True)}


def cosines(at) -> dict[str, list[str]]:
    return grid(at, 0)


def angles(at) -> dict[str, list[str]]:
    return grid(at, 1)


def metrics(points: int, seed: int) -> list[str]:
    cloud = anisotropic_cloud(points, torch.Generator().manual_seed(seed))
    return [num(mean_pairwise_cosine(cloud)), num(mean_pairwise_cosine(whiten(cloud).whitened))]


def test_defaults(default_page) -> None:
    at, lang = default_page
    assert_clean(at)
    text = page_text(at)
    assert "embeddings." not in text and "errors." not in text
    assert cosines(at) == DEFAULT_COS
    assert angles(at) == DEFAULT_DEG
    for step in WORKED:  # cos(苹果, 梨) worked out, every step shown by default
        assert step in text
    assert [m.value for m in at.metric] == metrics(200, 0)
    assert float(at.metric[0].value) > 0.9 and abs(float(at.metric[1].value)) < 0.05
    assert "12,288" in text and "12,000" in text  # about 50 ... over 12,000, no contradiction
    assert {"en": "changes no model parameter", "zh": "不改动模型的任何参数"}[lang] in text
    assert {"en": "inverse square root", "zh": "逆平方根"}[lang] in text
    assert {"en": "Words: 苹果 *apple*", "zh": "苹果"}[lang] in text  # glossed in English
    labels = [s.label for s in at.slider]
    assert {"en": "苹果 · edible", "zh": "苹果 · 能吃"}[lang] in labels
    assert not [label for label in labels if label.startswith("[")]


def test_exercise_answers_are_not_shown_above_them(default_page) -> None:
    at, _ = default_page
    above = text_above(at, "_embeddings.ex.cos.value")
    assert "0.141" not in above and "81.9" not in above
    above = text_above(at, "_embeddings.ex.unrelated.choice")
    assert "90.0" not in above


def has_cosines(at) -> bool:
    return any(list(f.index) == ["苹果", "梨", "动漫"] for f in tables(at))


@pytest.mark.parametrize("lang", ONE_LANG)
def test_the_tables_wait_for_the_exercises(lang) -> None:
    at = open_page(PAGE, lang)
    assert not has_cosines(at) and "0.141" not in page_text(at)
    reveal(at, "embeddings.unrelated", 1)
    assert len(at.success) == 1 and "90°" in at.success[0].value
    answer(at, "embeddings.cos", 0.141)
    assert len(at.success) == 2 and "0.141" in at.success[1].value
    assert PEAR_ANIME in explanations(at)  # the worked steps
    assert not has_cosines(at)  # the "why" exercise beside it is still open
    reveal(at, "embeddings.cos_why", 1)
    assert cosines(at) == DEFAULT_COS
    answer(at, "embeddings.cos", 0.99)
    assert "0.141" in at.warning[0].value


def test_typed_points_update_cosines_and_the_exercise() -> None:
    at = opened()
    at.text_input("embeddings.E").input("1, 0; 0, 1; -1, 0").run()
    assert_clean(at)
    assert cosines(at) == {"苹果": ["1.000", "0.000", "-1.000"], "梨": ["0.000", "1.000", "0.000"],
                           "动漫": ["-1.000", "0.000", "1.000"]}
    assert angles(at)["苹果"] == ["0.0", "90.0", "180.0"]
    assert at.query_params["embeddings.E"] == "1, 0; 0, 1; -1, 0"
    answer(at, "embeddings.cos", 0.0)  # the exercise follows the points: cos(梨, 动漫) = 0
    assert len(at.success) == 1


def test_slider_moves_only_its_component() -> None:
    at = opened()
    at.slider("_embeddings.E~5").set_value(0.9).run()  # 动漫 · edible; entertainment stays
    assert_clean(at)
    assert at.text_input("embeddings.E").value == "0, 0.9; 0.1, 0.7; 0.9, 0.9"
    assert cosines(at)["苹果"] == ["1.000", "0.990", "0.707"]


def test_opposite_preset_and_back() -> None:
    at = opened()
    next(b for b in at.button if "动漫" in b.label).click().run()
    assert_clean(at)
    assert cosines(at)["苹果"] == ["1.000", "0.990", "-1.000"]
    assert angles(at)["苹果"] == ["0.0", "8.1", "180.0"]
    next(b for b in at.button if "default" in b.label).click().run()
    assert cosines(at) == DEFAULT_COS


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step: int) -> None:
    at = opened(params={"embeddings.hand.step": str(step)})
    assert_clean(at)
    text = page_text(at)
    assert [s in text for s in WORKED] == [k < step for k in range(4)]
    assert cosines(at) == DEFAULT_COS  # the tables below are not part of the steps


def test_shared_link_reproduces_the_plane() -> None:
    at = opened(params={"embeddings.E": "1, 0; 0, 1; -1, 0", "embeddings.pts": "20",
                        "embeddings.seed": "7"})
    assert_clean(at)
    assert cosines(at)["苹果"] == ["1.000", "0.000", "-1.000"]
    assert [m.value for m in at.metric] == metrics(20, 7)


@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2; 3, 4", "1, 2, 3; 1, 2, 3; 1, 2, 3",
                                 "3, 0; 0, 1; 1, 1"])
def test_bad_points_keep_the_last_value(bad: str) -> None:
    at = opened()
    at.text_input("embeddings.E").input(bad).run()
    assert_clean(at)
    assert len(at.error) == 1
    assert cosines(at) == DEFAULT_COS


def test_zero_vector_has_no_cosine() -> None:
    at = opened(params={"embeddings.E": "0, 0; 1, 1; 1, 0"})
    assert_clean(at)
    assert len(at.error) == 1 and "苹果" in at.error[0].value
    assert cosines(at)["梨"] == ["", "1.000", "0.707"]  # no cosine: a blank cell, not a number


def test_clicked_cell_explains_itself() -> None:
    at = opened(state=click(("embeddings.cos_map", 1, 2)))
    assert_clean(at)
    assert PEAR_ANIME in explanations(at)
    at = opened(params={"embeddings.angle_map": "0,2"})
    assert r"&= \frac{0.000}{0.810} = 0.000 \\[4pt] \theta &= 90.0^\circ" in explanations(at)


def test_whitening_follows_points_and_seed() -> None:
    at = open_page(PAGE)
    at.slider("embeddings.pts").set_value(20).run()
    at.number_input("embeddings.seed").set_value(7).run()
    assert_clean(at)
    assert [m.value for m in at.metric] == metrics(20, 7)


@pytest.mark.parametrize("lang", ONE_LANG)
def test_bad_link_values_fall_back_with_a_note(lang) -> None:
    at = opened(lang, params={"embeddings.pts": "5000", "embeddings.seed": "-3",
                              "embeddings.E": "1, 2"})
    assert_clean(at)
    assert len(at.error) == 3
    assert [m.value for m in at.metric] == metrics(200, 0)
    assert cosines(at) == DEFAULT_COS
