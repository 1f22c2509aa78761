"""evaluation.judgments.grades: the relevance scale, raters' names, and several raters' grades combined."""

from __future__ import annotations

import pytest

from evaluation.judgments.grades import GRADES, Combined, combine, rater_error


def test_the_scale_is_0_to_3():
    assert GRADES == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("grades", "combined"),
    [
        ([2], Combined(2, 1, False)),
        ([1, 3], Combined(1, 2, True)),  # the lower middle grade; two apart: a split
        ([2, 3], Combined(2, 2, False)),
        ([0, 3, 3], Combined(3, 3, True)),
        ([1, 2, 2, 3], Combined(2, 4, True)),
        ([None, 2, None], Combined(2, 1, False)),  # cannot judge is no grade
        ([None, None], Combined(None, 0, False)),
        ([], Combined(None, 0, False)),
        ([0, 0, 1], Combined(0, 3, False)),
    ],
)
def test_grades_combine_by_their_median_and_a_split_is_flagged(grades, combined):
    assert combine(grades) == combined


@pytest.mark.parametrize(
    ("rater", "fine"),
    [("alice", True), ("user:alice", True), ("llm-relevance:qwen2.5:7b", True), ("", False), (" a", False),
     ("a\x00b", False), ("x" * 100, True), ("x" * 101, False), ("ta\tb", False)],
)  # fmt: skip
def test_a_raters_name_is_printable_trimmed_and_bounded(rater, fine):
    assert (rater_error(rater) is None) == fine


def test_people_are_raters_by_name_without_case_and_imported_ones_say_so():
    from evaluation.judgments.grades import imported_rater, is_imported, is_machine, live_rater

    assert live_rater("Rita") == live_rater("rita") == "user:rita"
    assert (
        imported_rater(" Bob ") == imported_rater("bob") == imported_rater("imported:BOB") == "imported:bob"
    )
    assert is_imported("imported:bob") and not is_imported("user:bob") and not is_machine("imported:bob")
