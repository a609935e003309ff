"""The running example's hand model on stages 8.1, 9.1 and 10.1 (tinyformer.lessons.chain):
each shows the chain's own numbers, computed once here by run_chain, and an edit of
运费's embedding row (through a shared link, and on stage 2 in the same session)
reaches the numbers of 8.1 and 10.1."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import assert_clean, open_page, open_rest, page_text, tables
from tinyformer.lessons.chain import ChainParams, ChainRun, run_chain
from ui.fmt import latex_vec, vec

FFN, NORM, LOGITS = "pages/08_ffn.py", "pages/09_residual_norm.py", "pages/10_logits.py"
EDITED_X = "2, -1; 0, 1; 1, 1; 1, -1"  # 运费's row [1, 0] becomes [2, -1]


def cells(matrix: torch.Tensor) -> list[list[str]]:
    """A matrix as a table of the page shows it: three decimals."""
    return [[f"{v:.3f}" for v in row] for row in matrix.tolist()]


def edited() -> ChainRun:
    X = torch.tensor([[2.0, -1.0], [0, 1], [1, 1], [1, -1]], dtype=torch.float64)
    return run_chain(ChainParams(**{**ChainParams.defaults().__dict__, "X": X}))


def ffn_numbers(at, run: ChainRun) -> None:
    """8.1 shows the chain's A and H, the FFN's hidden values and its output."""
    shown = tables(at)
    assert cells(torch.cat([run.A, run.H], dim=1)) in [f.values.tolist() for f in shown]
    assert cells(run.ffn.hidden) in [f.values.tolist() for f in shown]
    assert cells(run.ffn.output) in [f.values.tolist() for f in shown]
    assert latex_vec(run.H[3]) in page_text(at)


def test_ffn_reads_the_chain():
    at = open_page(FFN, "zh")
    assert_clean(at)
    run = run_chain()
    ffn_numbers(at, run)
    assert vec(run.H[3]) == "[1.161, -0.807]"  # the chain's H[？], as the unit test pins it
    assert vec(run.ffn.hidden[3]) == "[1.161, 0.000, 0.000]"  # ReLU cuts two units


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_residual_norm_reads_the_chain_in_both_languages(lang):
    """9.1: R = X + A, H = RMSNorm(R) (RMS and the last row worked out), LayerNorm of
    the same rows once its exercise is answered, then Y = H + FFN(H)."""
    at = open_page(NORM, lang)
    assert_clean(at)
    run = run_chain()
    shown = [f.values.tolist() for f in tables(at)]
    assert cells(torch.cat([run.X, run.A, run.R], dim=1)) in shown
    assert cells(torch.cat([run.norm.rms, run.H], dim=1)) in shown
    assert cells(torch.cat([run.H, run.ffn.output, run.Y], dim=1)) in shown
    text = page_text(at)
    assert latex_vec(run.R[3]) in text and latex_vec(run.H[3]) in text
    assert "LayerNorm(R)[0]" not in text  # it answers the exercise on adding 10
    at = open_page(NORM, lang, state={"_residual_norm.ex.shift.answered": 0})
    layer = [f.values.tolist() for f in tables(at) if "LayerNorm(R)[0]" in f.columns]
    assert layer == [[["1.000", "-1.000", "1.414", "0.000"],  # LayerNorm: only the sign left
                      ["-1.000", "1.000", "0.198", "1.400"],
                      ["-1.000", "1.000", "0.722", "1.216"],
                      ["1.000", "-1.000", "1.161", "-0.807"]]]
    assert "[2.322, -0.807]" in page_text(at)  # Y[？], what stage 10.1 reads


def logits_numbers(at, run: ChainRun) -> None:
    """10.1 shows the chain's logits of 「？」 and their probabilities."""
    text = page_text(at)
    assert latex_vec(run.probs) in text
    for i in range(3):
        assert f"= {run.logits[i]:.3f}" in text


def test_logits_read_the_chain():
    at = open_page(LOGITS, "zh")
    assert_clean(at)
    run = run_chain()
    logits_numbers(at, run)
    assert vec(run.logits) == "[2.322, -0.807, 0.758]"  # the chain's unit test's digits
    assert vec(run.probs) == "[0.798, 0.035, 0.167]"
    assert "p = 0.798" in at.info[0].value and "商家" in at.info[0].value  # not trained: said


def test_a_shared_link_with_an_edited_embedding_reaches_8_1_and_10_1():
    run, before = edited(), run_chain()
    assert not torch.allclose(run.logits, before.logits)  # the edit matters downstream
    for page, check in ((FFN, ffn_numbers), (LOGITS, logits_numbers)):
        at = open_page(page, "zh", params={"chain.X": EDITED_X})
        assert_clean(at)
        check(at, run)
        assert at.query_params["chain.X"] == EDITED_X  # the stage's own link carries it


def test_an_edit_on_stage_2_reaches_8_1_and_10_1_in_the_same_session():
    at = open_page("pages/02_qkv.py", "zh")
    at.text_input("chain.X").input(EDITED_X).run()
    assert_clean(at)
    run = edited()
    for page, check in ((FFN, ffn_numbers), (LOGITS, logits_numbers)):
        at.switch_page(page)
        at.query_params.clear()  # the new stage's own URL, as st.navigation gives it
        at.query_params["lang"] = "zh"
        at.run()
        open_rest(at)  # 8.1's running example is past the page's fold
        assert_clean(at)
        check(at, run)
