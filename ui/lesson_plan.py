"""A lesson: the teacher's ordered list of stages, each with the inputs chosen for it.

The teacher builds it with "add this page as it is now to the lesson" (the stage and its
URL parameters at that moment), saves it as a link or a small JSON file, and loads one
back; the arrow keys in presenter view then walk the lesson instead of the curriculum
(ui/class_session.py draws the builder and the walk; ui/presenter.py has the keys).

Plain functions over a tuple of `Step`s, no Streamlit, so they are unit-tested alone.
What comes back from a link or a file is checked strictly before it is used: JSON only
(never eval), a bounded size and number of steps and values, known stage ids, and keys
that are the step's own stage's or a shared namespace's (never the frame's values: the
language, presenter view, the class code). A value itself is checked by the page that
reads it, as any link's is (a bad one falls back to its default with a note).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

FORMAT = "tinyformer-lesson"  # the file's "format"; "version" 1
VERSION = 1
MAX_STEPS = 40
MAX_PARAMS = 40  # URL values of one step
MAX_KEY = 64
MAX_VALUE = 512
MAX_BYTES = 32_000  # of a file, and of a link's JSON once unpacked
MAX_LINK = 12_000  # characters of a link's value
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_~]+)+")


class PlanError(ValueError):
    """A lesson file or link that cannot be used; `key` is its translated message."""

    key = "class.lesson_bad"


class PlanFull(PlanError):
    key = "class.lesson_full"


@dataclass(frozen=True)
class Step:
    stage: str
    params: tuple[tuple[str, str], ...]  # sorted (key, value): hashable, one order

    def as_dict(self) -> dict[str, str]:
        return dict(self.params)


Plan = tuple[Step, ...]


def _own(stage: str, key: str, shared: Collection[str]) -> bool:
    return key.split(".", 1)[0] in (stage, *shared)


def step_from(stage: str, url: Mapping[str, str], shared: Collection[str] = ()) -> Step:
    """This page as it is now: the stage and those of its URL values that belong to it
    (its own, and a shared namespace's). The frame's values are left out: they are the
    teacher's, not the lesson's."""
    params = sorted((k, str(v)) for k, v in url.items()
                    if _own(stage, k, shared) and _KEY.fullmatch(k))
    if len(params) > MAX_PARAMS or any(len(v) > MAX_VALUE for _, v in params):
        raise PlanFull("step too large")
    return Step(stage, tuple(params))


def add(plan: Plan, step: Step) -> Plan:
    if len(plan) >= MAX_STEPS:
        raise PlanFull("lesson full")
    return (*plan, step)


def remove(plan: Plan, index: int) -> Plan:
    return plan[:index] + plan[index + 1:] if 0 <= index < len(plan) else plan


def step_at(plan: Plan, index: int | None, stage: str) -> int | None:
    """The index of the step the teacher is on: `index` if that step is this stage."""
    if index is not None and 0 <= index < len(plan) and plan[index].stage == stage:
        return index
    return None


def target(plan: Plan, index: int | None, forward: bool) -> int | None:
    """The step an arrow goes to from `index` (None: not started), or None at an end."""
    if not plan:
        return None
    if index is None:
        return 0 if forward else None
    wanted = index + (1 if forward else -1)
    return wanted if 0 <= wanted < len(plan) else None


# --- saving and loading ----------------------------------------------------------------
def _data(plan: Plan) -> dict:
    return {"format": FORMAT, "version": VERSION,
            "steps": [{"stage": s.stage, "params": s.as_dict()} for s in plan]}


def to_json(plan: Plan) -> str:
    return json.dumps(_data(plan), ensure_ascii=False, indent=1)


def from_json(text: str | bytes, stages: Collection[str],
              shared: Collection[str] = ()) -> Plan:
    """A lesson file's text, checked strictly; PlanError if anything is off."""
    if len(text) > MAX_BYTES:
        raise PlanError("too large")
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        data = json.loads(text, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise PlanError("not JSON") from error
    if not isinstance(data, dict) or set(data) != {"format", "version", "steps"}:
        raise PlanError("not a lesson")
    if data["format"] != FORMAT or data["version"] != VERSION:
        raise PlanError("not a lesson")
    steps = data["steps"]
    if not isinstance(steps, list) or not steps or len(steps) > MAX_STEPS:
        raise PlanError("steps")
    return tuple(_step(item, stages, shared) for item in steps)


def _no_constant(name: str) -> None:
    raise ValueError(name)  # NaN, Infinity: not JSON


def _step(item: object, stages: Collection[str], shared: Collection[str]) -> Step:
    if not isinstance(item, dict) or set(item) != {"stage", "params"}:
        raise PlanError("step")
    stage, params = item["stage"], item["params"]
    if not isinstance(stage, str) or stage not in stages:
        raise PlanError("stage")
    if not isinstance(params, dict) or len(params) > MAX_PARAMS:
        raise PlanError("params")
    for key, value in params.items():
        if (len(key) > MAX_KEY or not _KEY.fullmatch(key) or not _own(stage, key, shared)
                or not isinstance(value, str) or len(value) > MAX_VALUE
                or any(ord(c) < 32 for c in value)):
            raise PlanError("param")
    return Step(stage, tuple(sorted(params.items())))


def to_link(plan: Plan) -> str:
    """The lesson as one URL value: its JSON, compressed, in URL-safe base64."""
    text = json.dumps(_data(plan), ensure_ascii=False, separators=(",", ":"))
    packed = zlib.compress(text.encode(), 9)
    return base64.urlsafe_b64encode(packed).decode().rstrip("=")


def from_link(value: str, stages: Collection[str], shared: Collection[str] = ()) -> Plan:
    """A link's lesson value, checked as strictly as a file; the unpacked size is bounded
    before it is unpacked further (no zip bomb)."""
    if not value or len(value) > MAX_LINK:
        raise PlanError("link size")
    try:
        packed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        unpacker = zlib.decompressobj()
        text = unpacker.decompress(packed, MAX_BYTES + 1)
    except (binascii.Error, ValueError, zlib.error) as error:
        raise PlanError("not a lesson link") from error
    if len(text) > MAX_BYTES or unpacker.unconsumed_tail or not unpacker.eof:
        raise PlanError("link size")
    return from_json(text, stages, shared)
