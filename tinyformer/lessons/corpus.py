"""The customer-service corpus the tiny model learns from: who pays the return shipping?

Every question is a phrasing (a template) filled with an item and a reason; the answer
names the payer: the merchant (商家) when the goods are at fault (质量问题, 破损, ...),
the buyer (买家) when the buyer changed their mind (无理由退货, 拍错了, ...). The
running example 「商品有质量问题，运费谁承担？」 and its twin 「无理由退货，运费谁承担？」
are two of these questions (the twin's phrasing names no item; both are defined once, in
tinyformer.lessons.example).

Each (item, reason, phrasing) combination gives exactly one question, so the corpus is
the finite list of all combinations (``all_examples``); a seed decides which of them are
held out (``split_corpus``). The held-out questions combine words the model has seen,
never in that combination: they measure whether it learned the rule (the reason decides
the payer) rather than the sentences. The running example and its twin are always held
out, so the model answers them from what it learned, not from memory.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import Literal

from tinyformer.errors import ParameterError
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN
from tinyformer.tokenizer import CharVocab

Payer = Literal["merchant", "buyer"]
PAYER_WORDS: dict[str, str] = {"merchant": "商家", "buyer": "买家"}

ITEMS: tuple[str, ...] = (
    "商品", "衣服", "手机", "杯子", "鞋子", "裤子", "耳机", "书包", "台灯", "键盘",
    "鼠标", "雨伞", "帽子", "手表", "玩具", "床单", "枕头", "充电器", "裙子", "外套",
    "眼镜", "音箱", "被子", "水壶",
)  # fmt: skip
MERCHANT_REASONS: tuple[str, ...] = (
    "有质量问题", "破损", "发错货", "漏发", "与描述不符", "有瑕疵", "坏了", "少了配件",
    "是假货", "过期了", "有划痕", "尺码发错了", "颜色发错了",
)  # fmt: skip
BUYER_REASONS: tuple[str, ...] = (
    "无理由退货", "不喜欢", "拍错了", "不想要了", "买多了", "尺码选错了", "颜色选错了",
    "不合适", "改主意了", "买贵了", "用不上了", "不需要了",
)  # fmt: skip
# {item} and {reason} are the slots; a phrasing without {item} names no item.
PHRASINGS: tuple[str, ...] = (
    "{item}{reason}，运费谁承担？",
    "{reason}，运费谁承担？",
    "我买的{item}{reason}，退货运费谁出？",
    "请问{item}{reason}，运费由谁承担？",
    "{reason}的话，退货运费谁付？",
    "{item}{reason}，寄回的运费谁出？",
)
ANSWER = "{payer}承担。"  # the payer's word comes first: the answering position predicts it

ALWAYS_HELD_OUT: tuple[str, ...] = (RUNNING_EXAMPLE, TWIN)

DEFAULT_SEED = 0
DEFAULT_HELDOUT_FRACTION = 0.2
HELDOUT_FRACTION_BOUNDS = (0.05, 0.5)
SEED_BOUNDS = (0, 2**31 - 1)


@dataclass(frozen=True)
class Example:
    """One question with its answer, and where its item and reason sit in the question."""

    item: str | None  # None for a phrasing that names no item
    reason: str
    phrasing: int  # index into PHRASINGS
    question: str
    answer: str  # e.g. 商家承担。
    payer: Payer
    reason_span: tuple[int, int]  # [start, end) character offsets in question
    item_span: tuple[int, int] | None  # [start, end), None when no item is named

    @property
    def text(self) -> str:
        """Question and answer as one training sequence."""
        return self.question + self.answer

    @property
    def combination(self) -> tuple[str | None, str, int]:
        return (self.item, self.reason, self.phrasing)


@dataclass(frozen=True)
class Corpus:
    """All combinations, split into training and held-out examples by a seed."""

    seed: int
    heldout_fraction: float
    train: tuple[Example, ...]
    heldout: tuple[Example, ...]


def payer_of(reason: str) -> Payer:
    """Who pays for this reason; a reason the corpus lacks is an error."""
    if reason in MERCHANT_REASONS:
        return "merchant"
    if reason in BUYER_REASONS:
        return "buyer"
    raise ParameterError(
        "corpus_unknown_reason", f"{reason!r} is not a reason of the corpus", reason=reason
    )


def make_example(item: str | None, reason: str, phrasing: int) -> Example:
    """Fill one phrasing; the spans come from the template, not from searching the text."""
    template = PHRASINGS[phrasing]
    if ("{item}" in template) != (item is not None):
        raise ParameterError(
            "corpus_item_slot",
            f"phrasing {phrasing} and item {item!r} do not fit together",
            phrasing=phrasing,
        )
    payer = payer_of(reason)
    question, spans = _fill(template, {"item": item or "", "reason": reason})
    return Example(
        item=item,
        reason=reason,
        phrasing=phrasing,
        question=question,
        answer=ANSWER.format(payer=PAYER_WORDS[payer]),
        payer=payer,
        reason_span=spans["reason"],
        item_span=spans.get("item"),
    )


def _fill(template: str, values: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """Format the template, recording where each slot's value lands."""
    out, spans, rest = "", {}, template
    while "{" in rest:
        before, _, after = rest.partition("{")
        name, _, rest = after.partition("}")
        out += before
        spans[name] = (len(out), len(out) + len(values[name]))
        out += values[name]
    return out + rest, spans


@cache
def all_examples() -> tuple[Example, ...]:
    """Every combination once, in a fixed order (phrasing, then item, then reason)."""
    reasons = MERCHANT_REASONS + BUYER_REASONS
    examples = []
    for phrasing, template in enumerate(PHRASINGS):
        items: tuple[str | None, ...] = ITEMS if "{item}" in template else (None,)
        for item in items:
            examples.extend(make_example(item, reason, phrasing) for reason in reasons)
    return tuple(examples)


@cache
def _by_question() -> dict[str, Example]:
    return {example.question: example for example in all_examples()}


def find_question(question: str) -> Example | None:
    """The corpus's example with exactly this question, or None if none has it."""
    return _by_question().get(question)


@cache
def vocabulary() -> CharVocab:
    """Character vocabulary of every question and answer (fixed order, split-independent)."""
    return CharVocab.from_corpus(example.text for example in all_examples())


@cache
def split_corpus(
    seed: int = DEFAULT_SEED, heldout_fraction: float = DEFAULT_HELDOUT_FRACTION
) -> Corpus:
    """Split every combination into training and held-out examples, reproducibly.

    A seeded shuffle picks round(fraction * total) held-out combinations, the running
    example and its twin among them; both parts keep the canonical order.
    """
    _check_bounds("seed", seed, SEED_BOUNDS, whole=True)
    _check_bounds("heldout_fraction", heldout_fraction, HELDOUT_FRACTION_BOUNDS, whole=False)
    examples = all_examples()
    forced = [i for i, ex in enumerate(examples) if ex.question in ALWAYS_HELD_OUT]
    others = [i for i in range(len(examples)) if i not in forced]
    random.Random(seed).shuffle(others)  # a private RNG: the global one stays untouched
    n_heldout = round(heldout_fraction * len(examples))
    heldout = set(forced) | set(others[: n_heldout - len(forced)])
    return Corpus(
        seed=seed,
        heldout_fraction=heldout_fraction,
        train=tuple(ex for i, ex in enumerate(examples) if i not in heldout),
        heldout=tuple(ex for i, ex in enumerate(examples) if i in heldout),
    )


def _check_bounds(name: str, value: float, bounds: tuple[float, float], whole: bool) -> None:
    low, high = bounds
    kinds = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        raise ParameterError(
            "corpus_setting_range",
            f"{name} must be a {'whole ' if whole else ''}number from {low} to {high}, "
            f"got {value!r}",
            name=name,
            value=str(value),
            low=low,
            high=high,
        )
