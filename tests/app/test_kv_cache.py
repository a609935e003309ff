"""Stage 10.3 in AppTest: the loop of stage 10.2 without and with the cache, and the K/V
cache calculator (docs/curriculum.md, stages 6 and 10.3): the worked numbers, edits,
presets (Mistral's sliding window), shared links, bad values and the exercises."""

from __future__ import annotations

import pytest

from tests.app.helpers import (
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
    text_above,
)
from tinyformer.lessons.decoding import cached_or_recomputed
from tinyformer.model import TinyDecoder
from ui.i18n import _STAGE_REF, _stage_number, catalogue
from ui.stages import by_id

PAGE = "pages/10_kv_cache.py"
# Both choice exercises answered before the first run: what they gate is drawn.
ANSWERED = {"_kv_cache.ex.reuse.answered": 0, "_kv_cache.ex.stored.answered": 0}
LLAMA3 = r"32 \times 8 \times 128 \times 8192 \times 2 \times 2 \\ &= 1{,}073{,}741{,}824"
PER_TOKEN = r"32 \times 8 \times 128 \times 2 \times 2 \\ &= 131{,}072"  # step 1: one position
LONGER = r"32 \times 8 \times 128 \times 16384 \times 2 \times 2 \\ &= 2{,}147{,}483{,}648"


def said(lang: str, key: str) -> str:
    """A text as the page shows it: stage references filled with the stages' numbers."""
    return _STAGE_REF.sub(_stage_number, catalogue(lang)[key])


def metrics(at) -> list[str]:
    return [m.value for m in at.metric]


def exact_line(lang: str, total: str, mha: str, per_token: str, per_token_h: str) -> str:
    return catalogue(lang)["kv_cache.exact"].format(total=total, mha=mha, per_token=per_token,
                                                   per_token_h=per_token_h)


def test_defaults_show_the_worked_numbers(lang: str) -> None:
    at = open_page(PAGE, lang, state=ANSWERED)
    assert_clean(at)
    assert at.title[0].value.startswith(f"{by_id('kv_cache').number} · ")
    text = page_text(at)
    assert "kv_cache." not in text
    assert LLAMA3 in text
    assert metrics(at) == ["1 GiB", "4 GiB", "1/4"]
    assert exact_line(lang, "1,073,741,824", "4,294,967,296", "131,072", "128 KiB") in text
    assert ".000 " not in text  # no trailing zeros on a size ("128.000 KiB")
    assert catalogue(lang)["kv_cache.saving_gqa"].format(
        q=32, kv=8, ratio="1/4", saved="3/4", saved_bytes="3,221,225,472", saved_h="3 GiB") in text
    assert "67,108,864" in text  # Falcon-7B's cache in the presets table: 32·1·64·8192·2·2
    assert said(lang, "kv_cache.what") in text  # incl. why RoPE's keys stay valid
    # Mistral-7B-v0.1's sliding window caps its cache at 4,096 of the 8,192 positions.
    assert catalogue(lang)["kv_cache.compare_note"].format(ratio="1/4", w="4,096",
                                                           m="4,096") in text
    assert "536,870,912" in text  # 32·8·128·4096·2·2: half of Llama-3-8B's 1 GiB


def test_edits_change_every_number() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.number_input("kv_cache.L").set_value(2).run()
    at.slider("_kv_cache.seq~s").set_value(1024).run()
    assert_clean(at)
    text = page_text(at)
    assert r"2 \times 8 \times 128 \times 1024 \times 2 \times 2 \\ &= 8{,}388{,}608" in text
    assert metrics(at) == ["8 MiB", "32 MiB", "1/4"]
    at.selectbox("kv_cache.bytes").set_value(4).run()
    at.number_input("kv_cache.kvh").set_value(1).run()
    assert metrics(at) == ["2 MiB", "64 MiB", "1/32"]  # 2·1·128·1024·2·4 = 2,097,152
    assert at.query_params["kv_cache.kvh"] == "1" and at.query_params["kv_cache.seq"] == "1024"


def test_presets_fill_the_calculator() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.button("_kv_cache.preset.Falcon-7B").click().run()
    assert_clean(at)
    assert at.number_input("kv_cache.qh").value == 71
    assert metrics(at) == ["64 MiB", "4.438 GiB", "1/71"]  # 71 · 64 MiB = 4.4375 GiB
    assert at.query_params["kv_cache.qh"] == "71"
    at.button("_kv_cache.preset.Llama-2-7B").click().run()
    assert metrics(at) == ["4 GiB", "4 GiB", "1"]
    assert catalogue("en")["kv_cache.saving_mha"].format(q=32, kv=32) in page_text(at)


def test_a_shared_link_reproduces_the_numbers() -> None:
    params = {"kv_cache.L": "80", "kv_cache.qh": "64", "kv_cache.kvh": "8", "kv_cache.hd": "128",
              "kv_cache.seq": "4096"}
    at = open_page(PAGE, params=params, state=ANSWERED)  # Llama-2-70B at 4096 tokens
    assert_clean(at)
    assert metrics(at) == ["1.25 GiB", "10 GiB", "1/8"]
    assert "1,342,177,280" in page_text(at)  # 80 · 8 · 128 · 4096 · 2 · 2


def test_the_largest_setting_stays_exact() -> None:
    params = {"kv_cache.L": "1000", "kv_cache.qh": "1024", "kv_cache.kvh": "1024",
              "kv_cache.hd": "1024", "kv_cache.seq": "1048576", "kv_cache.bytes": "4"}
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    assert metrics(at)[0] == "8000 TiB"
    assert f"{1000 * 1024 * 1024 * 1048576 * 2 * 4:,}" in page_text(at)


@pytest.mark.parametrize(("q", "kv"), [(32, 3), (8, 16)])
def test_heads_that_cannot_share_evenly_are_one_clear_error(lang: str, q: int, kv: int) -> None:
    at = open_page(PAGE, lang, params={"kv_cache.qh": str(q), "kv_cache.kvh": str(kv)},
                   state=ANSWERED)
    assert_clean(at)
    message = catalogue(lang)["errors.heads_not_divisible"].format(heads=q, kv_heads=kv)
    assert [e.value for e in at.error] == [message]
    assert "67,108,864" in page_text(at)  # the rest of the page still renders


@pytest.mark.parametrize(("key", "bad"), [
    ("kv_cache.L", "abc"), ("kv_cache.L", "0"), ("kv_cache.L", "1001"), ("kv_cache.qh", "nan"),
    ("kv_cache.kvh", "inf"), ("kv_cache.hd", "1e300"), ("kv_cache.hd", "2.5"),
    ("kv_cache.seq", ""), ("kv_cache.seq", "-1"), ("kv_cache.seq", "10000000"),
    ("kv_cache.bytes", "3"), ("kv_cache.bytes", "two"),
])
def test_a_bad_link_value_gives_one_note_and_the_default(key: str, bad: str) -> None:
    at = open_page(PAGE, params={key: bad}, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1
    assert LLAMA3 in page_text(at)


def test_exercises_come_first(lang: str) -> None:
    """The loop's table after 'reuse', the calculator after 'stored', its worked steps
    after 'longer'."""
    loop = cached_or_recomputed(TinyDecoder.seeded(7), [3, 8, 12, 5, 17, 42, 23, 6], 5)
    at = open_page(PAGE, lang)
    assert not tables(at)  # the table answers the exercise: not before it
    reveal(at, "kv_cache.reuse", 0)
    assert len(at.success) == 1
    table = tables(at)[0]
    assert table.values.tolist() == [["0–7", "8", "8"], ["0–8", "9", "1"], ["0–9", "10", "1"],
                                     ["0–10", "11", "1"], ["0–11", "12", "1"]]
    assert list(table.index) == [catalogue(lang)["kv_cache.step_row"].format(k=k)
                                 for k in range(1, 6)]
    text = page_text(at)
    assert f"**`{' '.join(map(str, loop.new))}`**" in text  # the same new tokens as 10.2
    assert " 50 " in text and " 12 " in text  # keys computed without / with the cache
    steps = catalogue(lang)["kv_cache.ex2_steps"].format(total="2,147,483,648", gib="2 GiB")
    assert steps not in page_text(at)  # the worked steps only after answering
    assert "H_{kv}" not in page_text(at)  # the calculator's formula answers "stored"
    reveal(at, "kv_cache.stored", 0)
    assert any(said(lang, "kv_cache.ex_explain") in s.value for s in at.success)
    answer(at, "kv_cache.longer", 2.0)
    assert steps in explanations(at) and LONGER in explanations(at)
    assert catalogue(lang)["kit.right_number"].format(answer="2.00") in [
        s.value for s in at.success]
    answer(at, "kv_cache.longer", 1.0)  # the 8,192 tokens' cache is not the answer
    assert len(at.warning) == 1


def test_exercises_come_before_what_answers_them() -> None:
    at = open_page(PAGE, state={"_kv_cache.ex.stored.answered": 0})
    assert "H_{kv}" not in text_above(at, "_kv_cache.ex.stored.choice")  # no formula above it
    above = text_above(at, "_kv_cache.ex.longer.value")
    assert LLAMA3 in above  # the calculator is above: 8,192 tokens, one sequence
    assert "2,147,483,648" not in above and "2 GiB" not in above


@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step: int) -> None:
    at = open_page(PAGE, params={"kv_cache.hand.step": str(step)}, state=ANSWERED)
    assert_clean(at)
    text = page_text(at)
    assert [PER_TOKEN in text, LLAMA3 in text, bool(at.metric)] == [k < step for k in range(3)]
