"""goldenset.fluency: the gate's well-formedness check. Keyword salad and stray punctuation are rejected with a
message naming the fault; questions people wrote (ClapNQ's, in the repository's demo/clapnq, Apache-2.0) and
well-formed model questions are accepted. Pure: no database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldenset.fluency import ill_formed

CLAPNQ_QUERIES = Path(__file__).resolve().parents[2] / "demo" / "clapnq" / "queries.jsonl"


@pytest.mark.parametrize(
    ("question", "message"),
    [
        # the old offline template writer's output, from the issue and from ClapNQ / Cranfield pages
        (
            "What is known about National, consolidated, catalogue (Primary source)?",
            'a keyword list, not a question: "National", "consolidated", "catalogue"',
        ),
        (
            "What is known about three-dimensional, effect, flutter (three-dimensional effect of flutter .)?",
            'a keyword list, not a question: "three-dimensional", "effect", "flutter"',
        ),
        ("What is Look at you ! ''?", "stray quotes \"''\""),
        ("What is the term `` undrafted free agent ''?", 'stray quotes "``"'),
        ("What was Romanek 's original vision?", 'punctuation spaced off its word "\'s"'),
        ("What is Unaccountably we remain ... it?", 'doubled punctuation "..."'),
        ("What is Hence its author?", '"Hence" opens a sentence pasted into the question'),
        ("What are a note on noise temperature expressions?", '"are a": the verb does not agree'),
        ("What are sweepers sweepers?", 'the word "sweepers" twice in a row'),
        # stray punctuation of other kinds
        ("Who designed the tower (and when?", 'unbalanced "()"'),
        ('What is the "refund window of the store?', 'unbalanced "\\""'),
        ("What does the [] symbol mean in the report?", 'empty quotes or brackets "[]"'),
        ("How long do **refunds** take?", 'stray character "*"'),
        ("How long do refunds take , in days?", 'punctuation spaced off its word ","'),
        ("How long do refunds take?! In days?", 'doubled punctuation "?!"'),
        ("Refunds take long! How long do they take?", '"!" in the middle of the question'),
        # no verb, capitalised fragments, a fragment at the end
        ("Which year Eiffel tower Paris?", 'no verb after "Which"'),
        ("What is National Consolidated Catalogue Primary Source?", "mostly capitalised words (5 of 6)"),
        ("What is the capital of the?", 'it ends on "the", a fragment'),
        ("How long do refunds and?", 'it ends on "and", a fragment'),
        ("Who designed the Eiffel Tower,?", 'doubled punctuation ",?"'),
        ("Who designed the Eiffel Tower:", 'it ends on ":"'),
    ],
)
def test_salad_and_stray_punctuation_are_ill_formed_with_a_message(question: str, message: str) -> None:
    problem = ill_formed(question)
    assert problem is not None and problem.startswith(message), problem


@pytest.mark.parametrize(
    "question",
    [
        # the gate's own accepted examples and the new writer's forms
        "Who pays for return shipping?",
        "How tall is the Eiffel Tower?",
        "What is the Eiffel Tower?",
        "When was Kaloven founded?",
        "What does the atmosphere consist of?",
        "Who was the Marshall Plan funded by?",
        "What is the heat transfer rate proportional to?",
        # lists with a conjunction, asides in brackets, names, numbers, titles
        "What are the symptoms of flu, measles, and mumps?",
        "Which cities, Paris or Lyon, have a metro?",
        "What is the boiling point of water (in Celsius) at sea level?",
        "Who won the FIFA World Cup in 2014?",
        "What is the North Atlantic Treaty Organization?",
        "Who directed Star Wars Episode IV A New Hope?",
        'Who wrote the song "Hey Jude"?',
        'Who sang "Help!" in the 1965 film?',
        "What was the U.S. population in 1900?",
        "How much does a 1,000-litre tank weigh?",
        "What are you afraid of?",
        "What is this tool made of?",
        "Who had had the most wins by 1990?",
        "What are a few common causes of engine knock?",
        "What were a number of the reasons for the fall of Rome?",
        # people's search-style questions: lower case, no question mark, telegraphic
        "how many seasons of the walking dead",
        "who sang i can't get no satisfaction",
        "how to make a paper plane",
        "difference between russian blue and british blue cat",
        "what similarity laws must be obeyed when constructing aeroelastic models of heated aircraft .",
        "who won the world series in 1986",
        "WHAT IS THE CAPITAL OF FRANCE",
        # other languages: the word rules stay out of the way
        "退款需要多长时间处理？",
        "Wann wurde der Eiffelturm gebaut?",
        "¿Cuándo se construyó la Torre Eiffel?",
    ],
)
def test_well_formed_questions_pass(question: str) -> None:
    assert ill_formed(question) is None


def test_nearly_all_of_clapnq_s_human_questions_pass() -> None:
    """600 questions people typed (Natural Questions, via ClapNQ): lower case, no question marks, telegraphic.
    The few rejected are themselves broken ("... is called a", "statistics.statistics error ...")."""
    questions = [json.loads(line)["text"] for line in CLAPNQ_QUERIES.read_text(encoding="utf-8").splitlines()]
    assert len(questions) == 600
    rejected = {q: ill_formed(q) for q in questions if ill_formed(q) is not None}
    assert len(rejected) <= 6, rejected  # 4 at the time of writing: 99.3% accepted
    assert all("fragment" in problem or "twice in a row" in problem for problem in rejected.values()), (
        rejected
    )


def test_it_is_deterministic_and_ignores_spacing() -> None:
    question = "What is known about National, consolidated, catalogue?"
    assert (
        ill_formed(question)
        == ill_formed(question)
        == ill_formed("  What is known about\nNational, consolidated,  catalogue? ")
    )
    assert ill_formed("") is None  # blank is the gate's "empty", not a form problem
