"""The rest of a page waits for the learner (ui/fold.py): every stage opens with its
first part and a "Continue" button; the button, or a link that carries
"<stage>.more=true", draws the whole page.

Every stage opening folded, and its Continue button, is tested with every stage's
rendering in tests/app/test_home.py; the fold's bad link value and the downloads'
note in tests/app/test_kit.py."""

from __future__ import annotations

from tests.app.helpers import WHOLE, assert_clean, fold_button, open_page, open_rest, page_text
from ui.fold import NAME, OPEN
from ui.i18n import catalogue
from ui.stages import by_id


def element_count(at) -> int:
    return len(list(at.main))


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


def test_the_open_state_survives_a_rerun() -> None:
    at = open_page("pages/03_softmax.py", folded=True)
    open_rest(at)
    at.text_input("hand.kB").input("2, 0").run()
    assert_clean(at)
    assert catalogue("en")["softmax.matrix_title"] in page_text(at)


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
