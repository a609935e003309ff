"""The kit's number formats (ui/fmt.py): every number readable, none rounded to a lie."""

from ui.fmt import num, short


def test_fixed_decimals_and_their_edges():
    assert [num(0.66981), num(-0.0001), num(float("-inf")), num(float("nan"))] == [
        "0.670", "0.000", "−∞", "NaN"]


def test_huge_numbers_are_written_in_powers_of_ten():
    assert num(2.6881171418161356e43) == "2.688e+43"  # e^100, not 44 digits
    assert num(2 / 1e-300) == "2.000e+300"
    assert num(999_999.5) == "999999.500"  # below the limit: as before


def test_a_typed_value_shows_as_typed_and_a_tiny_one_is_not_zero():
    assert [short(1.0), short(0.5), short(0.25)] == ["1", "0.5", "0.25"]
    assert short(1e-300) == "1e-300"  # a temperature this small is not T = 0
    assert short(0.0004) == "0.0004"
    assert short(1e300) == "1e+300"
