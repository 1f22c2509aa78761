"""goldenset.vocabulary.grade_scales: the scales a collection's grades are given on, the smallest one holding
a set of grades, and a grade carried from one scale to another (issue 40, item 10)."""

from __future__ import annotations

import pytest

from goldenset.vocabulary.grade_scales import (
    DEFAULT_SCALE,
    SCALES,
    Scale,
    converted,
    scale_for_grades,
    scale_named,
)


def test_the_four_scales_and_their_keys():
    assert list(SCALES) == ["binary", "0-2", "0-3", "0-4"]
    assert {name: s.grades for name, s in SCALES.items()} == {
        "binary": (0, 1), "0-2": (0, 1, 2), "0-3": (0, 1, 2, 3), "0-4": (0, 1, 2, 3, 4),
    }  # fmt: skip
    assert {name: s.top for name, s in SCALES.items()} == {"binary": 1, "0-2": 2, "0-3": 3, "0-4": 4}
    assert DEFAULT_SCALE == "0-3" and SCALES["binary"].meaning[1].startswith("relevant")
    assert isinstance(scale_named("0-2"), Scale) and scale_named("0-2").name == "0-2"


def test_an_unknown_scale_is_a_value_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="binary, 0-2, 0-3, 0-4"):
        scale_named("1-5")
    with pytest.raises(ValueError, match="binary"):
        scale_named(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("grades", "name"),
    [([], "binary"), ([1], "binary"), ([0, 1], "binary"), ([0, 2], "0-2"), ([1, 3], "0-3"), ([4, 0], "0-4")],
)
def test_the_smallest_scale_holding_the_grades(grades, name):
    assert scale_for_grades(grades).name == name


@pytest.mark.parametrize("grades", [[5], [-1, 1], [True]])
def test_no_scale_holds_a_grade_beyond_four_or_below_zero(grades):
    with pytest.raises(ValueError, match="no grade scale holds"):
        scale_for_grades(grades)


@pytest.mark.parametrize(
    ("source", "target", "table"),
    [
        ("0-3", "binary", [0, 0, 1, 1]),  # TREC DL: 2 and 3 relevant
        ("0-2", "binary", [0, 0, 1]),
        ("0-4", "binary", [0, 0, 0, 1, 1]),
        ("binary", "0-3", [0, 3]),  # a binary relevant is the top: never outranked
        ("binary", "0-2", [0, 2]),
        ("binary", "0-4", [0, 4]),
        ("0-3", "0-4", [0, 1, 3, 4]),
        ("0-4", "0-3", [0, 1, 2, 2, 3]),
        ("0-2", "0-3", [0, 2, 3]),
        ("0-3", "0-2", [0, 1, 1, 2]),
        ("0-3", "0-3", [0, 1, 2, 3]),
    ],
)
def test_a_grade_converted_from_one_scale_to_another(source, target, table):
    s, t = scale_named(source), scale_named(target)
    assert [converted(g, s, t) for g in s.grades] == table
    assert all(g in t for g in table)


def test_a_grade_off_its_scale_is_refused():
    with pytest.raises(ValueError, match="binary scale"):
        converted(3, SCALES["binary"], SCALES["0-3"])
