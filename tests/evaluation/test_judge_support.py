"""The offline judge's regression set (issue 15): tricky statements with the verdict a careful reader gives,
against statement_support, plus its parts (numbers kept whole, term rarity, statement sentences). Each case
says what it guards; a case the heuristic cannot get right is listed as such, with the verdict it gives."""

from __future__ import annotations

import pytest

from evaluation.answers.judge import SUPPORT_MIN, statement_support, statements
from evaluation.answers.judge_support import TermWeights, claim_terms
from evaluation.answers.writer import Passage

LAKE = Passage(
    1,
    "kariba",
    1,
    "Lake Kariba",
    "Lake Kariba is the world's largest man-made lake and reservoir by volume. It lies 1,300 kilometres upstream "
    "from the Indian Ocean, along the border between Zambia and Zimbabwe. Lake Kariba was filled between 1958 "
    "and 1963 following the completion of the Kariba Dam. Entry costs $1,000 for a boat and fees rose 3.5% on "
    "March 3, 1998.",
)
WAR = Passage(
    2,
    "civil-war",
    1,
    "American Civil War",
    "The Union finally won the war when General Robert E. Lee surrendered to General Ulysses S. Grant at "
    "Appomattox Court House. Four years of combat left 620,000 to 750,000 people dead. Slavery was abolished.",
)
SONG = Passage(
    4,
    "song",
    1,
    "My Name Is Human",
    "Some of us are not human at all. The androids , the aliens ... They are n't coming . We are here .",
)
ATOM = Passage(
    5,
    "mass-number",
    1,
    "Mass number",
    "The mass number is the number of protons and neutrons. This is not the same as the atomic number, which "
    "denotes the number of protons and identifies an element.",
)
SEA = Passage(
    3,
    "dead-sea",
    1,
    "Dead Sea",
    "The Dead Sea is a salt lake bordered by Jordan to the east. The Dead Sea is 304 m deep, the deepest "
    "hypersaline lake in the world.",
)

SHOW = Passage(6, "show", 1, "The show", "The series follows Khloé Kardashian and Léogâne's mayor.")

TWO_PASSAGES = "Lake Kariba lies between Zambia and Zimbabwe, and the Dead Sea is 304 m deep."

CASES = [
    # numbers with separators, units, percentages, money and dates are whole terms
    (
        "Lake Kariba lies 1,300 kilometres upstream from the Indian Ocean.",
        [LAKE],
        True,
        "number with separator",
    ),
    ("Lake Kariba lies 1,500 kilometres upstream from the Indian Ocean.", [LAKE], False, "changed number"),
    ("Lake Kariba lies 300 kilometres upstream from the Indian Ocean.", [LAKE], False, "a number's tail"),
    ("Entry to Lake Kariba costs $1,000 for a boat.", [LAKE], True, "money"),
    ("Entry to Lake Kariba costs $1 for a boat.", [LAKE], False, "money cut at its separator"),
    ("Fees at Lake Kariba rose 3.5% on March 3, 1998.", [LAKE], True, "percentage and date"),
    ("Fees at Lake Kariba rose 5% on March 3, 1998.", [LAKE], False, "the decimal's part alone"),
    ("Lake Kariba was filled between 1958 and 1963.", [LAKE], True, "dates"),
    ("Lake Kariba was filled between 1958 and 1973.", [LAKE], False, "one date changed"),
    # abbreviations do not cut a statement in two
    ("General Robert E. Lee surrendered to General Ulysses S. Grant.", [WAR], True, "initials"),
    ("Four years of combat left 620,000 to 750,000 people dead.", [WAR], True, "two numbers"),
    ("Four years of combat left 62,000 people dead.", [WAR], False, "a smaller number"),
    # paraphrase it can see (the same words, another order or form) and cannot (no shared word)
    ("Lake Kariba lies along the border between Zimbabwe and Zambia.", [LAKE], True, "reordered"),
    (
        "The biggest artificial reservoir is on the Zambezi frontier.",
        [LAKE],
        False,
        "paraphrase it cannot see",
    ),
    # short claims need all their terms
    ("Slavery was abolished.", [WAR], True, "short, all terms"),
    ("Slavery was abolished in Canada.", [WAR], False, "short, one term missing"),
    ("Lake Kariba is in Kenya.", [LAKE], False, "short, changed place"),
    # two passages together
    (
        "Lake Kariba lies between Zambia and Zimbabwe, and the Dead Sea is 304 m deep.",
        [LAKE, SEA],
        True,
        "two",
    ),
    (
        "Lake Kariba lies between Zambia and Zimbabwe, and the Dead Sea is 304 m deep.",
        [LAKE],
        False,
        "one of two",
    ),
    # negation: seen as a word in the closest sentence
    ("The Union did not win the war.", [WAR], False, "negation added"),
    ("Slavery was not abolished.", [WAR], False, "short negation added"),
    ("The androids, the aliens ... they aren't coming.", [SONG], True, "negation in the next sentence"),
    ("No. Slavery was abolished.", [WAR], True, "a reply's No negates nothing"),
    ("The atomic number identifies an element.", [ATOM], True, "a negation of another phrase"),
    ("The atomic number does not identify an element.", [ATOM], False, "a negation of this phrase"),
    # names: a changed name fails like a changed number (issue 27); a name the passage holds passes
    (
        "General Robert E. Lee surrendered to General Ulysses S. Grant at Gettysburg.",
        [WAR],
        False,
        "a changed place name",
    ),
    ("General Robert E. Lee surrendered to General William Sherman.", [WAR], False, "a changed person"),
    ("The Union won the war at Appomattox Court House.", [WAR], True, "names the passage holds"),
    # names in any script: a copied sentence keeps its accented names ("Khloé" is one word, not "Khlo")
    ("The series follows Khloé Kardashian and Léogâne's mayor.", [SHOW], True, "accented names copied"),
    ("The series follows Khloé Kardashian and Jacmel's mayor.", [SHOW], False, "an accented name changed"),
    # every term of the passage's sentence and none of its word pairs: supported (the pairs alone sank it at 0.7)
    (
        "Kariba, by volume, is a reservoir: largest lake of the world, made by man.",
        [LAKE],
        True,
        "every term, no pair",
    ),
    # limits: who did what to whom, when every word is there (a known limit of a lexical judge)
    (
        "General Ulysses S. Grant surrendered to General Robert E. Lee at Appomattox Court House.",
        [WAR],
        True,
        "LIMIT: roles swapped pass",
    ),
]


@pytest.mark.parametrize(("statement", "passages", "supported", "why"), CASES, ids=[c[3] for c in CASES])
def test_tricky_statements(statement, passages, supported, why):
    row = statement_support(statement, passages)
    assert row["supported"] is supported, (why, row)
    assert row["text"] == statement and 0.0 <= row["support"] <= 1.0
    assert (row["support"] >= SUPPORT_MIN) is supported
    if supported:
        assert row["passage"] == row["passages"][0] and set(row["passages"]) <= {p.number for p in passages}
    else:
        assert row["passage"] is None and row["passages"] == []


def test_two_passages_are_named_when_they_support_together():
    row = statement_support(TWO_PASSAGES, [LAKE, SEA])
    assert sorted(row["passages"]) == [1, 3] and row["passage"] == row["passages"][0]
    assert statement_support(TWO_PASSAGES, [LAKE])["passages"] == []


def test_numbers_are_kept_whole():
    assert claim_terms("$1,000 and 3.5% on March 3, 1998, the 24th, 1,200 km, seven") == [
        "1000",
        "3.5",
        "march",
        "3",
        "1998",
        "24",
        "1200",
        "km",
        "7",
    ]


def test_rare_terms_weigh_more():
    weights = TermWeights({"lak": 90, "kariba": 1}, 100)
    assert weights.weight("kariba") > weights.weight("lak") > 0
    assert weights.weight("unseen") == weights.weight("kariba")  # unseen: as rare as a term seen once
    # Finding the rare name supports more than finding the common word, at the same plain coverage (no word
    # pair in either passage).
    (lake,) = claim_terms("lake")  # terms are stemmed: "lak"
    weights = TermWeights({lake: 90, "kariba": 1, "dam": 30}, 100)
    statement = "The Kariba lake dam."
    rare_found = statement_support(statement, [Passage(1, "a", 1, "", "Kariba. A dam.")], weights)
    common_found = statement_support(statement, [Passage(1, "b", 1, "", "A lake. A dam.")], weights)
    assert rare_found["coverage"] == common_found["coverage"]
    assert rare_found["support"] > common_found["support"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "General Robert E. Lee surrendered to Grant. Slavery ended.",
            ["General Robert E. Lee surrendered to Grant.", "Slavery ended."],
        ),
        ("It moved to the U.S. Army base in 1950.", ["It moved to the U.S. Army base in 1950."]),
        ("He lived in the U.S. He left in 1950.", ["He lived in the U.S.", "He left in 1950."]),
        (
            "The museum is in Washington D.C. and opened in 1846.",
            ["The museum is in Washington D.C. and opened in 1846."],
        ),
    ],
)
def test_statements_are_not_cut_at_abbreviations(text, expected):
    assert statements(text) == expected


# --- the labelled statements and the measurement ------------------------------------------------------------------


def _agreement():
    """benchmarks/judge_agreement.py as a module (benchmarks/ is no package)."""
    import importlib.util
    import sys
    from pathlib import Path

    if "judge_agreement" in sys.modules:
        return sys.modules["judge_agreement"]

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "judge_agreement.py"
    spec = importlib.util.spec_from_file_location("judge_agreement", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_agreement"] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def test_the_labelled_statements_are_well_formed():
    agreement = _agreement()
    items = agreement.load_own(agreement.DEFAULT_DATA)
    assert len(items) >= 300 and len({i.id for i in items}) == len(items)
    assert {i.label for i in items} == {"supported", "partially", "not supported"}
    assert all(i.statement.strip() and i.passages and all(p.text for p in i.passages) for i in items)
    halves = {i.split for i in items}
    assert halves == {"dev", "test"}
    for question in {i.group for i in items}:  # a question's statements stay on one side
        assert len({i.split for i in items if i.group == question}) == 1


def test_the_new_support_ranks_better_than_plain_recall_on_the_test_half():
    from evaluation.judgments.agreement import roc_auc

    agreement = _agreement()
    items = agreement.load_own(agreement.DEFAULT_DATA)
    weights = agreement.collection_weights(items)
    test = [i for i in items if i.split == "test"]
    labels = [i.label == "supported" for i in test]
    old = roc_auc([score for score, _ in agreement.plain_recall(test, weights)], labels)
    new = roc_auc([score for score, _ in agreement.this_judge(test, weights)], labels)
    assert old is not None and new is not None and new > old + 0.02
