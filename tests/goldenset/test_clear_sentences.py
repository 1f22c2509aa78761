"""goldenset.clear_sentences: the offline writer's patterns (a clear sentence -> a simple factual question), the
subjects it refuses, how it splits lower-case and tokenized text, and that whatever it writes is well formed.
Pure: no database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldenset.clear_sentences import (
    MIN_QUESTION_WORDS,
    clear_question,
    page_sentences,
    question_from,
)
from goldenset.fluency import ill_formed
from goldenset.lexical import word_count

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "demo" / "clapnq" / "corpus.jsonl"


@pytest.mark.parametrize(
    ("sentence", "question", "pattern"),
    [
        (
            "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
            "What is the Eiffel Tower?",
            "definition",
        ),
        ("A morpheme is the smallest grammatical unit in a language.", "What is a morpheme?", "definition"),
        (
            "Christina Rossetti was a Victorian poet who wrote about death.",
            "Who was Christina Rossetti?",
            "definition",
        ),
        (
            "Kaloven Holdings was founded in 1850 by a family of clockmakers.",
            "When was Kaloven Holdings founded?",
            "when",
        ),
        (
            "The Golden Gate Bridge was completed on May 27, 1937 after four years of work.",
            "When was the Golden Gate Bridge completed?",
            "when",
        ),
        (
            "The maritime museum is located in the old harbour district of the city.",
            "Where is the maritime museum located?",
            "where",
        ),
        (
            "The Marshall Plan was funded by the United States after the war.",
            "Who was the Marshall Plan funded by?",
            "by",
        ),
        (
            "The drag coefficient is determined mainly by the wing thickness.",
            "What is the drag coefficient determined by?",
            "by",
        ),
        (
            "A marine sextant is used to measure the angle between two objects.",
            "What is a marine sextant used for?",
            "used",
        ),
        (
            "The salts and esters of salicylic acid are known as salicylates.",
            "What are the salts and esters of salicylic acid known as?",
            "adjective",
        ),
        (
            "the heat transfer rate is proportional to the square root of the velocity",
            "What is the heat transfer rate proportional to?",
            "adjective",
        ),
        (
            "The Earth's atmosphere consists of nitrogen, oxygen and traces of argon.",
            "What does the Earth's atmosphere consist of?",
            "verb",
        ),
        (
            "boundary-layer separation depended on the pressure gradient near the trailing edge",
            "What did boundary-layer separation depend on?",
            "verb",
        ),
        (
            "Pressure-sensitive paint measurements include the surface pressure over the whole wing.",
            "What do pressure-sensitive paint measurements include?",
            "verb",
        ),
    ],
)
def test_a_clear_sentence_gives_its_question(sentence: str, question: str, pattern: str) -> None:
    found = question_from(sentence)
    assert found is not None
    assert (found.question, found.pattern, found.sentence) == (question, pattern, sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "It is a wrought-iron lattice tower in Paris.",  # a pronoun
        "This method is used to compute the lift distribution.",  # a demonstrative
        "The review found that the evidence was of moderate quality.",  # a clause
        "The present paper is a survey of boundary layer methods.",  # about the page itself
        "The results are compared with the experiments of Smith.",  # nothing specific
        "The bridge was completed in 1971 along with a canal.",  # "the bridge": which one?
        "The example chosen is a long plate hinged along one edge.",  # a clause cut short
        "Especially famous is the wall built in 220 BC by Qin Shi Huang.",  # an inverted sentence
        "1 the trouble was caused by the approximation sequence.",  # a list number
        "High stagnation enthalpies sufficient to cause dissociation were reached.",  # "... sufficient to"
        "Treated more extensively is the case of a flat plate at incidence.",  # a participle first
        "Customers receive refunds within thirty days whenever merchandise arrives damaged.",  # no pattern
        "Paris is the capital of France.",  # "What is Paris?": 3 words, under the gate's minimum
        "Is the refund window 30 days long?",  # a question already
    ],
)
def test_a_sentence_without_a_clear_subject_and_verb_gives_none(sentence: str) -> None:
    assert question_from(sentence) is None


def test_a_capitalised_common_word_is_lowered_and_a_name_keeps_its_capital() -> None:
    assert question_from("Facilitated diffusion is a passive process of membrane transport.").question == (
        "What is facilitated diffusion?"
    )
    assert question_from("Fried Green Tomatoes is a 1991 comedy drama film by Jon Avnet.").question == (
        "What is Fried Green Tomatoes?"
    )


def test_lower_case_and_tokenized_text_is_split_into_sentences() -> None:
    cranfield_like = (
        "experimental investigation of a wing in a slipstream . the lift increment is proportional to the "
        "slipstream velocity ratio . results are given"
    )
    assert page_sentences(cranfield_like) == [
        "experimental investigation of a wing in a slipstream",
        "the lift increment is proportional to the slipstream velocity ratio",
        "results are given",
    ]
    assert page_sentences("Hanna is visited by Mrs. Smith in the U.S. Army. It rained. then it stopped.") == [
        "Hanna is visited by Mrs. Smith in the U.S. Army.",
        "It rained.",
        "then it stopped.",
    ]
    assert clear_question(cranfield_like).question == "What is the lift increment proportional to?"


def test_the_most_informative_clear_sentence_wins_and_none_when_there_is_none() -> None:
    text = (
        "Acme Corporation was founded in 1920. "
        "The Acme catalogue consists of anvils, rockets, magnets and giant rubber bands for every customer."
    )
    assert clear_question(text).question == "What does the Acme catalogue consist of?"
    assert clear_question("Contents. Index. See also.") is None
    assert clear_question("apples pears plums " * 20) is None


def test_every_question_written_from_the_demo_corpus_is_well_formed_and_long_enough() -> None:
    """The writer reads its own questions with the gate's fluency check: none it writes is ill-formed."""
    pages = [json.loads(line)["text"] for line in DEMO_CORPUS.read_text(encoding="utf-8").splitlines()]
    found = [(text, q) for text, q in ((text, clear_question(text)) for text in pages) if q is not None]
    assert len(found) >= 60, len(found)  # 105 of 597 pages at the time of writing
    for text, question in found:
        assert ill_formed(question.question) is None, question
        assert word_count(question.question) >= MIN_QUESTION_WORDS
        assert question.sentence in " ".join(text.split())  # the answer is the page's own sentence
    assert [clear_question(text) for text in pages[:50]] == [clear_question(text) for text in pages[:50]]
