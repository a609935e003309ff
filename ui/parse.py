"""Parsing and formatting of typed matrices and vectors. No Streamlit here, so it is
unit-tested directly. Errors carry a translation key and its values, never text."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

MAX_TEXT = 2000  # characters; bounds what one session can make the server parse
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_ROW_SPLIT = re.compile(r"[;\n；]")
_CELL_SPLIT = re.compile(r"[,\s，]+")


@dataclass(frozen=True)
class ParseError(Exception):
    key: str  # translation key under "input."
    values: dict = field(default_factory=dict)


def _parse_number(token: str, bound: float) -> float:
    cleaned = token.replace("−", "-")  # a typographic minus pasted from slides
    lowered = cleaned.lower().lstrip("+-")
    if lowered in ("nan", "inf", "infinity"):
        raise ParseError("not_finite", {"token": token})
    if not _NUMBER.match(cleaned):
        raise ParseError("not_number", {"token": token[:20]})
    value = float(cleaned)
    if not math.isfinite(value):
        raise ParseError("not_finite", {"token": token[:20]})
    if abs(value) > bound:
        raise ParseError("out_of_bounds", {"token": token[:20], "bound": _compact(bound)})
    return value


def parse_matrix(
    text: str,
    rows: int | tuple[int, int] | None,
    cols: int,
    bound: float = 100.0,
) -> list[list[float]]:
    """Rows split by ';' or newlines, cells by ',' or spaces.

    rows: None for a vector (one row expected, returned as one row), an int for a fixed
    count, or (min, max) for a variable count.
    """
    if len(text) > MAX_TEXT:
        raise ParseError("too_long", {"limit": MAX_TEXT})
    lines = [line.strip() for line in _ROW_SPLIT.split(text) if line.strip()]
    if not lines:
        raise ParseError("empty")
    matrix = []
    for line in lines:
        tokens = [tok for tok in _CELL_SPLIT.split(line) if tok]
        matrix.append([_parse_number(tok, bound) for tok in tokens])
    _check_shape(matrix, rows, cols)
    return matrix


def _check_shape(matrix: list[list[float]], rows, cols: int) -> None:
    got = f"{len(matrix)} × {'/'.join(sorted({str(len(r)) for r in matrix}))}"
    if rows is None:
        expected_rows = (1, 1)
        expected = str(cols)
        got = "/".join(str(len(r)) for r in matrix) if len(matrix) == 1 else got
    elif isinstance(rows, int):
        expected_rows = (rows, rows)
        expected = f"{rows} × {cols}"
    else:
        expected_rows = rows
        expected = f"{rows[0]}–{rows[1]} × {cols}"
    if not expected_rows[0] <= len(matrix) <= expected_rows[1]:
        raise ParseError("wrong_shape", {"expected": expected, "got": got})
    if any(len(row) != cols for row in matrix):
        raise ParseError("wrong_shape", {"expected": expected, "got": got})


def _compact(value: float) -> str:
    """1.0 -> '1', 0.5 -> '0.5', 0.70710678 -> '0.7071'."""
    if value == 0:
        return "0"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def format_matrix(matrix: list[list[float]], vector: bool = False) -> str:
    """The inverse of parse_matrix, compact: '1, 0; 0, 1'."""
    rows = [", ".join(_compact(v) for v in row) for row in matrix]
    return rows[0] if vector else "; ".join(rows)
