"""The quality gate of golden-set generation. Plain Python: no Django import, no model, no randomness.

A chat model writes one question and a reference answer per page of a collection; `check` decides whether
the pair may join the golden set. The checks run in this order and the first failure is the verdict:

empty
    the question or the answer is blank.
too_short
    the question has fewer than `question_min_words` words or no content term at all; or the answer has no
    content term ("Yes.", "No, it isn't."): a bare yes/no says nothing a judge could check an answer
    against. Short answers with content are fine ("30 days", "1889").
too_long
    the question or the answer is over its word or character limit.
ill_formed
    the question is not something a person would type (goldenset.fluency): a keyword list ("What is known
    about National, consolidated, catalogue?"), stray punctuation, quotes or brackets ("What is Look at you !
    ''?"), no verb after its question word, mostly capitalised words, a word repeated, a fragment at the end.
    The detail says which. Tuned to accept questions people wrote, lower case and telegraphic ones included
    (benchmarks/fluency_bench.py).
passage_dependent
    the question only makes sense next to its page ("according to the passage", "in this section", "the
    text mentions", "described above", "which of the following"). A golden question is asked of the whole
    collection, so it must stand alone. Phrasing patterns only (goldenset.passage_phrasing): a question that
    leans on a bare pronoun ("What is it used for?") or on an unnamed "the company" is not caught.
answer_giveaway
    the answer's content terms are (by default all) already in the question: "Is the refund window 30 days
    long?" / "30 days", or "Is it 30 or 60 days?" / "30 days". Such a question tests nothing.
unsupported_answer
    fewer than `support_min` of the answer's content terms occur on the page, or (with
    `numbers_must_appear`) a number in the answer does not. Lexical support only: an answer that reuses the
    page's words in a wrong combination passes, and one that paraphrases faithfully ("two weeks" for "14
    days") fails.
near_duplicate
    the question is too similar (`question_similarity`, goldenset.duplicates) to one already known: the
    collection's golden questions and those accepted earlier in the run. The caller keeps that
    DuplicateIndex and adds each accepted question; `check` never adds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from goldenset.duplicates import DEFAULT_DUPLICATE_MIN, DuplicateIndex
from goldenset.fluency import ill_formed
from goldenset.lexical import content_terms, coverage, terms_from_tokens, word_count
from goldenset.passage_phrasing import passage_dependent
from goldenset.text import tokenize

__all__ = [
    "ACCEPTED",
    "REASONS",
    "GateLimits",
    "Verdict",
    "check",
]

REASONS: tuple[str, ...] = (
    "empty",
    "too_short",
    "too_long",
    "ill_formed",
    "passage_dependent",
    "answer_giveaway",
    "unsupported_answer",
    "near_duplicate",
)


@dataclass(frozen=True)
class GateLimits:
    """The thresholds of `check`. Word counts are those of goldenset.lexical.word_count."""

    # A question needs some substance: rejects "Refund window?" and "What is it?", and also the legitimate
    # but terse "Who founded Acme?" (3 words); "When was Acme founded?" passes.
    question_min_words: int = 4
    # A search query, not an essay: longer questions usually paste page text in.
    question_max_words: int = 40
    question_max_chars: int = 300
    # A reference answer is a fact or two, not a page copied out.
    answer_max_words: int = 120
    answer_max_chars: int = 1000
    # Fraction of the answer's distinct content terms that must occur on the page. 0.6 tolerates the
    # connecting words a model adds ("Refunds are usually issued within 30 days" against "refunds: 30
    # days") and rejects an answer mostly made of words the page does not have.
    support_min: float = 0.6
    # Every number in the answer must occur on the page: numbers are the facts a model most often gets
    # wrong while every other word still matches ("60 days" for the page's "30 days").
    numbers_must_appear: bool = True
    # Fraction of the answer's distinct content terms already in the question at or above which the answer
    # is a giveaway. 1.0: only when the answer adds no term at all. Lower values also catch answers that
    # add filler, but reject the common answer style that restates the question around one new fact
    # ("The annual conference organised by Acme is hosted in Berlin": 6 of 7 terms restated).
    giveaway_min: float = 1.0
    # question_similarity at or above which a question is a near-duplicate of a known one. At 0.7: a reworded
    # question (1.0) is one; so is one that adds one plain term to a question of two or more terms ("capital
    # city of France", 0.73), or two plain terms to one of four or more; one replaced term makes a different
    # question unless five or more terms are shared ("France" / "Spain", 0.33).
    duplicate_min: float = DEFAULT_DUPLICATE_MIN
    # Whether to run the ill_formed check (goldenset.fluency). Off: the gate as it was before that check, for
    # comparisons (benchmarks/fluency_bench.py) and for questions in a language its English rules misread.
    well_formed: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.question_min_words <= self.question_max_words:
            raise ValueError("need 1 <= question_min_words <= question_max_words")
        for name in ("question_max_chars", "answer_max_words", "answer_max_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("support_min", "giveaway_min", "duplicate_min"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1]")


@dataclass(frozen=True)
class Verdict:
    """The outcome of `check`: reason None means accepted; detail says why in words, for people."""

    reason: str | None
    detail: str = ""

    @property
    def accepted(self) -> bool:
        return self.reason is None


ACCEPTED = Verdict(None, "")

# --- the gate -----------------------------------------------------------------------------------------------


def _surface(terms: Iterable[str], text: str) -> list[str]:
    """The word of text each term came from ("busi" -> "business"), for messages."""
    first: dict[str, str] = {}
    for token in tokenize(text):
        produced = terms_from_tokens([token])
        for term in produced:
            first.setdefault(term, token if len(produced) == 1 else term)
    return [first.get(term, term) for term in terms]


def _quoted(words: list[str], most: int = 5) -> str:
    shown = ", ".join(f'"{word}"' for word in words[:most])
    return shown + (f" and {len(words) - most} more" if len(words) > most else "")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def check(
    question: str,
    answer: str,
    page_text: str,
    duplicates: DuplicateIndex,
    limits: GateLimits = GateLimits(),
) -> Verdict:
    """Whether a generated (question, answer) pair for a page may join the golden set.

    The checks of the module docstring, in order; the first failure is the verdict. The near-duplicate
    check uses limits.duplicate_min (not the index's own threshold) and does not add the question to the
    index: the caller adds the questions it accepts.
    """
    question, answer = question.strip(), answer.strip()
    if not question or not answer:
        blank = [name for name, text in (("question", question), ("answer", answer)) if not text]
        return Verdict("empty", " and ".join(blank) + (" are blank" if len(blank) == 2 else " is blank"))

    question_words, answer_words = word_count(question), word_count(answer)
    question_terms, answer_terms = content_terms(question), content_terms(answer)
    if question_words < limits.question_min_words:
        return Verdict(
            "too_short",
            f"question has {_plural(question_words, 'word')} (minimum {limits.question_min_words})",
        )
    if not question_terms:
        return Verdict("too_short", "question has no content words")
    if not answer_terms:
        return Verdict(
            "too_short", "answer has no content words (a bare yes or no is not a usable reference)"
        )

    for what, count, unit, most in (
        ("question", question_words, "word", limits.question_max_words),
        ("question", len(question), "character", limits.question_max_chars),
        ("answer", answer_words, "word", limits.answer_max_words),
        ("answer", len(answer), "character", limits.answer_max_chars),
    ):
        if count > most:
            return Verdict("too_long", f"{what} has {_plural(count, unit)} (maximum {most})")

    problem = ill_formed(question) if limits.well_formed else None
    if problem is not None:
        return Verdict("ill_formed", f"question is ill-formed: {problem}")

    phrase = passage_dependent(question)
    if phrase is not None:
        return Verdict("passage_dependent", f'question matches "{phrase}"')

    distinct = list(dict.fromkeys(answer_terms))
    asked = set(question_terms)
    if coverage(distinct, asked) >= limits.giveaway_min:
        in_question = [term for term in distinct if term in asked]
        return Verdict(
            "answer_giveaway",
            f"{len(in_question)} of {_plural(len(distinct), 'answer term')} already in the question: "
            + _quoted(_surface(in_question, answer)),
        )

    page_terms = set(content_terms(page_text))
    missing = [term for term in distinct if term not in page_terms]
    support = coverage(distinct, page_terms)
    if support < limits.support_min:
        return Verdict(
            "unsupported_answer",
            f"{len(distinct) - len(missing)} of {_plural(len(distinct), 'answer term')} on the page "
            f"({support:.2f} < {limits.support_min}); missing: {_quoted(_surface(missing, answer))}",
        )
    if limits.numbers_must_appear:
        numbers = [term for term in missing if any(char.isdigit() for char in term)]
        if numbers:
            return Verdict(
                "unsupported_answer",
                f"{'number' if len(numbers) == 1 else 'numbers'} {_quoted(numbers)} not on the page",
            )

    known = duplicates.find(question, threshold=limits.duplicate_min)
    if known is not None:
        return Verdict("near_duplicate", f'near-duplicate of "{known[0]}" ({known[1]:.2f})')
    return ACCEPTED
