"""evaluation.runs.slices (pure): which entries a subset admits, and every metric's mean per slice; the subset fields
as evaluation.configs reads them; the per-slice table the CLI prints (evaluation.reports.report_formats)."""

from __future__ import annotations

import pytest

from evalsite.errors import EvalsiteError
from evaluation import configs
from evaluation.answers.configs import parse_answer_config
from evaluation.reports.report_formats import slice_table, text_table
from evaluation.runs.slices import EVERY, SliceRow, Subset, breakdown, slice_metric_names
from goldenset.models import Origin
from goldenset.vocabulary.golden_fields import ORIGINS


def test_the_origins_are_goldensets():
    assert tuple(choice.value for choice in Origin) == ORIGINS


# --- which entries a subset admits ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("subset", "admitted"),
    [
        (EVERY, {"manual-faq", "generated-reviewed", "generated-unreviewed", "imported-untagged"}),
        (Subset(tags=("faq",)), {"manual-faq", "generated-reviewed"}),
        (Subset(tags=("faq", "billing")), {"manual-faq", "generated-reviewed", "generated-unreviewed"}),
        (Subset(origins=("Generated",)), {"generated-reviewed", "generated-unreviewed"}),
        (Subset(origins=("Manual", "Imported")), {"manual-faq", "imported-untagged"}),
        (Subset(reviewed_only=True), {"generated-reviewed", "imported-untagged"}),
        # unreviewed generated out; unreviewed manual stays
        (Subset(skip_unreviewed_generated=True), {"manual-faq", "generated-reviewed", "imported-untagged"}),
        (Subset(tags=("billing",), skip_unreviewed_generated=True), set()),  # the restrictions AND
        (Subset(tags=("faq",), origins=("Generated",)), {"generated-reviewed"}),
    ],
)
def test_a_subset_admits_entries_matching_every_restriction(subset, admitted):
    entries = {
        "manual-faq": (["faq"], "Manual", False),
        "generated-reviewed": (["faq", "shipping"], "Generated", True),
        "generated-unreviewed": (["billing"], "Generated", False),
        "imported-untagged": ([], "Imported", True),
    }
    assert {name for name, facets in entries.items() if subset.admits(*facets)} == admitted


def test_the_empty_subset_is_false_and_any_restriction_true():
    assert not EVERY and not Subset()
    assert all(
        [
            Subset(tags=("a",)),
            Subset(origins=("Manual",)),
            Subset(reviewed_only=True),
            Subset(skip_unreviewed_generated=True),
        ]
    )


def test_a_subset_as_recorded_labelled_and_described():
    subset = Subset(tags=("faq", "billing"), origins=("Generated",), skip_unreviewed_generated=True)
    assert subset.as_dict() == {
        "tags": ["faq", "billing"],
        "origin": ["Generated"],
        "reviewed_only": False,
        "skip_unreviewed_generated": True,
    }
    assert subset.label_parts() == ["tags:faq,billing", "origin:Generated", "skip_unreviewed_generated"]
    assert subset.describe() == "tags faq, billing; origin Generated; unreviewed generated entries left out"
    assert subset.first_field() == "tags"
    assert Subset(reviewed_only=True).first_field() == "reviewed_only"


# --- the subset fields, read strictly ---------------------------------------------------------------------------


def test_subset_fields_are_read_with_origins_in_any_case_and_repeats_dropped():
    read = configs.parse_subset(
        {"tags": [" faq ", "faq", "billing"], "origin": ["generated", "MANUAL"], "reviewed_only": "true"}
    )
    assert read == Subset(tags=("faq", "billing"), origins=("Generated", "Manual"), reviewed_only=True)
    assert configs.parse_subset({"tags": None, "origin": [], "skip_unreviewed_generated": False}) == EVERY


def test_a_configurations_subset_field_replaces_the_requests_and_keeps_the_others():
    body = Subset(tags=("faq",), reviewed_only=True)
    config = configs.parse_config({"tags": ["billing"]}, 0, [], subset=body)
    assert config.subset == Subset(tags=("billing",), reviewed_only=True)
    assert config.label == "FullText tags:billing reviewed_only"
    assert config.as_dict()["subset"] == {
        "tags": ["billing"],
        "origin": [],
        "reviewed_only": True,
        "skip_unreviewed_generated": False,
    }
    # what a job stores parses back to the same configuration
    assert configs.parse_config(config.request(), 0, []) == config
    # no subset: the configuration reads as it always did
    assert "subset" not in configs.parse_config({}, 0, []).as_dict()


def test_a_target_and_an_answer_configuration_carry_a_subset_too():
    target = configs.parse_config({"target": "prod", "origin": ["Imported"]}, 0, [])
    assert target.subset == Subset(origins=("Imported",)) and target.label == "target:prod origin:Imported"
    assert target.as_dict()["subset"]["origin"] == ["Imported"]
    answer = parse_answer_config({"groundedness": "High"}, 0, [], subset=Subset(tags=("faq",)))
    assert answer.run.subset == Subset(tags=("faq",)) and answer.as_dict()["subset"]["tags"] == ["faq"]
    assert parse_answer_config(answer.request(), 0, []) == answer
    rag = parse_answer_config({"target": "rag", "tags": ["x"]}, 0, [], subset=Subset(reviewed_only=True))
    assert rag.run.subset == Subset(tags=("x",), reviewed_only=True)


@pytest.mark.parametrize(
    ("raw", "prefix", "field"),
    [
        ({"tags": "faq"}, "", "tags"),  # a bare string is not a list
        ({"tags": {"faq": 1}}, "", "tags"),
        ({"tags": ["faq", 3]}, "", "tags[1]"),
        ({"tags": [""]}, "", "tags[0]"),
        ({"origin": "Manual"}, "", "origin"),
        ({"origin": ["Manual", "Robot"]}, "", "origin[1]"),
        ({"reviewed_only": "maybe"}, "", "reviewed_only"),
        ({"skip_unreviewed_generated": 2}, "", "skip_unreviewed_generated"),
        ({"tags": 5}, "configs[1]", "configs[1].tags"),
    ],
)
def test_bad_subset_fields_are_refused_naming_the_field(raw, prefix, field):
    with pytest.raises(EvalsiteError) as caught:
        configs.parse_subset(raw, prefix)
    assert caught.value.code == "validation-error"
    assert caught.value.details["field"] == field and caught.value.message.startswith(f"{field}: ")


def test_an_unknown_origin_names_the_allowed_ones():
    with pytest.raises(EvalsiteError) as caught:
        configs.parse_subset({"origin": ["Robot"]})
    assert caught.value.details == {"field": "origin[0]", "allowed": ["Manual", "Imported", "Generated"]}


# --- the breakdown ----------------------------------------------------------------------------------------------


ROWS = [
    SliceRow(["faq", "billing"], "Manual", True, {"score": 80.0, "faithfulness": 1.0, "context_recall": 0.5}),
    SliceRow(["faq"], "Generated", True, {"score": 40.0, "faithfulness": 0.5}),  # context_recall excluded
    SliceRow([], "Generated", False, {"score": 100.0}),
    SliceRow(["billing", "billing"], "", False, {"score": 0.0, "faithfulness": 0.0}),  # a request's question
]


def test_every_metric_is_averaged_per_tag_origin_and_answerable_slice():
    assert breakdown(ROWS, by_answerable=True) == {
        "tag": {
            # two questions; the one listing the tag twice counts once
            "billing": {"n": 2, "score": 40.0, "faithfulness": 0.5, "context_recall": 0.5},
            "faq": {"n": 2, "score": 60.0, "faithfulness": 0.75, "context_recall": 0.5},
        },
        "origin": {  # the request's question has no origin: in no origin slice
            "Generated": {"n": 2, "score": 70.0, "faithfulness": 0.5, "context_recall": None},
            "Manual": {"n": 1, "score": 80.0, "faithfulness": 1.0, "context_recall": 0.5},
        },
        "answerable": {
            "false": {"n": 2, "score": 50.0, "faithfulness": 0.0, "context_recall": None},
            "true": {"n": 2, "score": 60.0, "faithfulness": 0.75, "context_recall": 0.5},
        },
    }


def test_without_answerable_slices_and_without_questions():
    rows = [
        SliceRow(["a"], "Manual", True, {"recall@1": 1.0, "mrr": 1.0}),
        SliceRow(["a"], "Manual", True, {"recall@1": 0.0, "mrr": 0.25}),
    ]
    assert breakdown(rows, by_answerable=False) == {
        "tag": {"a": {"n": 2, "recall@1": 0.5, "mrr": 0.625}},
        "origin": {"Manual": {"n": 2, "recall@1": 0.5, "mrr": 0.625}},
    }
    assert breakdown([], by_answerable=True) == {"tag": {}, "origin": {}, "answerable": {}}


def test_the_metric_names_of_a_stored_breakdown_in_order():
    assert slice_metric_names(breakdown(ROWS, by_answerable=True)) == [
        "score",
        "faithfulness",
        "context_recall",
    ]
    assert slice_metric_names({}) == []


# --- the CLI's table -------------------------------------------------------------------------------------------


def test_the_slice_table_has_a_row_per_run_and_slice():
    slices = {"tag": {"faq": {"n": 2, "score": 61.25, "faithfulness": None}}, "origin": {}}
    header, rows = slice_table(
        [("baseline", slices), ("strict", {"origin": {"Manual": {"n": 1, "score": 5.0}}})], 3
    )
    assert header == ["configuration", "slice", "n", "score", "faithfulness"]
    assert rows == [["baseline", "tag:faq", "2", "61.2", "-"], ["strict", "origin:Manual", "1", "5.0", "-"]]
    assert text_table(header, rows) == [
        "configuration  slice          n  score  faithfulness",
        "baseline       tag:faq        2   61.2             -",
        "strict         origin:Manual  1    5.0             -",
    ]
    assert slice_table([("old run", {})]) == (["configuration", "slice", "n"], [])
