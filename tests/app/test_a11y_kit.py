"""The kit's accessibility in AppTest (ui/a11y.py, ui/figures.py): a heatmap cell's
explanation reached from the keyboard, and what the frame adds to every page. What
only a browser shows (axe-core's rules, the page's language, Streamlit's English
translated) is tests/e2e/test_every_page.py."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.helpers import page_text
from ui.i18n import catalogue

ZH = catalogue("zh")
CHART, PICK = "_softmax.map~chart", "_softmax.map~pick"


def _heatmap():
    from ui.figures import heatmap
    from ui.frame import around

    with around("softmax"):
        heatmap([[1, 2], [3, 4]], ["a", "b"], ["r", "s"], key="map",
                explain=lambda r, c: f"cell {r},{c}")


def test_a_cell_chosen_with_the_select_box_or_a_click_is_explained():
    """In Chinese, with the note for an unknown address the frame left for this run."""
    at = AppTest.from_function(_heatmap, default_timeout=60)
    at.query_params["lang"] = "zh"
    at.session_state["_unknown_page"] = "nosuch"
    at.run()
    assert not at.exception
    # Every page: the page's language for the script, and the unknown address's note.
    scripts = [n.proto.body for n in at.main if n.type == "html"]
    assert any('"zh-CN"' in body and "<script>" in body for body in scripts)
    assert [w.value for w in at.warning] == [ZH["kit.unknown_page"].format(page="`/nosuch`")]

    pick = at.selectbox(key=PICK)
    assert pick.label == ZH["kit.cell_pick"] and pick.value is None
    assert pick.options[2] == ZH["kit.cell_option"].format(row=1, y="s", col=0, x="a")
    pick.set_value((1, 0)).run()
    assert "cell 1,0" in page_text(at) and at.query_params["softmax.map"] == "1,0"

    click = {"selection": {"points": [{"x": 1, "y": 0}]}}
    at.session_state[CHART] = click
    at.run()
    assert "cell 0,1" in page_text(at) and at.selectbox(key=PICK).value == (0, 1)

    # A browser sends the chart's last click again with every rerun: a later choice in
    # the box must still win.
    at.selectbox(key=PICK).set_value((1, 1))
    at.session_state[CHART] = click
    at.run()
    assert "cell 1,1" in page_text(at) and at.query_params["softmax.map"] == "1,1"
    assert not at.warning  # the note was for one run
