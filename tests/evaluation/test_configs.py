"""Evaluation requests read strictly (evaluation.configs): ks, configurations, rerankers, instants, labels.

Pure: no database. Every rejection carries a stable code and the offending field's path.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from evalsite.errors import EvalsiteError
from evaluation.configs import MAX_CONFIGS, RunConfig, parse_config, parse_configs, resolve_rerank
from evaluation.request_fields import parse_instant, parse_ks, parse_positive_int

RERANKERS = ["proximity"]


def error_of(call, *args, **kwargs) -> EvalsiteError:
    with pytest.raises(EvalsiteError) as caught:
        call(*args, **kwargs)
    return caught.value


# --- ks ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, [1, 5, 10]),
        ([10], [10]),
        ([10, 1, 5], [1, 5, 10]),
        (["10"], [10]),
        (["1", 5, "10"], [1, 5, 10]),
        ([" 3 ", "+4"], [3, 4]),
        (["007"], [7]),
        ("1,5,10", [1, 5, 10]),
        ("10, 1 ,,5", [1, 5, 10]),
        ("10", [10]),
        ([5, "5", 5.0, 1], [1, 5]),
        ([1000], [1000]),
    ],
)
def test_parse_ks_reads_numbers_and_numeric_strings_sorted_without_repeats(raw, expected):
    assert parse_ks(raw) == expected


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        ([0], "ks[0]", "ks[0]: expected an integer from 1 to 1000, got 0."),
        ([5, -1], "ks[1]", "ks[1]: expected an integer from 1 to 1000, got -1."),
        (["abc"], "ks[0]", "ks[0]: expected a positive integer, got 'abc'."),
        ([1, 1.5], "ks[1]", "ks[1]: expected an integer from 1 to 1000, got 1.5."),
        ([True], "ks[0]", "ks[0]: expected a positive integer, got True."),
        ([1, None], "ks[1]", "ks[1]: expected an integer from 1 to 1000, got None."),
        ([[1]], "ks[0]", "ks[0]: expected an integer from 1 to 1000, got [1]."),
        (["-3"], "ks[0]", "ks[0]: expected a positive integer, got '-3'."),
        (["0"], "ks[0]", "ks[0]: expected an integer from 1 to 1000, got 0."),
        (["1e3"], "ks[0]", "ks[0]: expected a positive integer, got '1e3'."),
        ("1,x,10", "ks[1]", "ks[1]: expected a positive integer, got 'x'."),
        ([1001], "ks[0]", "ks[0]: expected an integer from 1 to 1000, got 1001."),
        # str.isdigit() admits these, int() does not (or not quickly): each once answered a 500
        (["++5"], "ks[0]", "ks[0]: expected a positive integer, got '++5'."),
        (["+"], "ks[0]", "ks[0]: expected a positive integer, got '+'."),
        ([" "], "ks[0]", "ks[0]: expected a positive integer, got ' '."),
        (["²"], "ks[0]", "ks[0]: expected a positive integer, got '²'."),
        (["٣"], "ks[0]", "ks[0]: expected a positive integer, got '٣'."),
        (["9" * 5000], "ks[0]", f"ks[0]: expected an integer from 1 to 1000, got {'9' * 5000!r}."),
        ([], "ks", "ks: expected a non-empty list of positive integers."),
        ("", "ks", "ks: expected a non-empty list of positive integers."),
        (" , ", "ks", "ks: expected a non-empty list of positive integers."),
        (True, "ks", "ks: expected a non-empty list of positive integers."),
        (5, "ks", "ks: expected a non-empty list of positive integers."),
        ({"k": 5}, "ks", "ks: expected a non-empty list of positive integers."),
    ],
)
def test_parse_ks_rejects_what_is_not_a_positive_integer(raw, field, message):
    error = error_of(parse_ks, raw)
    assert (error.code, error.message, error.details) == ("invalid-ks", message, {"field": field})
    assert error.status_code == 400


def test_parse_positive_int_names_its_field_and_its_own_code():
    error = error_of(parse_positive_int, "0", "configs[2].top_k")
    assert error.as_dict() == {
        "code": "invalid-number",
        "message": "configs[2].top_k: expected an integer from 1 to 1000, got 0.",
        "details": {"field": "configs[2].top_k"},
    }
    assert parse_positive_int("12", "top_k") == 12
    assert parse_positive_int(3.0, "top_k") == 3


# --- instants ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("2024-06-30", datetime(2024, 6, 30, tzinfo=UTC)),
        (" 2024-06-30 ", datetime(2024, 6, 30, tzinfo=UTC)),
        ("2024-06-30T10:15:00", datetime(2024, 6, 30, 10, 15, tzinfo=UTC)),  # naive: UTC
        ("2024-06-30T10:15:00Z", datetime(2024, 6, 30, 10, 15, tzinfo=UTC)),
        ("2024-06-30T10:15:00.250+02:00", datetime(2024, 6, 30, 8, 15, 0, 250_000, tzinfo=UTC)),
    ],
)
def test_parse_instant_reads_dates_and_datetimes(raw, expected):
    moment = parse_instant(raw, "as_of")
    assert moment == expected
    if moment is not None:
        assert moment.tzinfo is not None


def test_an_aware_instant_keeps_its_offset():
    moment = parse_instant("2024-06-30T10:15:00-05:00", "as_of")
    assert moment is not None and moment.utcoffset() == timedelta(hours=-5)
    assert moment == datetime(2024, 6, 30, 15, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "raw",
    ["yesterday", "2024-13-01", "2024-02-30", "2024-06-30T25:00", "30/06/2024", "Z", 20240630, True, [], {}],
)
def test_parse_instant_rejects_what_is_not_a_date(raw):
    error = error_of(parse_instant, raw, "configs[0].as_of")
    assert error.as_dict() == {
        "code": "invalid-date",
        "message": f"configs[0].as_of: expected an ISO 8601 date or datetime, got {raw!r}.",
        "details": {"field": "configs[0].as_of"},
    }


# --- rerank ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "available", "expected"),
    [
        (None, RERANKERS, None),
        (False, RERANKERS, None),
        ("false", RERANKERS, None),
        ("", RERANKERS, None),
        (True, RERANKERS, "proximity"),
        ("true", RERANKERS, "proximity"),
        ("TRUE", RERANKERS, "proximity"),
        (True, ["cross-encoder", "proximity"], "cross-encoder"),  # the strongest available
        ("proximity", ["cross-encoder", "proximity"], "proximity"),  # a name: that one, never another
        ("Proximity", RERANKERS, "proximity"),
        (False, [], None),
    ],
)
def test_resolve_rerank(raw, available, expected):
    assert resolve_rerank(raw, "rerank", available) == expected


@pytest.mark.parametrize(
    ("raw", "available"),
    [
        ("cross-encoder", RERANKERS),
        ("cohere", ["cross-encoder", "proximity"]),
        (True, []),  # nothing to be "the strongest": an error, not an IndexError and not a silent no-rerank
        ("proximity", []),
        (1, RERANKERS),
        (0, RERANKERS),  # 0 == False in Python, but 0 is not false in JSON
        ([], RERANKERS),
    ],
)
def test_an_unavailable_reranker_is_refused_naming_those_available(raw, available):
    error = error_of(resolve_rerank, raw, "configs[1].rerank", available)
    assert error.code == "reranker-unavailable"
    assert error.details == {"field": "configs[1].rerank", "available": available}
    assert error.message == (
        f"configs[1].rerank: reranker {raw!r} is not available here; available: {', '.join(available)}."
    )


# --- one configuration -------------------------------------------------------------------------------------


def test_an_empty_configuration_is_the_default_one():
    assert parse_config({}, 0, RERANKERS) == RunConfig(label="FullText")


def test_null_means_the_default_for_every_key():
    raw = dict.fromkeys(
        [
            "label",
            "search_type",
            "fusion",
            "rerank",
            "bm25_variant",
            "top_k",
            "as_of",
            "include_superseded",
            "fulltext_weight",
        ]
    )
    assert parse_config(raw, 0, RERANKERS) == RunConfig(label="FullText")


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ({"search_type": "fulltext"}, {"search_type": "FullText"}),
        ({"search_type": "VECTOR"}, {"search_type": "Vector"}),
        ({"search_type": " hybrid "}, {"search_type": "Hybrid"}),
        ({"fusion": "rrf"}, {"fusion": "Rrf"}),
        ({"fusion": "WEIGHTED"}, {"fusion": "Weighted"}),
        ({"bm25_variant": "OKAPI"}, {"bm25_variant": "okapi"}),
        ({"bm25_variant": "Lucene"}, {"bm25_variant": "lucene"}),
    ],
)
def test_enums_are_read_in_any_case_and_stored_canonical(raw, normalized):
    config = parse_config(raw, 0, RERANKERS)
    for name, value in normalized.items():
        assert getattr(config, name) == value


def test_every_key_is_read():
    config = parse_config(
        {
            "label": "  tuned  ",
            "search_type": "hybrid",
            "fusion": "weighted",
            "rerank": True,
            "bm25_variant": "okapi",
            "top_k": "20",
            "as_of": "2024-06-30",
            "include_superseded": "true",
            "fulltext_weight": "0.25",
        },
        0,
        RERANKERS,
    )
    assert config == RunConfig(
        label="tuned",
        search_type="Hybrid",
        fusion="Weighted",
        rerank="proximity",
        bm25_variant="okapi",
        top_k=20,
        as_of=datetime(2024, 6, 30, tzinfo=UTC),
        include_superseded=True,
        fulltext_weight=0.25,
    )
    assert config.as_dict() == {
        "label": "tuned",
        "search_type": "Hybrid",
        "fusion": "Weighted",
        "rerank": "proximity",
        "bm25_variant": "okapi",
        "top_k": 20,
        "as_of": "2024-06-30T00:00:00Z",
        "include_superseded": True,
        "fulltext_weight": 0.25,
    }
    # what a job stores is read back to the same configuration
    assert parse_config(config.as_dict(), 0, RERANKERS) == config


@pytest.mark.parametrize(
    ("raw", "code", "field", "message", "extra"),
    [
        (
            {"search_type": "Semantic"},
            "unknown-search-type",
            "search_type",
            "expected one of FullText, Vector, Hybrid, got 'Semantic'.",
            {"allowed": ["FullText", "Vector", "Hybrid"]},
        ),
        (
            {"search_type": 3},
            "unknown-search-type",
            "search_type",
            "expected one of FullText, Vector, Hybrid, got 3.",
            {"allowed": ["FullText", "Vector", "Hybrid"]},
        ),
        (
            {"fusion": "Max"},
            "unknown-fusion",
            "fusion",
            "expected one of Rrf, Weighted, got 'Max'.",
            {"allowed": ["Rrf", "Weighted"]},
        ),
        (
            {"bm25_variant": "bm25+"},
            "unknown-variant",
            "bm25_variant",
            "expected one of lucene, okapi, got 'bm25+'.",
            {"allowed": ["lucene", "okapi"]},
        ),
        (
            {"rerank": "cross-encoder"},
            "reranker-unavailable",
            "rerank",
            "reranker 'cross-encoder' is not available here; available: proximity.",
            {"available": ["proximity"]},
        ),
        ({"top_k": 0}, "invalid-number", "top_k", "expected an integer from 1 to 1000, got 0.", {}),
        ({"top_k": "ten"}, "invalid-number", "top_k", "expected a positive integer, got 'ten'.", {}),
        (
            {"as_of": "last year"},
            "invalid-date",
            "as_of",
            "expected an ISO 8601 date or datetime, got 'last year'.",
            {},
        ),
        (
            {"include_superseded": "yes"},
            "validation-error",
            "include_superseded",
            "expected true or false, got 'yes'.",
            {},
        ),
        (
            {"fulltext_weight": 1.5},
            "validation-error",
            "fulltext_weight",
            "expected a number from 0 to 1.",
            {},
        ),
        (
            {"fulltext_weight": "nan"},
            "validation-error",
            "fulltext_weight",
            "expected a number from 0 to 1.",
            {},
        ),
        (
            {"fulltext_weight": True},
            "validation-error",
            "fulltext_weight",
            "expected a number from 0 to 1.",
            {},
        ),
        (
            {"label": 7},
            "validation-error",
            "label",
            "expected a string of at most 200 characters.",
            {},
        ),
        (
            {"label": "x" * 201},
            "validation-error",
            "label",
            "expected a string of at most 200 characters.",
            {},
        ),
        (
            {"search_type": "FullText", "k": 10},
            "validation-error",
            "k",
            "unknown field.",
            {
                "allowed": [
                    "as_of",
                    "bm25_b",
                    "bm25_k1",
                    "bm25_variant",
                    "fulltext_weight",
                    "fusion",
                    "include_superseded",
                    "label",
                    "max_error_rate",
                    "origin",
                    "params",
                    "rerank",
                    "reviewed_only",
                    "rrf_k",
                    "search_type",
                    "skip_unreviewed_generated",
                    "tags",
                    "target",
                    "top_k",
                ]
            },
        ),
        (
            {"target": "prod", "search_type": "Hybrid"},
            "validation-error",
            "search_type",
            "not used with a target (the target searches as it is configured).",
            {
                "allowed": [
                    "label",
                    "max_error_rate",
                    "origin",
                    "params",
                    "reviewed_only",
                    "skip_unreviewed_generated",
                    "tags",
                    "target",
                    "top_k",
                ]
            },  # fmt: skip
        ),
        ({"target": ""}, "validation-error", "target", "expected a target's name.", {}),
        (
            {"target": "prod", "max_error_rate": 2},
            "validation-error",
            "max_error_rate",
            "expected a number from 0 to 1.",
            {},
        ),
        (
            {"target": "prod", "top_k": 0},
            "invalid-number",
            "top_k",
            "expected an integer from 1 to 1000, got 0.",
            {},
        ),
        ({"max_error_rate": 0.1}, "validation-error", "max_error_rate", "only with a target.", {}),
    ],
)
def test_each_bad_value_is_refused_with_its_code_and_field(raw, code, field, message, extra):
    error = error_of(parse_config, raw, 3, RERANKERS)
    assert error.as_dict() == {
        "code": code,
        "message": f"configs[3].{field}: {message}",
        "details": {"field": f"configs[3].{field}", **extra},
    }


def test_a_configuration_that_is_not_an_object_is_refused():
    error = error_of(parse_config, ["FullText"], 1, RERANKERS)
    assert error.as_dict() == {
        "code": "validation-error",
        "message": "configs[1]: expected an object.",
        "details": {"field": "configs[1]"},
    }


def test_with_an_empty_prefix_fields_are_named_bare():
    """/search reads one configuration from the top level of its body."""
    error = error_of(parse_config, {"search_type": "nope"}, 0, RERANKERS, prefix="")
    assert error.details["field"] == "search_type"
    assert error.message.startswith("search_type: ")


def test_rerank_true_picks_the_strongest_and_a_name_not_available_is_never_replaced():
    assert parse_config({"rerank": True}, 0, ["cross-encoder", "proximity"]).rerank == "cross-encoder"
    error = error_of(parse_config, {"rerank": "cross-encoder"}, 0, ["proximity"])
    assert error.code == "reranker-unavailable"
    assert error.details == {"field": "configs[0].rerank", "available": ["proximity"]}
    error = error_of(parse_config, {"rerank": True}, 0, [])
    assert error.code == "reranker-unavailable"
    assert error.details == {"field": "configs[0].rerank", "available": []}


@pytest.mark.parametrize(
    ("raw", "moment"),
    [
        ("2024-06-30", datetime(2024, 6, 30, tzinfo=UTC)),
        ("2024-06-30T12:00:00", datetime(2024, 6, 30, 12, tzinfo=UTC)),
        ("2024-06-30T12:00:00+02:00", datetime(2024, 6, 30, 12, tzinfo=timezone(timedelta(hours=2)))),
    ],
)
def test_as_of_takes_dates_and_datetimes_naive_ones_in_utc(raw, moment):
    config = parse_config({"as_of": raw}, 0, RERANKERS)
    assert config.as_of == moment
    assert config.as_of.utcoffset() == moment.utcoffset()


# --- labels ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ({}, "FullText"),
        ({"search_type": "vector"}, "Vector"),
        ({"search_type": "Vector", "bm25_variant": "okapi"}, "Vector"),  # the variant does not apply
        ({"search_type": "FullText", "fusion": "Weighted"}, "FullText"),  # nor the fusion
        ({"search_type": "Hybrid"}, "Hybrid Rrf"),
        ({"search_type": "Hybrid", "fusion": "Weighted"}, "Hybrid Weighted"),
        (
            {"search_type": "Hybrid", "fusion": "Weighted", "fulltext_weight": 0.3},
            "Hybrid Weighted fulltext_weight:0.3",
        ),
        ({"bm25_variant": "okapi"}, "FullText okapi"),
        ({"search_type": "Hybrid", "rerank": True}, "Hybrid Rrf rerank:proximity"),
        ({"top_k": 5}, "FullText top_k:5"),
        ({"as_of": "2024-06-30"}, "FullText as_of:2024-06-30"),
        ({"as_of": "2024-06-30T10:00:00+02:00"}, "FullText as_of:2024-06-30T08:00:00Z"),
        ({"include_superseded": True}, "FullText include_superseded"),
        ({"label": "   "}, "FullText"),
        ({"label": " mine ", "search_type": "Hybrid"}, "mine"),
    ],
)
def test_default_labels_name_what_sets_a_configuration_apart(raw, label):
    assert parse_config(raw, 0, RERANKERS).label == label


def test_configurations_without_labels_that_differ_get_different_labels():
    """Each of these once defaulted to the label of another, and the call failed with duplicate-label."""
    configs = parse_configs(
        [
            {},
            {"include_superseded": True},
            {"top_k": 5},
            {"as_of": "2024-01-01T10:00:00Z"},
            {"as_of": "2024-01-01T12:00:00Z"},
            {"search_type": "Hybrid", "fusion": "Weighted", "fulltext_weight": 0.3},
            {"search_type": "Hybrid", "fusion": "Weighted", "fulltext_weight": 0.7},
        ],
        RERANKERS,
    )
    assert len({c.label for c in configs}) == 7


# --- the list of configurations ----------------------------------------------------------------------------


def test_no_configs_is_one_fulltext_run():
    assert parse_configs(None, RERANKERS) == [RunConfig(label="FullText")]


@pytest.mark.parametrize(
    ("raw", "code", "field", "message"),
    [
        ([], "validation-error", "configs", "configs: expected a non-empty list of configurations."),
        ("FullText", "validation-error", "configs", "configs: expected a non-empty list of configurations."),
        (
            {"search_type": "FullText"},
            "validation-error",
            "configs",
            "configs: expected a non-empty list of configurations.",
        ),
        (
            [{"label": str(i)} for i in range(MAX_CONFIGS + 1)],
            "too-many-configs",
            "configs",
            f"configs: at most {MAX_CONFIGS} configurations per call.",
        ),
        (
            [{"label": "a"}, {"label": "b"}, {"label": "a", "search_type": "Vector"}],
            "duplicate-label",
            "configs[2].label",
            "configs[2].label: label 'a' repeats configs[0]; labels name runs, so each must differ.",
        ),
        (
            [{"search_type": "Hybrid"}, {"search_type": "hybrid", "fusion": "rrf"}],
            "duplicate-label",
            "configs[1].label",
            "configs[1].label: label 'Hybrid Rrf' repeats configs[0]; labels name runs, so each must differ.",
        ),
        (
            [{"label": "x"}, {"label": " x "}],
            "duplicate-label",
            "configs[1].label",
            "configs[1].label: label 'x' repeats configs[0]; labels name runs, so each must differ.",
        ),
        (
            [{}, {"search_type": "Hybird"}],
            "unknown-search-type",
            "configs[1].search_type",
            "configs[1].search_type: expected one of FullText, Vector, Hybrid, got 'Hybird'.",
        ),
    ],
)
def test_parse_configs_rejects(raw, code, field, message):
    error = error_of(parse_configs, raw, RERANKERS)
    assert (error.code, error.message, error.details["field"]) == (code, message, field)


def test_the_limit_of_configurations_is_allowed():
    configs = parse_configs([{"label": str(i)} for i in range(MAX_CONFIGS)], RERANKERS)
    assert [c.label for c in configs] == [str(i) for i in range(MAX_CONFIGS)]


def test_a_target_configuration_names_the_target_and_echoes_only_what_applies_to_it():
    config = parse_config({"target": " prod-es ", "top_k": "50", "max_error_rate": "0.1"}, 0, RERANKERS)
    assert config.label == "target:prod-es top_k:50" and config.target == "prod-es"
    assert config.as_dict() == {
        "label": "target:prod-es top_k:50", "target": "prod-es", "target_kind": None, "top_k": 50,
        "max_error_rate": 0.1,
    }  # fmt: skip
    assert parse_config(config.request(), 0, RERANKERS) == config  # what a job stores parses back the same
    assert parse_config({"target": "a", "label": "mine"}, 0, RERANKERS).max_error_rate == 0.05
    assert "target" not in parse_config({"search_type": "FullText"}, 0, RERANKERS).as_dict()


def test_an_answer_configuration_naming_a_target_takes_only_what_applies_to_it():
    from evaluation.answers.configs import parse_answer_config

    config = parse_answer_config({"target": "rag", "top_k": 3, "label": "theirs"}, 2, RERANKERS)
    assert config.run.target == "rag" and config.top_k == 3 and config.label == "theirs"
    assert config.as_dict() == {
        "label": "theirs", "target": "rag", "target_kind": None, "top_k": 3, "max_error_rate": 0.05,
    }  # fmt: skip
    assert parse_answer_config(config.request(), 2, RERANKERS) == config
    error = error_of(parse_answer_config, {"target": "rag", "model": "gpt"}, 2, RERANKERS)
    assert error.details["field"] == "configs[2].model" and "not used with a target" in error.message
