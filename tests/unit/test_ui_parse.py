"""The typed-matrix parser and the number formatter (no Streamlit needed)."""

import pytest

from ui.fmt import latex_matrix, num, short, vec
from ui.parse import MAX_TEXT, ParseError, format_matrix, parse_matrix


@pytest.mark.parametrize(
    ("text", "rows", "cols", "expected"),
    [
        ("1, 0", None, 2, [[1.0, 0.0]]),
        ("1 0", None, 2, [[1.0, 0.0]]),
        ("−1，2.5", None, 2, [[-1.0, 2.5]]),
        ("1, 0; 0, 1", 2, 2, [[1.0, 0.0], [0.0, 1.0]]),
        ("1, 0\n0, 1\n", 2, 2, [[1.0, 0.0], [0.0, 1.0]]),
        ("1e2, -.5", None, 2, [[100.0, -0.5]]),
        ("1,2;3,4;5,6", (1, 4), 2, [[1, 2], [3, 4], [5, 6]]),
    ],
)
def test_parse_accepts(text, rows, cols, expected):
    assert parse_matrix(text, rows, cols) == expected


@pytest.mark.parametrize(
    ("text", "rows", "cols", "key"),
    [
        ("", None, 2, "empty"),
        ("   ;  ", None, 2, "empty"),
        ("a, 1", None, 2, "not_number"),
        ("1_000, 1", None, 2, "not_number"),
        ("0x10, 1", None, 2, "not_number"),
        ("nan, 1", None, 2, "not_finite"),
        ("-inf, 1", None, 2, "not_finite"),
        ("1e400, 1", None, 2, "not_finite"),
        ("1e300, 1", None, 2, "out_of_bounds"),
        ("101, 1", None, 2, "out_of_bounds"),
        ("1, 2, 3", None, 2, "wrong_shape"),
        ("1", None, 2, "wrong_shape"),
        ("1, 2; 3, 4", None, 2, "wrong_shape"),
        ("1, 2; 3", 2, 2, "wrong_shape"),
        ("1, 2", 2, 2, "wrong_shape"),
        ("1,2;" * 5, (1, 4), 2, "wrong_shape"),
        ("1," * MAX_TEXT, None, 2, "too_long"),
    ],
)
def test_parse_rejects_with_a_translatable_key(text, rows, cols, key):
    with pytest.raises(ParseError) as caught:
        parse_matrix(text, rows, cols)
    assert caught.value.key == key


def test_format_round_trips():
    grid = [[1.0, 0.0], [-0.5, 0.70710678]]
    text = format_matrix(grid)
    assert text == "1, 0; -0.5, 0.7071"
    assert parse_matrix(text, 2, 2) == [[1.0, 0.0], [-0.5, 0.7071]]
    assert format_matrix([[2.0, 0.0]], vector=True) == "2, 0"


def test_number_formatting():
    assert num(0.66976) == "0.670"
    assert num(-0.0001) == "0.000"  # no "-0.000" on screen
    assert num(float("-inf")) == "−∞"
    assert vec([1.33952, 1.32096]) == "[1.340, 1.321]"
    assert short(2.0) == "2" and short(0.5) == "0.5"
    assert latex_matrix([[1, float("-inf")]]) == r"\begin{bmatrix}1.000 & -\infty\end{bmatrix}"
