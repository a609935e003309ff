"""Trace any number of a forward pass back to the token IDs (stage 11).

A cell of an intermediate (``Address``: a step of ``forward_pass.forward_steps``, or
"ids", the input IDs themselves) was computed from cells of EARLIER intermediates and
from the model's parameters. ``link`` names those cells (``Source``: its address, its
value, and the term it adds where the computation is a sum) and recomputes the cell,
in float64, from the sources' own values as the earlier intermediates hold them: what a
page shows for one step of a trail is exactly what produced the number.

    step = link(run, Address("logits", 0, 7, 40))   # the logit of ID 40 at position 7
    step.recomputed == step.value                    # up to float32 rounding
    step.sources[0].address                          # Address("final", 0, 7, c): go back

Following the first source from any cell reaches "ids" (``trail_to_ids``); the token and
position tables are parameters, so a position row ends a trail too.

A trail is written in a URL as addresses joined by "~" ("logits-0-7-40~final-0-7-3");
``parse_trail`` refuses a forged one (an unknown step, an index out of range, a cell
that is no source of the one before it) with a TrailError.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError
from tinyformer.lessons.checkpoint import TrainedModel
from tinyformer.lessons.forward_pass import ForwardRun, Step, forward_run

IDS = "ids"  # the input IDs: where every trail ends
MAX_TRAIL = 64  # addresses in one trail: longer than any path from a probability to an ID
_ADDRESS = re.compile(r"^(ids|(?:b\d{1,2}\.)?[a-z_0-9]{1,12})-(\d{1,4})-(\d{1,4})-(\d{1,5})$")


def text_run(trained: TrainedModel, text: str, device: str = "cpu") -> ForwardRun:
    """The trained model's forward pass over any text of characters it knows (the
    teacher's own sentence: unlike forward_pass.trained_run, not only the corpus's
    questions), its IDs named by their characters. The model is copied to ``device``."""
    encoded = trained.vocab.encode(text)
    if not text:
        raise ParameterError("trained_question_empty", "the question is empty")
    if encoded.unknown:
        chars = "".join(encoded.unknown)
        raise ParameterError("trained_question_unknown",
                             f"the model never saw these characters in training: {chars}",
                             chars=chars)
    limit = trained.model.max_length
    if len(encoded.ids) > limit:
        raise ParameterError("trained_question_too_long",
                             f"the text has {len(encoded.ids)} characters; at most {limit}",
                             length=len(encoded.ids), limit=limit)
    model = copy.deepcopy(trained.model).to(device)
    return forward_run(model, encoded.ids, trained.vocab.tokens)


class TrailError(ValueError):
    """A trail that names no path of this run (a forged or stale link). `key` says why:
    too_long, bad_cell, no_cell or not_source (the page translates it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, order=True)
class Address:
    """Cell (i, c) of group g (a head, else 0) of one intermediate [G, R, C]."""

    step: str  # a Step id ("b0.q", "logits") or IDS
    g: int
    i: int
    c: int

    def text(self) -> str:
        return f"{self.step}-{self.g}-{self.i}-{self.c}"


@dataclass(frozen=True)
class Source:
    """One earlier cell a cell was computed from."""

    address: Address
    value: float
    part: float | None = None  # the term this source adds to the cell (sums only)


@dataclass(frozen=True)
class Link:
    """One cell and what it was computed from: sources first to follow first (the
    same column, the largest term), and the value recomputed from them in float64."""

    address: Address
    value: float
    op: str  # "id", the Step's op, or "position" (a position row: a parameter)
    sources: tuple[Source, ...]
    recomputed: float


def steps_by_id(run: ForwardRun) -> dict[str, Step]:
    return {step.id: step for step in run.steps}


def value_of(run: ForwardRun, address: Address) -> float:
    if address.step == IDS:
        return float(run.ids[address.i])
    return float(steps_by_id(run)[address.step].output[address.g, address.i, address.c])


def exists(run: ForwardRun, address: Address) -> bool:
    """Does this cell exist in this run?"""
    if address.step == IDS:
        return address.g == 0 and address.c == 0 and 0 <= address.i < len(run.ids)
    step = steps_by_id(run).get(address.step)
    if step is None:
        return False
    return all(0 <= v < n for v, n in zip((address.g, address.i, address.c),
                                          step.output.shape, strict=True))


def _input_of(run: ForwardRun, step: Step) -> str:
    """The step whose output a norm (or the first residual) reads."""
    if step.name == "norm1" or step.name == "resid1":
        return "x0" if step.block == 0 else f"b{step.block - 1}.resid2"
    if step.name == "norm2":
        return f"b{step.block}.resid1"
    return f"b{len(run.model.blocks) - 1}.resid2"  # the final norm


_LEFT = {"q": "norm1", "k": "norm1", "v": "norm1", "proj": "merged", "ffn_hidden": "norm2",
         "ffn_out": "ffn_hidden"}  # a linear step -> the step of its block it multiplies


def link(run: ForwardRun, address: Address) -> Link:
    """What cell `address` of `run` was computed from, and its value recomputed."""
    if not exists(run, address):
        raise TrailError("no_cell", f"no cell {address.text()} in this run")
    value = value_of(run, address)
    if address.step == IDS:
        return Link(address, value, "id", (), value)
    step = steps_by_id(run)[address.step]
    i, c = address.i, address.c
    model = run.model
    if step.name == "tok":
        source = Source(Address(IDS, 0, i, 0), float(run.ids[i]))
        row = model.token.weight.detach()[run.ids[i], c]
        return Link(address, value, "lookup", (source,), float(row))
    if step.name == "pos":
        return Link(address, value, "position", (), float(model.position.weight.detach()[i, c]))
    if step.op == "add":
        first, second = (("tok", "pos") if step.name == "x0" else
                         (_input_of(run, step), f"b{step.block}.proj")
                         if step.name == "resid1" else
                         (f"b{step.block}.resid1", f"b{step.block}.ffn_out"))
        sources = tuple(_source(run, Address(s, 0, i, c), part=True) for s in (first, second))
        return Link(address, value, "add", sources, sum(s.value for s in sources))
    if step.op == "norm":
        return _norm(run, step, address)
    if step.op == "concat":
        head, column = divmod(c, step.head_dim)
        source = _source(run, Address(f"b{step.block}.heads", head, i, column))
        return Link(address, value, "concat", (source,), source.value)
    if step.op == "score":
        return _score(run, step, address)
    if step.op == "softmax":
        return _softmax(run, step, address)
    return _linear(run, step, address)


def _source(run: ForwardRun, address: Address, part: float | bool | None = None) -> Source:
    value = value_of(run, address)
    return Source(address, value, value if part is True else part)


def _norm(run: ForwardRun, step: Step, address: Address) -> Link:
    i, c = address.i, address.c
    before = _input_of(run, step)
    width = step.output.shape[-1]
    row = [value_of(run, Address(before, 0, i, k)) for k in range(width)]
    mean = math.fsum(row) / width
    var = math.fsum((x - mean) ** 2 for x in row) / width
    module = _norm_module(run, step)
    std = math.sqrt(var + module.eps)
    value = (row[c] - mean) / std * float(step.gamma[c]) + float(step.beta[c])
    order = [c] + [k for k in range(width) if k != c]  # its own column first
    sources = tuple(Source(Address(before, 0, i, k), row[k]) for k in order)
    return Link(address, value_of(run, address), "norm", sources, value)


def _norm_module(run: ForwardRun, step: Step):
    if step.block is None:
        return run.model.final_norm
    block = run.model.blocks[step.block]
    return block.norm1 if step.name == "norm1" else block.norm2


def _score(run: ForwardRun, step: Step, address: Address) -> Link:
    g, i, j = address.g, address.i, address.c
    hd = step.scale_dim
    p = f"b{step.block}."
    if not math.isfinite(float(step.output[g, i, j])):  # blocked by the mask: no inputs
        return Link(address, float("-inf"), "score", (), float("-inf"))
    scale = math.sqrt(hd)
    pairs = []
    for d in range(hd):
        q = _source(run, Address(p + "q", 0, i, g * hd + d))
        k = _source(run, Address(p + "k", 0, j, g * hd + d))
        term = q.value * k.value / scale
        pairs.append((abs(term), Source(q.address, q.value, term),
                      Source(k.address, k.value, term)))
    pairs.sort(key=lambda pair: -pair[0])
    sources = tuple(s for _, q, k in pairs for s in (q, k))
    total = math.fsum(q.part for _, q, _ in pairs)
    return Link(address, value_of(run, address), "score", sources, total)


def _softmax(run: ForwardRun, step: Step, address: Address) -> Link:
    g, i, c = address.g, address.i, address.c
    if step.name == "probs":  # softmax of the last position's logits
        before, row_at, group = "logits", len(run.ids) - 1, 0
    else:
        before, row_at, group = f"b{step.block}.scores", i, g
    count = step.scores.shape[-1]
    row = [value_of(run, Address(before, group, row_at, k)) for k in range(count)]
    live = [k for k in range(count) if math.isfinite(row[k])]
    top = max(row[k] for k in live)
    total = math.fsum(math.exp(row[k] - top) for k in live)
    value = math.exp(row[c] - top) / total if math.isfinite(row[c]) else 0.0
    order = ([c] if c in live else []) + sorted((k for k in live if k != c),
                                                key=lambda k: -row[k])
    sources = tuple(Source(Address(before, group, row_at, k), row[k]) for k in order)
    return Link(address, value_of(run, address), "softmax", sources, value)


def _linear(run: ForwardRun, step: Step, address: Address) -> Link:
    g, i, c = address.g, address.i, address.c
    p = "" if step.block is None else f"b{step.block}."
    if step.name == "heads":  # A^(h) V^(h): weights of row i times column c of V
        hd = step.output.shape[-1]
        pairs = []
        for j in range(step.left.shape[-1]):
            a = _source(run, Address(p + "weights", g, i, j))
            v = _source(run, Address(p + "v", 0, j, g * hd + c))
            pairs.append((a.value * v.value, a, v))
        pairs.sort(key=lambda pair: -abs(pair[0]))
        sources = tuple(Source(s.address, s.value, term) for term, a, v in pairs
                        for s in (a, v))
        total = math.fsum(term for term, _, _ in pairs)
        return Link(address, value_of(run, address), "linear", sources, total)
    before = "final" if step.name == "logits" else p + _LEFT[step.name]
    right = step.right[0, :, c].double()  # [K] the weight column
    terms = []
    for k in range(right.shape[0]):
        x = value_of(run, Address(before, 0, i, k))
        terms.append(Source(Address(before, 0, i, k), x, x * float(right[k])))
    total = math.fsum(s.part for s in terms)
    if step.bias is not None:
        total += float(step.bias[c])
    if step.activation == "gelu":
        total = float(F.gelu(torch.tensor(total, dtype=torch.float64)))
    terms.sort(key=lambda s: -abs(s.part))
    return Link(address, value_of(run, address), "linear", tuple(terms), total)


def is_source(run: ForwardRun, later: Address, earlier: Address) -> bool:
    return any(s.address == earlier for s in link(run, later).sources)


def trail_to_ids(run: ForwardRun, start: Address) -> tuple[Address, ...]:
    """From `start`, always the first source, until a cell with none (an ID, a position
    row, a blocked score)."""
    trail = [start]
    while (sources := link(run, trail[-1]).sources) and len(trail) < MAX_TRAIL:
        trail.append(sources[0].address)
    return tuple(trail)


# --- A trail in the URL ----------------------------------------------------------------
def trail_text(trail: tuple[Address, ...]) -> str:
    return "~".join(a.text() for a in trail)


def parse_trail(run: ForwardRun, text: str) -> tuple[Address, ...]:
    """'logits-0-7-40~final-0-7-3' -> its addresses, each a source of the one before it,
    every one a cell of this run; a TrailError otherwise."""
    parts = text.split("~") if text else []
    if len(parts) > MAX_TRAIL:
        raise TrailError("too_long", f"{len(parts)} cells, at most {MAX_TRAIL}")
    trail: list[Address] = []
    for part in parts:
        found = _ADDRESS.match(part)
        if found is None:
            raise TrailError("bad_cell", f"{part[:40]!r} names no cell")
        address = Address(found[1], int(found[2]), int(found[3]), int(found[4]))
        if not exists(run, address):
            raise TrailError("no_cell", f"no cell {part} in this run")
        if trail and not is_source(run, trail[-1], address):
            raise TrailError("not_source", f"{part} is no input of {trail[-1].text()}")
        trail.append(address)
    return tuple(trail)
