"""The running example's hand model (tinyformer.lessons.chain) on stages 1.1-6, and the
strip under every stage's title (ui.chain.strip): each stage shows the chain's own
numbers, computed once here by run_chain, and an edit of 运费's embedding row (on stage 2
in the same session, and through a shared link) reaches stages 4 and 5.1."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import assert_clean, open_page, page_text, tables
from tinyformer.lessons.chain import ChainParams, ChainRun, run_chain, unmasked_weights
from ui.chain import numbers
from ui.fmt import latex_matrix, num
from ui.i18n import catalogue

EDITED_X = "2, -1; 0, 1; 1, 1; 1, -1"  # 运费's row [1, 0] becomes [2, -1]
DEFAULT = run_chain()
MASKS_ANSWERED = {"_masks.ex.self.answered": 1.0}  # 5.1's exercise: the chain's A is drawn


def cells(matrix: torch.Tensor) -> list[list[str]]:
    """A matrix as a table of the page shows it: three decimals."""
    return [[num(v) for v in row] for row in matrix.tolist()]


def shown(at) -> list[list[list[str]]]:
    return [frame.values.tolist() for frame in tables(at)]


def edited() -> ChainRun:
    X = torch.tensor([[2.0, -1.0], [0, 1], [1, 1], [1, -1]], dtype=torch.float64)
    return run_chain(ChainParams(**{**ChainParams.defaults().__dict__, "X": X}))


def strip(at, lang: str = "en") -> tuple[str, str]:
    """The strip's two captions: the tensor entering the stage and the one leaving it."""
    texts = [c.value for c in at.caption]
    ins = catalogue(lang)["chain.in"]
    outs = catalogue(lang)["chain.out"]
    return (next(x for x in texts if x.startswith(ins)),
            next(x for x in texts if x.startswith(outs)))


def links(at) -> list[str]:
    return [link.proto.page for link in at.main.get("page_link")]


def go(at, page: str) -> None:
    """Another stage in the same session, with that stage's own URL (the links between
    stages carry only the frame's values)."""
    at.switch_page(page)
    at.query_params.clear()
    at.query_params["lang"] = "en"
    at.query_params[f"{page_stage(page)}.more"] = "true"  # the whole page, as after Continue
    at.run()
    assert_clean(at)


def page_stage(page: str) -> str:
    return {"pages/04_scaling.py": "scaling", "pages/05_masks.py": "masks"}[page]


def scaling_numbers(at, run: ChainRun) -> None:
    """Stage 4: S from stage 2 beside S/√2; the strip says the same."""
    assert cells(run.scores) in shown(at) and cells(run.scaled) in shown(at)
    entering, leaving = strip(at)
    assert entering.endswith(numbers(run.scores)) and leaving.endswith(numbers(run.scaled))


def masks_numbers(at, run: ChainRun) -> None:
    """Stage 5.1: the chain's masked scores, weights and A, and A = weights · V written out."""
    tabled = shown(at)
    masked = [["−∞" if v == float("-inf") else num(v) for v in row] for row in run.masked.tolist()]
    assert masked in tabled and cells(run.weights) in tabled and cells(run.A) in tabled
    assert f"{latex_matrix(run.weights)}{latex_matrix(run.V)} = {latex_matrix(run.A)}" in \
        page_text(at)
    assert strip(at)[1].endswith(numbers(run.A))


def test_tokens_ids_select_the_hand_tables_rows():
    at = open_page("pages/01_tokens.py", "zh")
    assert_clean(at)
    assert cells(DEFAULT.table) in shown(at) and cells(DEFAULT.X) in shown(at)
    assert r"x_{0} = E[5],\ x_{1} = E[6],\ x_{2} = E[7],\ x_{3} = E[8]" in page_text(at)
    entering, leaving = strip(at, "zh")
    assert entering.endswith("[5, 6, 7, 8]") and leaving.endswith("[1, 0; 0, 1; 1, 1; 1, -1]")
    assert links(at)[0] == "qkv"  # X leaves for stage 2; the IDs come from the text above


def test_an_edit_on_stage_2_reaches_4_and_5_1_in_the_same_session():
    at = open_page("pages/02_qkv.py")
    assert_clean(at)
    for name in ("Q", "K", "V"):
        assert cells(getattr(DEFAULT, name)) in shown(at)
    leaving = strip(at)[1]  # Q, K, V: not S, whose s₃,₀ the page's exercise asks for
    assert leaving.endswith(f"Q = {numbers(DEFAULT.Q)}, K = {numbers(DEFAULT.K)}, "
                            f"V = {numbers(DEFAULT.V)}")
    assert "[1, 0; 1, 1; 2, 1; 0, -1]" in leaving  # Q
    at.text_input("chain.X").input(EDITED_X).run()
    assert_clean(at)
    run = edited()
    assert cells(run.Q) in shown(at)
    go(at, "pages/04_scaling.py")
    scaling_numbers(at, run)
    assert at.query_params["chain.X"] == EDITED_X  # stage 4's own link carries the edit
    at.session_state["_masks.ex.self.answered"] = 1.0  # the exercise that A waits for
    go(at, "pages/05_masks.py")
    masks_numbers(at, run)
    assert not torch.allclose(run.A, DEFAULT.A)


def test_a_shared_link_carries_an_edited_row_to_5_1():
    at = open_page("pages/05_masks.py", params={"chain.X": EDITED_X}, state=MASKS_ANSWERED)
    assert_clean(at)
    masks_numbers(at, edited())
    assert at.query_params["chain.X"] == EDITED_X


def test_masks_wait_for_the_self_weight_exercise_then_show_the_chains_numbers():
    """5.1's exercise asks how much 运费 reads itself in the padded example: the chain's
    weights (运费's row is [1, 0, 0, 0]) and A (A[0] = v_0) wait for it, in the strip too."""
    at = open_page("pages/05_masks.py", "zh")
    assert_clean(at)
    masked = [["−∞" if v == float("-inf") else num(v) for v in row]
              for row in DEFAULT.masked.tolist()]
    assert masked in shown(at) and cells(DEFAULT.weights) not in shown(at)
    assert numbers(DEFAULT.A) not in strip(at, "zh")[1]
    at.number_input("_masks.ex.self.value").set_value(1.0).run()
    at.button("_masks.ex.self.check").click().run()
    assert_clean(at)
    tabled = shown(at)
    assert cells(DEFAULT.weights) in tabled and cells(DEFAULT.A) in tabled
    assert cells(DEFAULT.weights)[3] == ["0.221", "0.221", "0.109", "0.449"]  # ？'s row
    assert strip(at, "zh")[1].endswith("[1.000, 0.000; 0.330, 1.340; 0.694, 1.851; "
                                       "0.779, -0.237]")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_scaling_shows_the_chains_scores_in_both_languages(lang):
    at = open_page("pages/04_scaling.py", lang, folded=True)  # the chain is before the fold
    assert_clean(at)
    assert cells(DEFAULT.scores) in shown(at) and cells(DEFAULT.scaled) in shown(at)
    entering, leaving = strip(at, lang)
    assert entering.endswith(numbers(DEFAULT.scores))
    assert leaving.endswith(numbers(DEFAULT.scaled))
    assert links(at)[:2] == ["qkv", "masks"]
    assert r"{\sqrt{2}}" in page_text(at)  # the one-query example, labelled on its own
    title = catalogue(lang)["scaling.hand_title"]
    assert title in page_text(at)


def test_softmax_matrix_form_reads_stage_2s_q_k_v():
    at = open_page("pages/03_softmax.py", "zh", state={"_softmax.ex.a10.answered": 0.135})
    assert_clean(at)
    assert cells(unmasked_weights(DEFAULT)) in shown(at)
    assert cells(unmasked_weights(DEFAULT))[3] == cells(DEFAULT.weights)[3]  # ？ reads all
    assert rf"Q = {latex_matrix(DEFAULT.Q, 0)}" in page_text(at)
    assert "[1.340, 1.321]" in page_text(at)  # the seed's example stays, on its own
    # the strip hands on the row of ？ (the chain's own), not a₁,₀ of the exercise
    assert strip(at, "zh")[1].endswith("[0.221, 0.221, 0.109, 0.449]")


def test_multi_head_strip_and_the_one_head_note():
    at = open_page("pages/06_multi_head.py", folded=True)
    assert_clean(at)
    assert strip(at)[0].endswith(numbers(DEFAULT.A)) and "one head" in strip(at)[0]
    assert any("rank the keys in the same order" in i.value for i in at.info)


def test_a_stage_outside_the_chain_says_so_in_one_line_and_presenter_view_hides_numbers():
    at = open_page("pages/07_positions.py", folded=True)
    assert_clean(at)
    line = catalogue("en")["chain.line_positions"].replace("{stage.masks}", "5.1")
    assert any(line in c.value for c in at.caption)
    home = open_page(None)
    assert not any(catalogue("en")["chain.label"] in c.value for c in home.caption)
    present = open_page("pages/04_scaling.py", params={"present": "true"}, folded=True)
    entering, leaving = strip(present)
    assert entering.endswith("[4 × 4]") and leaving.endswith("[4 × 4]")  # no numbers: one line
    helps = [c.proto.help for c in present.caption]
    assert numbers(DEFAULT.scores) in helps and numbers(DEFAULT.scaled) in helps
