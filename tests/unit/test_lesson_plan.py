"""The lesson (ui/lesson_plan.py): built step by step from pages, walked by the arrows,
saved as a file or a link and loaded back only when everything in it checks out."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from ui import lesson_plan as lp

STAGES = {"home", "softmax", "masks", "logits"}
SHARED = ("hand", "chain")


def _plan() -> lp.Plan:
    first = lp.step_from("softmax", {"lang": "zh", "class": "ABCDEF", "softmax.kB": "2, 0",
                                     "hand.q": "1, 0", "masks.k": "3", "present": "true"},
                         SHARED)
    return lp.add(lp.add((), first), lp.step_from("masks", {"masks.step": "2"}, SHARED))


def test_a_step_keeps_its_stages_and_shared_values_not_the_frames():
    plan = _plan()
    assert plan[0] == lp.Step("softmax", (("hand.q", "1, 0"), ("softmax.kB", "2, 0")))
    assert plan[1].as_dict() == {"masks.step": "2"}


def test_the_walk_goes_step_by_step_and_stops_at_both_ends():
    plan = _plan()
    assert lp.target(plan, None, True) == 0 and lp.target(plan, None, False) is None
    assert lp.target(plan, 0, True) == 1 and lp.target(plan, 1, True) is None
    assert lp.target(plan, 1, False) == 0 and lp.target((), None, True) is None
    assert lp.step_at(plan, 1, "masks") == 1
    assert lp.step_at(plan, 1, "softmax") is None  # the teacher wandered off the lesson
    assert lp.remove(plan, 0) == plan[1:] and lp.remove(plan, 5) == plan


def test_a_file_and_a_link_give_the_same_lesson_back():
    plan = _plan()
    assert lp.from_json(lp.to_json(plan), STAGES, SHARED) == plan
    assert lp.from_json(lp.to_json(plan).encode(), STAGES, SHARED) == plan
    link = lp.to_link(plan)
    assert link.replace("-", "").replace("_", "").isalnum()  # safe in a URL as it is
    assert lp.from_link(link, STAGES, SHARED) == plan


def test_a_lesson_is_bounded():
    step = lp.step_from("softmax", {}, SHARED)
    plan = ()
    for _ in range(lp.MAX_STEPS):
        plan = lp.add(plan, step)
    with pytest.raises(lp.PlanFull):
        lp.add(plan, step)
    with pytest.raises(lp.PlanFull):
        lp.step_from("softmax", {f"softmax.v{i}": "1" for i in range(lp.MAX_PARAMS + 1)})


def _file(steps) -> str:
    return json.dumps({"format": lp.FORMAT, "version": 1, "steps": steps})


@pytest.mark.parametrize("text", [
    "", "not json", "[]", "{}", "__import__('os')",
    _file([]),  # no step
    _file([{"stage": "nowhere", "params": {}}]),  # an unknown stage
    _file([{"stage": "softmax", "params": {"lang": "en"}}]),  # the frame's value
    _file([{"stage": "softmax", "params": {"masks.k": "3"}}]),  # another stage's value
    _file([{"stage": "softmax", "params": {"softmax.kB": 2}}]),  # not text
    _file([{"stage": "softmax", "params": {"softmax.kB": "x" * (lp.MAX_VALUE + 1)}}]),
    _file([{"stage": "softmax", "params": {"softmax.kB": "a\nb"}}]),
    _file([{"stage": "softmax", "params": {}, "run": "rm -rf /"}]),  # an unknown field
    _file([{"stage": "softmax", "params": {}}] * (lp.MAX_STEPS + 1)),
    json.dumps({"format": "other", "version": 1, "steps": [{"stage": "softmax", "params": {}}]}),
    '{"format": "tinyformer-lesson", "version": NaN, "steps": []}',
    "[" * 20_000 + "]" * 20_000,  # deep and too large
    "[" * 15_000 + "]" * 15_000,  # deep but within the size
])
def test_a_bad_file_is_refused_whole(text):
    with pytest.raises(lp.PlanError):
        lp.from_json(text, STAGES, SHARED)


def test_a_bad_link_is_refused_and_a_zip_bomb_is_not_unpacked():
    for value in ("", "%%%", "abc", "x" * (lp.MAX_LINK + 1),
                  base64.urlsafe_b64encode(b"not zlib").decode()):
        with pytest.raises(lp.PlanError):
            lp.from_link(value, STAGES, SHARED)
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * 5_000_000, 9)).decode()
    assert len(bomb) < lp.MAX_LINK  # small as a link, five million bytes unpacked
    with pytest.raises(lp.PlanError):
        lp.from_link(bomb, STAGES, SHARED)
