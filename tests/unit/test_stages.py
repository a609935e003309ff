"""The lesson's order (ui/stages.py) is the one the docs, the overview and every text
follow: softmax before what acts on it, the cache after the loop it speeds up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui.i18n import LANGS, catalogue
from ui.stages import NAV_SECTIONS, PIPELINE, STAGES

ROOT = Path(__file__).resolve().parents[2]
IDS = [s.id for s in STAGES]


def test_softmax_is_taught_before_scaling_and_masks_and_the_cache_after_generation():
    assert IDS.index("qkv") + 1 == IDS.index("softmax")
    assert IDS.index("softmax") < IDS.index("scaling") < IDS.index("masks") < IDS.index("context")
    assert IDS.index("decoding") + 1 == IDS.index("kv_cache")
    assert [s.number for s in STAGES][4:10] == ["2", "3", "4", "5.1", "5.2", "6"]


def test_navigation_and_overview_follow_the_order():
    navigated = [i for _, ids in NAV_SECTIONS for i in ids if i != "home"]
    assert navigated == IDS
    in_diagram = [i for _, ids in PIPELINE for i in ids]
    assert in_diagram == IDS


def test_the_curriculum_doc_lists_the_stages_in_order():
    rows = re.findall(r"^\| ([\d.]+) \| `/(\w+)` \| `([\w/.]+)` \|",
                      (ROOT / "docs/curriculum.md").read_text(encoding="utf-8"), re.M)
    assert rows == [(s.number, s.id, s.path) for s in STAGES]


@pytest.mark.parametrize("lang", LANGS)
def test_every_stage_reference_names_a_stage(lang):
    """"{stage.<id>}" is filled with the stage's number when the text is shown."""
    refs = {m for text in catalogue(lang).values() for m in re.findall(r"\{stage\.(\w+)\}", text)}
    assert refs and refs <= set(IDS)


def test_no_text_types_a_renumbered_stage_number_by_hand():
    """Stages 3-6 and 10.3 were renumbered; a typed number would now point elsewhere."""
    number = r"(?:3|4|5|5\.[12]|6|6\.[12])"
    typed = re.compile(rf"[Ss]tages? {number}\b|第 ?{number} ?阶段")
    assert [k for lang in LANGS for k, v in catalogue(lang).items() if typed.search(v)] == []
