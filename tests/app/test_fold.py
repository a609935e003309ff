"""The rest of a page waits for the learner (ui/fold.py): every stage opens with its
first part and a "Continue" button; the button, or a link that carries
"<stage>.more=true", draws the whole page."""

from __future__ import annotations

import pytest

from tests.app.helpers import assert_clean, fold_button, open_page, open_rest, page_text
from ui.fold import NAME, OPEN
from ui.i18n import catalogue
from ui.stages import STAGES, by_id

WHOLE = {"training"}  # short enough to open whole: no fold
FOLDED = [s for s in STAGES if s.id not in WHOLE]


def element_count(at) -> int:
    return len(list(at.main))


@pytest.mark.parametrize("stage", FOLDED, ids=[s.id for s in FOLDED])
def test_a_stage_opens_folded_and_continue_draws_the_rest(stage) -> None:
    at = open_page(stage.path, folded=True)
    assert_clean(at)
    button = at.button(key=fold_button(stage.id))
    assert button.label.startswith("Continue: ")
    assert catalogue("en")["kit.fold_note"] in page_text(at)
    first_part = element_count(at)

    button.click().run()
    assert_clean(at)
    assert at.query_params[f"{stage.id}.{NAME}"] == OPEN
    assert not [b for b in at.button if b.key == fold_button(stage.id)]
    assert element_count(at) > first_part
    # The button names the section that starts where the first part ended.
    assert button.label.removeprefix("Continue: ") in page_text(at)


def test_a_short_stage_has_no_fold() -> None:
    for stage_id in WHOLE:
        at = open_page(by_id(stage_id).path, folded=True)
        assert_clean(at)
        assert not [b for b in at.button if b.key == fold_button(stage_id)]


def test_continue_inside_a_section_draws_the_later_sections_too() -> None:
    """RoPE's fold sits inside its first section (an st.fragment): the button reruns the
    whole page, so the sections after that fragment appear as well."""
    at = open_page("pages/07_rope.py", folded=True)
    later = catalogue("en")["rope.freq_title"]
    assert later not in page_text(at)
    open_rest(at)
    assert later in page_text(at)


def test_an_input_above_the_fold_keeps_it_closed() -> None:
    """An edit in the first part (a rerun of its fragment only) neither raises nor opens
    the rest."""
    at = open_page("pages/07_rope.py", folded=True)
    at.number_input("_rope.ak~n").set_value(90).run()  # q at 0°, k at 90°
    assert_clean(at)
    assert at.button(key=fold_button("rope"))
    assert catalogue("en")["rope.freq_title"] not in page_text(at)
    assert r"(R_\alpha q)\cdot(R_\beta k) = 0.000" in page_text(at)


def test_the_open_state_survives_a_rerun_and_a_bad_link_value() -> None:
    at = open_page("pages/05_softmax.py", folded=True)
    open_rest(at)
    at.text_input("hand.kB").input("2, 0").run()
    assert_clean(at)
    assert catalogue("en")["softmax.matrix_title"] in page_text(at)

    bad = open_page("pages/05_softmax.py", folded=True, params={f"softmax.{NAME}": "yes"})
    assert_clean(bad)
    assert len(bad.error) == 1  # the translated bad-link note; the page opens folded
    assert bad.button(key=fold_button("softmax"))


def test_downloads_say_they_hold_only_the_open_part() -> None:
    note = catalogue("en")["kit.downloads_folded"]
    at = open_page("pages/05_softmax.py", folded=True)
    assert note in [c.value for c in at.sidebar.caption]
    open_rest(at)
    assert note not in [c.value for c in at.sidebar.caption]


def test_stepping_past_the_fold_opens_it() -> None:
    """Multi-head's step-by-step walk has its fold after step 1: "next" to step 2 opens
    the rest of the page, so the step it names is on screen."""
    at = open_page("pages/06_multi_head.py", folded=True)
    at.button(key="_multi_head.hand.step~start").click().run()
    assert at.button(key=fold_button("multi_head"))  # step 1 of 3: the fold stays closed
    at.button(key="_multi_head.hand.step~next").click().run()
    assert_clean(at)
    assert at.query_params[f"multi_head.{NAME}"] == OPEN
    assert not [b for b in at.button if b.key == fold_button("multi_head")]
    label = catalogue("en")["multi_head.reveal_heads"]
    assert f"**2 · {label}**" in [m.value for m in at.markdown]
