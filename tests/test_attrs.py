"""Attribute codecs are strict: ASCII numbers only, finite floats, real bools, no empty list fields."""

from __future__ import annotations

import pytest

from irnorm.ir.attrs import AttrError, parse_bool, parse_float, parse_int, parse_int_list, parse_shape


@pytest.mark.parametrize("text", ["2.7", "abc", "", "1_0", "\u0668", "\u00b2", "0x10", "1e3", " - 3"])
def test_bad_ints(text):
    with pytest.raises(AttrError):
        parse_int(text)


@pytest.mark.parametrize(("text", "value"), [("12", 12), (" -3 ", -3), ("+4", 4), ("007", 7)])
def test_good_ints(text, value):
    assert parse_int(text) == value


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "1e400", "1_0", "\u0668", "", "e5", "1e", "0x1p3"])
def test_bad_floats(text):
    with pytest.raises(AttrError):
        parse_float(text)


@pytest.mark.parametrize(("text", "value"), [("1.0000000000000001e-05", 1e-5), (".5", 0.5), ("5.", 5.0),
                                             ("-2E-3", -2e-3), ("1.000000013351432e-10", 1.000000013351432e-10)])
def test_good_floats(text, value):
    assert parse_float(text) == value


def test_bools_and_lists_and_shapes():
    assert parse_bool("TRUE") is True and parse_bool("0") is False
    with pytest.raises(AttrError):
        parse_bool("yes")
    assert parse_int_list("2, 3") == [2, 3] and parse_int_list("") == []
    with pytest.raises(AttrError):
        parse_int_list("2,,3")
    assert parse_shape("1..10,4,?,8") == [-1, 4, -1, 8]
    assert parse_shape("") == [] and parse_shape("...") is None and parse_shape("[2, 3]") == [2, 3]
    with pytest.raises(AttrError):
        parse_shape("x")
