"""Unit tests for goldenset.lexical and goldenset.quality (the golden-set generation gate, with its
goldenset.passage_phrasing and goldenset.duplicates checks): pure Python, no database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldenset.duplicates import DEFAULT_DUPLICATE_MIN, DuplicateIndex, question_similarity
from goldenset.lexical import STOPWORDS, content_terms, coverage, jaccard, stem, word_count
from goldenset.passage_phrasing import passage_dependent
from goldenset.quality import REASONS, GateLimits, Verdict, check
from goldenset.text import tokenize

# ---------------------------------------------------------------- lexical


@pytest.mark.parametrize(
    ("words", "common"),
    [
        (["refund", "refunds", "refunded", "refunding", "refundable"], "refund"),
        (["ship", "ships", "shipped", "shipping"], "ship"),
        (["return", "returns", "returned", "returning"], "return"),
        (["take", "takes", "taking"], "tak"),
        (["policy", "policies"], "policy"),
        (["apply", "applies", "applied"], "apply"),
        (["agree", "agreed", "agrees"], "agree"),
        (["need", "needs", "needed"], "need"),
        (["box", "boxes"], "box"),
        (["class", "classes"], "class"),
        (["item", "items"], "item"),
        (["use", "used", "uses", "using"], "us"),
        (["fall", "falls", "falling"], "fall"),
        (["process", "processes", "processed", "processing"], "process"),
        (["access", "accessible"], "access"),
    ],
)
def test_stem_makes_inflections_of_a_word_collide(words: list[str], common: str) -> None:
    assert {stem(word) for word in words} == {common}


@pytest.mark.parametrize(
    "word",
    [
        "status",
        "analysis",
        "thing",
        "bring",
        "string",
        "need",
        "feed",
        "apply",
        "early",
        "is",
        "30",
        "1990s",
        "mp3",
    ],
)
def test_stem_leaves_words_that_only_look_inflected_and_non_words_alone(word: str) -> None:
    assert stem(word) == word


def test_stem_handles_short_and_non_latin_tokens() -> None:
    assert stem("as") == "as"
    assert stem("café") == "café"
    assert stem("cafés") == "café"
    assert stem("москва") == "москва"
    assert stem("") == ""


def test_stopwords_hold_function_and_question_words_but_not_words_that_change_a_question() -> None:
    for word in ["the", "what", "which", "how", "when", "where", "who", "why", "do", "does", "did", "is"]:
        assert word in STOPWORDS
    for word in ["are", "can", "could", "should", "would", "will", "i", "you", "it", "they", "don", "t"]:
        assert word in STOPWORDS
    for word in ["long", "many", "much", "most", "least", "first", "last", "out", "before", "after", "tall"]:
        assert word not in STOPWORDS
    assert all(word == word.casefold() for word in STOPWORDS)


def test_content_terms_drop_stopwords_and_letters_keep_numbers_order_and_duplicates() -> None:
    assert content_terms("What's the refund window? It's 30 days, refunds in 2024: 5 at most.") == [
        "refund",
        "window",
        "30",
        "day",
        "refund",
        "2024",
        "5",
        "most",
    ]
    assert content_terms("Is it? Yes, it is.") == []
    assert content_terms("") == []
    assert content_terms("THE Refunds, the REFUND") == ["refund", "refund"]


def test_content_terms_split_chinese_and_japanese_runs_into_bigrams() -> None:
    assert content_terms("退款三十天") == ["退款", "款三", "三十", "十天"]
    assert content_terms("天") == ["天"]
    assert content_terms("iPhone手机") == ["iphon", "手机"]
    assert content_terms("ひらがな") == ["ひら", "らが", "がな"]


def test_word_count_counts_tokens_and_each_han_or_kana_character() -> None:
    assert word_count("How long do refunds take?") == 5
    assert word_count("What's the window?") == 4  # what, s, the, window
    assert word_count("退款需要多长时间？") == 8
    assert word_count("iPhone手机") == 3
    assert word_count("   ") == 0


def test_coverage_counts_distinct_part_terms_found_in_whole() -> None:
    assert coverage(["a", "b", "c", "d"], ["a", "b", "x"]) == 0.5
    assert coverage(["a", "a", "a", "b"], ["a"]) == 0.5  # distinct terms: duplicates do not weigh more
    assert coverage(["a"], {"a"}) == 1.0
    assert coverage(["a"], []) == 0.0
    assert coverage([], ["a"]) == 0.0  # empty part: 0.0, by convention; callers test for it
    assert coverage(iter(["a", "b"]), iter(["b"])) == 0.5


def test_jaccard_on_distinct_terms() -> None:
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert jaccard(["a", "a", "b"], ["b", "a"]) == 1.0
    assert jaccard(["a"], ["b"]) == 0.0
    assert jaccard([], []) == 0.0
    assert jaccard(["a", "b", "c"], ["c"]) == jaccard(["c"], ["a", "b", "c"])


# ---------------------------------------------------------------- passage-dependent phrasing

PASSAGE_DEPENDENT = [
    ("According to the passage, what is the refund window?", "according to the passage"),
    ("according to the TEXT: how long do refunds take?", "according to the text"),
    ("According to the document what is the deadline?", "according to the document"),
    ("According to the article, who founded the company?", "according to the article"),
    ("According to the excerpt, when did the war end?", "according to the excerpt"),
    ("According to the section, who approves refunds?", "according to the section"),
    ("According to the author, why did sales fall?", "according to the author"),
    ("According to the context, what is the fee?", "according to the context"),
    ("According to the page, how tall is the tower?", "according to the page"),
    ("According to the provided text, who is the CEO?", "according to the provided text"),
    ("In the following passage, what is described?", "the following passage"),
    ("In the above text, who pays for shipping?", "the above text"),
    ("In the given passage, what causes the delay?", "the given passage"),
    ("In this section, how are refunds handled?", "this section"),
    ("In this document, what is the deadline?", "this document"),
    ("In this chapter, who betrays the king?", "this chapter"),
    ("In this article, which vaccine is tested?", "this article"),
    ("In this paragraph, what is compared?", "this paragraph"),
    ("In this study, how many patients were enrolled?", "this study"),
    ("In this paper, what method is proposed?", "this paper"),
    ("In this report, what did revenue grow to?", "this report"),
    ("What is the main idea of this passage?", "this passage"),
    ("What does this document say about refunds?", "this document"),
    ("What does the document say about refunds?", "the document say"),
    ("What does the passage say about sale items?", "the passage say"),
    ("What does the text say about sale items?", "the text say"),
    ("The text states that refunds take how long?", "the text states"),
    ("Does the article mention the CEO's name?", "the article mention"),
    ("What does the author argue about taxes?", "the author argue"),
    ("Which risk does the passage describe?", "the passage describe"),
    ("What is the passage mainly about?", "the passage mainly about"),
    ("What are the risks mentioned above?", "mentioned above"),
    ("What is the deadline mentioned in the text?", "mentioned in the text"),
    ("Which tools are described here?", "described here"),
    ("How is store credit issued, as described here?", "described here"),
    ("What rules apply here?", "here"),
    ("What does the above imply about pricing?", "the above"),
    ("What are the aforementioned risks?", "aforementioned"),
    ("What does the above-mentioned policy require?", "above mentioned"),
    ("What can be inferred from the given context?", "the given context"),
    ("What is the main point of the provided excerpt?", "the provided excerpt"),
    ("Based on the passage, what is the refund window?", "based on the passage"),
    ("Based on the text, who pays for shipping?", "based on the text"),
    ("Based on the information provided, who approves refunds?", "based on the information provided"),
    ("Given the context, why was the project cancelled?", "given the context"),
    ("What is described in the text provided?", "the text provided"),
    ("What is the tone of the passage?", "of the passage"),
    ("What does the word 'lien' mean in the text?", "in the text"),
    ("What is the author's main argument?", "the author s"),
    ("Which of the following is a benefit of the plan?", "which of the following"),
    ("What does the table above show?", "table above"),
    ("Who is the author?", "the author"),
    ("ACCORDING   TO   THE   PASSAGE ... WHAT IS IT?", "according to the passage"),
]


@pytest.mark.parametrize(("question", "phrase"), PASSAGE_DEPENDENT)
def test_passage_dependent_phrasing_is_caught_with_its_phrase(question: str, phrase: str) -> None:
    assert passage_dependent(question) == phrase


STANDALONE = [
    "What is a document management system?",
    "How long does a section of the Appalachian Trail take to hike?",
    "Which passage of the Bible mentions the flood?",
    "According to the text of the Second Amendment, who may bear arms?",
    "According to the document retention policy, how long are invoices kept?",
    "How do I print the document?",
    "Who is the author of Hamlet?",
    "In the context of machine learning, what is overfitting?",
    "What happened the following year?",
    "What is an above-ground pool?",
    "How is the fee calculated based on the document type?",
    "What is the text of the Second Amendment?",
    "How do I change the font of a text box?",
    "What does the Constitution say about free speech?",
    "Which chapter of Moby-Dick introduces Queequeg?",
    "How many pages does the passport application have?",
    "What is the purpose of a context switch in an operating system?",
    "What does an article of incorporation contain?",
    "Where can I find the text of the GDPR?",
    "Is the information provided by the vendor accurate?",
    "What does this error message mean?",
    "Who pays for return shipping?",
    "Where is the passage between the two towers?",
]


@pytest.mark.parametrize("question", STANDALONE)
def test_questions_that_merely_use_the_words_are_not_passage_dependent(question: str) -> None:
    assert passage_dependent(question) is None


# ---------------------------------------------------------------- question similarity

NEAR_DUPLICATES = [
    ("How long do refunds take?", "How long does a refund take?"),
    ("How do I return an item?", "How can items be returned?"),
    ("When was the Eiffel Tower built?", "In what year was the Eiffel Tower built?"),
    ("What is the capital of France?", "What's the capital city of France?"),
    ("What is the capital of France?", "what is the CAPITAL of france"),
    ("Which items are refundable?", "Which items can be refunded?"),
    ("Which items are not refundable?", "Which items are non-refundable?"),
    ("Why was the flight delayed?", "What was the reason the flight was delayed?"),
    ("Where is the Louvre located?", "What is the location of the Louvre?"),
    ("What time does the store open on Sundays?", "When does the store open on Sundays?"),
    ("Who pays for return shipping?", "Return shipping: who pays for it?"),
    (
        "How long does it take to receive a refund after returning an item?",
        "How long does it take to get a refund after returning an item?",
    ),
]

DIFFERENT_QUESTIONS = [
    ("How long do refunds take?", "Who pays for return shipping?"),
    ("When was the Eiffel Tower built?", "How tall is the Eiffel Tower?"),
    ("What is the capital of France?", "What is the capital of Spain?"),
    ("When was the Eiffel Tower built?", "Where was the Eiffel Tower built?"),
    ("Which items are not refundable?", "Which items are refundable?"),
    ("Can I return items without a receipt?", "Can I return items with a receipt?"),
    ("How do I log in to the dashboard?", "How do I log out of the dashboard?"),
    ("What happens after the refund is approved?", "What happens before the refund is approved?"),
    ("What is the population of France in 1900?", "What is the population of France in 1950?"),
    ("What was the company's total revenue?", "What was the company's total revenue in 2024?"),
    ("How long do refunds take?", "How long do refunds for international orders take?"),
    ("How many days is the refund window?", "How long do refunds take?"),
]


@pytest.mark.parametrize(("a", "b"), NEAR_DUPLICATES)
def test_paraphrases_are_near_duplicates(a: str, b: str) -> None:
    assert question_similarity(a, b) >= DEFAULT_DUPLICATE_MIN


@pytest.mark.parametrize(("a", "b"), DIFFERENT_QUESTIONS)
def test_different_questions_on_one_topic_are_not(a: str, b: str) -> None:
    assert question_similarity(a, b) < DEFAULT_DUPLICATE_MIN


@pytest.mark.parametrize(("a", "b"), NEAR_DUPLICATES + DIFFERENT_QUESTIONS)
def test_similarity_is_symmetric_and_in_range(a: str, b: str) -> None:
    assert 0.0 <= question_similarity(a, b) == question_similarity(b, a) <= 1.0


def test_similarity_scores_follow_the_documented_weights() -> None:
    # The same words modulo case, punctuation and spacing, or the same content terms: 1.0.
    assert question_similarity("How long do refunds take?", "  how LONG do refunds   take ") == 1.0
    assert question_similarity("How long do refunds take?", "How long does a refund take?") == 1.0
    # One plain term added: shared / (shared + 0.75).
    assert question_similarity("capital of France?", "capital city of France?") == pytest.approx(2 / 2.75)
    # One plain term replaced on each side: shared / (shared + 2).
    assert question_similarity("capital of France?", "capital of Spain?") == pytest.approx(1 / 3)
    # Intent markers weigh 2 each: ?when / ?where.
    assert question_similarity("When was Acme built?", "Where was Acme built?") == pytest.approx(2 / 6)
    # Nothing shared, or no words: 0.0.
    assert question_similarity("How long do refunds take?", "Who designed the tower?") == 0.0
    assert question_similarity("?", "?") == 0.0
    assert question_similarity("", "") == 0.0


def test_a_when_word_inside_the_question_is_not_its_intent() -> None:
    # "What happens when ...": the first question word is "what", so there is no when-marker to mismatch.
    assert question_similarity(
        "What happens when a refund is late?", "What happens if a refund is late?"
    ) == pytest.approx(1.0)


# ---------------------------------------------------------------- DuplicateIndex


def test_empty_index_finds_nothing() -> None:
    index = DuplicateIndex()
    assert len(index) == 0
    assert index.find("How long do refunds take?") is None


def test_index_holds_the_existing_questions_and_finds_the_best_match_with_its_score() -> None:
    index = DuplicateIndex(["What is the capital of France?", "What's the capital city of France?"])
    assert len(index) == 2
    assert index.find("What is the capital city of France?") == ("What's the capital city of France?", 1.0)
    assert index.find("Capital of France: what is it?") == ("What is the capital of France?", 1.0)
    assert index.find("What is the capital of Spain?") is None


def test_index_reports_a_score_below_one_and_honours_its_threshold() -> None:
    question = "What is the capital of France?"
    paraphrase = "What is the capital city of France?"
    found = DuplicateIndex([question]).find(paraphrase)
    assert found is not None
    assert found[0] == question
    assert found[1] == pytest.approx(2 / 2.75)
    assert DuplicateIndex([question], threshold=0.9).find(paraphrase) is None
    assert DuplicateIndex([question], threshold=0.9).find(paraphrase, threshold=0.5) is not None
    assert DuplicateIndex([question]).find(paraphrase, threshold=0.9) is None


def test_index_add_makes_a_question_findable() -> None:
    index = DuplicateIndex(["How long do refunds take?"])
    assert index.find("Who pays for return shipping?") is None
    index.add("Who pays for return shipping?")
    assert len(index) == 2
    assert index.find("Return shipping: who pays for it?") == ("Who pays for return shipping?", 1.0)


def test_index_exact_match_returns_the_first_added_of_equal_questions() -> None:
    index = DuplicateIndex(
        ["How long do refunds take?", "how long do refunds take", "How long does a refund take?"]
    )
    assert index.find("HOW LONG DO REFUNDS TAKE!") == ("How long do refunds take?", 1.0)
    # Equal scores without an exact match: the earliest added wins.
    assert index.find("How long do the refunds take?") == ("How long do refunds take?", 1.0)


def test_index_finds_among_many_questions() -> None:
    index = DuplicateIndex(f"What was the revenue of store number {n} in 2024?" for n in range(2000))
    assert len(index) == 2000
    assert index.find("In 2024, what was the revenue of store number 1234?") == (
        "What was the revenue of store number 1234 in 2024?",
        1.0,
    )
    found = index.find("What was the revenue of store number 99999 in 2024?")
    assert found is None  # a different number weighs 2 on each side: 4 / (4 + 4) = 0.5


def test_index_find_agrees_with_comparing_every_pair() -> None:
    # find skips candidates whose score cannot reach the threshold; it must never skip the best one.
    questions = [q for pair in NEAR_DUPLICATES + DIFFERENT_QUESTIONS for q in pair] + [q for q, *_ in CASES]
    questions = [q for q in questions if tokenize(q)]  # a question without words matches nothing
    known, queries = questions[::2], questions[1::2]
    for threshold in (0.3, 0.5, DEFAULT_DUPLICATE_MIN, 0.9):
        index = DuplicateIndex(known, threshold=threshold)
        for query in queries:
            same_words = [q for q in known if tokenize(q) == tokenize(query)]
            scores = [(question_similarity(query, question), -i) for i, question in enumerate(known)]
            score, minus_i = max(scores)
            if same_words:  # a question with the same words is preferred to another scoring 1.0
                expected: tuple[str, float] | None = (same_words[0], 1.0)
            else:
                expected = (known[-minus_i], score) if score >= threshold else None
            assert index.find(query) == expected, query


def test_index_rejects_a_threshold_outside_0_1() -> None:
    with pytest.raises(ValueError):
        DuplicateIndex(threshold=0.0)
    with pytest.raises(ValueError):
        DuplicateIndex(threshold=1.5)


# ---------------------------------------------------------------- check

REFUND_PAGE = (
    "Refund policy. Refunds are processed within 30 days of receiving the returned item. Items must be "
    "returned in their original packaging. The customer pays for return shipping unless the item arrived "
    "damaged. Sale items are not refundable. Store credit is issued for returns without a receipt."
)
EIFFEL_PAGE = (
    "The Eiffel Tower was built between 1887 and 1889 as the entrance arch to the 1889 World's Fair in "
    "Paris. It is 330 metres tall and was designed by the engineering company of Gustave Eiffel."
)
BIBLE_PAGE = "The flood narrative appears in the Book of Genesis, chapters 6 to 9."
DMS_PAGE = "A document management system is software that stores, tracks and manages electronic documents."
TRAIL_PAGE = "Hikers take about a week to hike a 100-mile section of the Appalachian Trail."
AMENDMENT_PAGE = "The Second Amendment protects the right of the people to keep and bear arms."
CHINESE_PAGE = "退款将在收到退货后三十天内处理。"

# The collection's golden questions before the run.
EXISTING = ["How long do refunds take?", "When was the Eiffel Tower built?"]

LONG_QUESTION = "Which " + "very " * 40 + "long question is this?"
WIDE_QUESTION = "Which " + "x" * 300 + " is it?"
LONG_ANSWER = "Refunds " + "take 30 days " * 41
WIDE_ANSWER = "Refunds take 30 days " + "y" * 1000

CASES = [
    # --- accepted
    (
        "Who pays for return shipping?",
        "The customer pays for return shipping, unless the item arrived damaged.",
        REFUND_PAGE,
        None,
    ),
    ("How tall is the Eiffel Tower?", "330 metres", EIFFEL_PAGE, None),
    ("Who designed the Eiffel Tower?", "The engineering company of Gustave Eiffel.", EIFFEL_PAGE, None),
    ("What do customers get for returns without a receipt?", "Store credit.", REFUND_PAGE, None),
    ("How many days does the refund window last?", "30 days", REFUND_PAGE, None),
    (
        "Which city hosted the 1889 World's Fair?",
        "The 1889 World's Fair was hosted in Paris.",
        EIFFEL_PAGE,
        None,
    ),
    # lexical: "completed" is not "built", so this is not a near-duplicate of the existing question
    ("In which year was the Eiffel Tower completed?", "1889", EIFFEL_PAGE, None),
    ("退款需要多长时间处理？", "三十天内", CHINESE_PAGE, None),
    # --- questions that merely use "document", "section", "passage", "text": accepted
    (
        "What is a document management system?",
        "Software that stores and manages electronic documents.",
        DMS_PAGE,
        None,
    ),
    ("How long does a section of the Appalachian Trail take to hike?", "About a week.", TRAIL_PAGE, None),
    ("Which passage of the Bible mentions the flood?", "Genesis, chapters 6 to 9.", BIBLE_PAGE, None),
    (
        "According to the text of the Second Amendment, who may bear arms?",
        "The people.",
        AMENDMENT_PAGE,
        None,
    ),
    # --- empty
    ("", "30 days", REFUND_PAGE, "empty"),
    ("   \n\t", "30 days", REFUND_PAGE, "empty"),
    ("How long do refunds take to arrive?", "  ", REFUND_PAGE, "empty"),
    ("", "", REFUND_PAGE, "empty"),
    # --- too short
    ("Refund window?", "30 days", REFUND_PAGE, "too_short"),
    ("Is it 30?", "Yes, 30 days.", REFUND_PAGE, "too_short"),
    ("What is this all about?", "Refunds.", REFUND_PAGE, "too_short"),  # no content word
    ("Can sale items be refunded at all?", "No.", REFUND_PAGE, "too_short"),
    ("Are sale items excluded from refunds?", "Yes, they are.", REFUND_PAGE, "too_short"),
    ("Are sale items excluded from refunds?", "No, it isn't.", REFUND_PAGE, "too_short"),
    # --- too long
    (LONG_QUESTION, "30 days", REFUND_PAGE, "too_long"),
    (WIDE_QUESTION, "30 days", REFUND_PAGE, "too_long"),
    ("How long do refunds take to arrive?", LONG_ANSWER, REFUND_PAGE, "too_long"),
    ("How long do refunds take to arrive?", WIDE_ANSWER, REFUND_PAGE, "too_long"),
    # --- ill-formed: the old offline template writer's keyword salad, stray punctuation, no verb
    (
        "What is known about Refunds, receiving, packaging (Refund policy)?",
        "Refunds are processed within 30 days of receiving the returned item.",
        REFUND_PAGE,
        "ill_formed",
    ),
    ("What is Look at you ! ''?", "Store credit is issued for returns.", REFUND_PAGE, "ill_formed"),
    ("What refund window for a sale item?", "30 days", REFUND_PAGE, "ill_formed"),
    ("Who pays for the the return shipping?", "The customer.", REFUND_PAGE, "ill_formed"),
    # --- passage dependent
    ("According to the passage, how long do refunds take?", "30 days", REFUND_PAGE, "passage_dependent"),
    (
        "What does the text say about sale items?",
        "They are not refundable.",
        REFUND_PAGE,
        "passage_dependent",
    ),
    ("In this section, who pays for return shipping?", "The customer.", REFUND_PAGE, "passage_dependent"),
    ("Which of the following is not refundable?", "Sale items.", REFUND_PAGE, "passage_dependent"),
    ("What is the refund window mentioned above?", "30 days", REFUND_PAGE, "passage_dependent"),
    (
        "How is store credit issued, as described here?",
        "For returns without a receipt.",
        REFUND_PAGE,
        "passage_dependent",
    ),
    (
        "Based on the context, when was the tower built?",
        "Between 1887 and 1889.",
        EIFFEL_PAGE,
        "passage_dependent",
    ),
    # --- answer giveaway
    ("Is the refund window 30 days long?", "30 days", REFUND_PAGE, "answer_giveaway"),
    ("Are refunds processed within 30 or 60 days?", "30 days", REFUND_PAGE, "answer_giveaway"),
    ("Can sale items be refunded?", "No, sale items are not refundable.", REFUND_PAGE, "answer_giveaway"),
    (
        "Was the Eiffel Tower designed by Gustave Eiffel?",
        "Yes, by Gustave Eiffel.",
        EIFFEL_PAGE,
        "answer_giveaway",
    ),
    # --- unsupported answer
    (
        "Which payment provider issues refunds?",
        "PayPal issues all refunds within 5 business days.",
        REFUND_PAGE,
        "unsupported_answer",
    ),
    (
        "Who designed the Eiffel Tower?",
        "Alexandre Dumas designed it in Lyon.",
        EIFFEL_PAGE,
        "unsupported_answer",
    ),
    (
        "Who designed the Eiffel Tower?",
        "The engineering company of Gustave Eiffel.",
        REFUND_PAGE,
        "unsupported_answer",
    ),
    (
        "How long must customers wait for a refund?",
        "Refunds are processed within 60 days of receiving the returned item.",
        REFUND_PAGE,
        "unsupported_answer",
    ),
    # --- near duplicate of an existing question
    ("How long does a refund take?", "30 days", REFUND_PAGE, "near_duplicate"),
    ("how long do REFUNDS take", "Within 30 days.", REFUND_PAGE, "near_duplicate"),
    ("How long do refunds usually take?", "30 days", REFUND_PAGE, "near_duplicate"),
    ("In what year was the Eiffel Tower built?", "1889", EIFFEL_PAGE, "near_duplicate"),
]


@pytest.mark.parametrize(("question", "answer", "page", "reason"), CASES)
def test_check(question: str, answer: str, page: str, reason: str | None) -> None:
    verdict = check(question, answer, page, DuplicateIndex(EXISTING))
    assert verdict.reason == reason, verdict.detail
    assert verdict.accepted is (reason is None)
    assert bool(verdict.detail) is (reason is not None)


def test_the_cases_cover_every_reason() -> None:
    assert {reason for *_, reason in CASES} == {*REASONS, None}
    assert len(CASES) >= 40


def test_reasons_are_the_gate_s_eight_in_check_order() -> None:
    assert REASONS == (
        "empty",
        "too_short",
        "too_long",
        "ill_formed",
        "passage_dependent",
        "answer_giveaway",
        "unsupported_answer",
        "near_duplicate",
    )


def test_details_say_why() -> None:
    index = DuplicateIndex(EXISTING)
    assert check("", "", REFUND_PAGE, index).detail == "question and answer are blank"
    assert check(" ", "30 days", REFUND_PAGE, index).detail == "question is blank"
    assert check("Refund window?", "30 days", REFUND_PAGE, index).detail == "question has 2 words (minimum 4)"
    assert check("Are sale items refundable?", "No.", REFUND_PAGE, index).detail == (
        "answer has no content words (a bare yes or no is not a usable reference)"
    )
    assert check(LONG_QUESTION, "30 days", REFUND_PAGE, index).detail == "question has 45 words (maximum 40)"
    assert check(
        "According to the passage, how long do refunds take?", "30 days", REFUND_PAGE, index
    ).detail == ('question matches "according to the passage"')
    assert check(
        "What is known about National, consolidated, catalogue (Primary source)?",
        "30 days",
        REFUND_PAGE,
        index,
    ).detail == (
        'question is ill-formed: a keyword list, not a question: "National", "consolidated", "catalogue"'
    )
    assert check("Is the refund window 30 days long?", "30 days", REFUND_PAGE, index).detail == (
        '2 of 2 answer terms already in the question: "30", "days"'
    )
    assert check(
        "Which payment provider issues refunds?",
        "PayPal issues all refunds within 5 business days.",
        REFUND_PAGE,
        index,
    ).detail == ('3 of 6 answer terms on the page (0.50 < 0.6); missing: "paypal", "5", "business"')
    assert check(
        "How long must customers wait for a refund?",
        "Refunds are processed within 60 days of receiving the returned item.",
        REFUND_PAGE,
        index,
    ).detail == ('number "60" not on the page')
    assert check("How long does a refund take?", "30 days", REFUND_PAGE, index).detail == (
        'near-duplicate of "How long do refunds take?" (1.00)'
    )
    near = check(
        "What is the capital city of France?",
        "Paris",
        "Paris is the capital of France.",
        DuplicateIndex(["What is the capital of France?"]),
    )
    assert near == Verdict("near_duplicate", 'near-duplicate of "What is the capital of France?" (0.73)')


def test_checks_run_in_order_the_first_failure_wins() -> None:
    index = DuplicateIndex(EXISTING)
    # passage dependent AND a near-duplicate AND unsupported: the earlier check decides.
    assert check(
        "According to the passage, how long do refunds take?", "5 weeks", REFUND_PAGE, index
    ).reason == ("passage_dependent")
    # ill-formed AND passage dependent: the form is judged first.
    assert check(
        "According to the passage, how long do refunds take ! ''?", "30 days", REFUND_PAGE, index
    ).reason == ("ill_formed")
    # a giveaway that is also unsupported by the page and a near-duplicate.
    assert check(
        "Do refunds take 90 days?", "90 days", REFUND_PAGE, DuplicateIndex(["Do refunds take 90 days?"])
    ).reason == ("answer_giveaway")
    # unsupported and a near-duplicate.
    assert check("How long does a refund take?", "Six weeks by cheque.", REFUND_PAGE, index).reason == (
        "unsupported_answer"
    )


def test_check_does_not_add_to_the_index_the_caller_does() -> None:
    index = DuplicateIndex(EXISTING)
    question = "Who pays for return shipping?"
    answer = "The customer, unless the item arrived damaged."
    assert check(question, answer, REFUND_PAGE, index).accepted
    assert len(index) == 2
    assert check(question, answer, REFUND_PAGE, index).accepted  # still not known
    index.add(question)
    assert check("Who pays for the return shipping?", answer, REFUND_PAGE, index).reason == "near_duplicate"


def test_limits_are_honoured() -> None:
    index = DuplicateIndex(EXISTING)
    wrong_number = (
        "How long must customers wait for a refund?",
        "Within 60 days of receiving the returned item.",
    )
    assert check(*wrong_number, REFUND_PAGE, index).reason == "unsupported_answer"
    assert check(*wrong_number, REFUND_PAGE, index, GateLimits(numbers_must_appear=False)).accepted
    restated = ("Which city hosted the 1889 World's Fair?", "The 1889 World's Fair was hosted in Paris.")
    assert check(*restated, EIFFEL_PAGE, index).accepted
    assert check(*restated, EIFFEL_PAGE, index, GateLimits(giveaway_min=0.8)).reason == "answer_giveaway"
    assert (
        check("Who founded Acme?", "Jane Doe", "Acme was founded by Jane Doe.", index).reason == "too_short"
    )
    assert check(
        "Who founded Acme?",
        "Jane Doe",
        "Acme was founded by Jane Doe.",
        index,
        GateLimits(question_min_words=3),
    ).accepted
    salad = ("What is known about Refunds, receiving, packaging?", "Refunds are processed within 30 days.")
    assert check(*salad, REFUND_PAGE, index).reason == "ill_formed"
    assert check(*salad, REFUND_PAGE, index, GateLimits(well_formed=False)).accepted
    paraphrase = ("How long do partial refunds take?", "30 days")
    assert check(*paraphrase, REFUND_PAGE, index).reason == "near_duplicate"  # 3 / 3.75 = 0.8
    assert check(*paraphrase, REFUND_PAGE, index, GateLimits(duplicate_min=0.85)).accepted
    loose = ("How long do refunds take for items?", "Items: 30 days, processed on receiving the return.")
    assert check(*loose, REFUND_PAGE, DuplicateIndex(), GateLimits(support_min=1.0)).accepted
    short = GateLimits(answer_max_words=2)
    assert (
        check("How long do refunds take to arrive?", "Thirty calendar days", REFUND_PAGE, index, short).reason
        == "too_long"
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"question_min_words": 0},
        {"question_min_words": 50},
        {"answer_max_chars": 0},
        {"support_min": 0.0},
        {"giveaway_min": 1.5},
        {"duplicate_min": -0.1},
    ],
)
def test_gate_limits_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        GateLimits(**bad)  # type: ignore[arg-type]


def test_verdict_accepted() -> None:
    assert Verdict(None).accepted
    assert not Verdict("too_short", "question has 2 words (minimum 4)").accepted


# ---------------------------------------------------------------- determinism

_DETERMINISM_SCRIPT = """
from goldenset.duplicates import DuplicateIndex, question_similarity
from goldenset.quality import check
rows = {rows!r}
index = DuplicateIndex({existing!r})
for question, answer, page, _ in rows:
    verdict = check(question, answer, page, index)
    print(verdict.reason, verdict.detail)
    if verdict.accepted:
        index.add(question)
for question, *_ in rows:
    print(repr(question_similarity(question, "How long does a refund take for sale items?")))
"""


def test_verdicts_do_not_depend_on_hash_seed_or_run() -> None:
    script = _DETERMINISM_SCRIPT.format(rows=CASES, existing=EXISTING)
    root = Path(__file__).resolve().parents[2]
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        run = subprocess.run(
            [sys.executable, "-c", script], env=env, cwd=root, capture_output=True, text=True, check=True
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    assert outputs.pop().count("\n") == 2 * len(CASES)


def test_repeated_checks_in_process_give_equal_verdicts() -> None:
    first = [check(q, a, p, DuplicateIndex(EXISTING)) for q, a, p, _ in CASES]
    second = [check(q, a, p, DuplicateIndex(EXISTING)) for q, a, p, _ in CASES]
    assert first == second
