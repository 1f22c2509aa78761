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
passage_dependent
    the question only makes sense next to its page ("according to the passage", "in this section", "the
    text mentions", "described above", "which of the following"). A golden question is asked of the whole
    collection, so it must stand alone. Phrasing patterns only: a question that leans on a bare pronoun
    ("What is it used for?") or on an unnamed "the company" is not caught.
answer_giveaway
    the answer's content terms are (by default all) already in the question: "Is the refund window 30 days
    long?" / "30 days", or "Is it 30 or 60 days?" / "30 days". Such a question tests nothing.
unsupported_answer
    fewer than `support_min` of the answer's content terms occur on the page, or (with
    `numbers_must_appear`) a number in the answer does not. Lexical support only: an answer that reuses the
    page's words in a wrong combination passes, and one that paraphrases faithfully ("two weeks" for "14
    days") fails.
near_duplicate
    the question is too similar (`question_similarity`) to one already known: the collection's golden
    questions and those accepted earlier in the run. The caller keeps that DuplicateIndex and adds each
    accepted question; `check` never adds.

`question_similarity` is lexical: stemmed content terms, plus markers for the question's intent (when /
where / who / why, also when spelt "in what year", "what is the location of", "what is the reason for")
and for negation ("not", "without", "can't"). Paraphrases by reordering, inflection and function words
score 1.0; a substituted term ("France" / "Spain", "built" / "tall") costs a lot, an added qualifier less,
and a differing number, negation, intent or direction word ("in" / "out", "before" / "after") costs most.
It knows no synonyms: "How long do refunds take?" and "What is the refund processing time?" score low.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from goldenset.lexical import STOPWORDS, content_terms, coverage, stem, terms_from_tokens, word_count
from goldenset.text import tokenize

__all__ = [
    "ACCEPTED",
    "DEFAULT_DUPLICATE_MIN",
    "REASONS",
    "DuplicateIndex",
    "GateLimits",
    "Verdict",
    "check",
    "passage_dependent",
    "question_similarity",
]

REASONS: tuple[str, ...] = (
    "empty",
    "too_short",
    "too_long",
    "passage_dependent",
    "answer_giveaway",
    "unsupported_answer",
    "near_duplicate",
)

DEFAULT_DUPLICATE_MIN = 0.7


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

# --- passage-dependent phrasing -----------------------------------------------------------------------------


def _alternation(forms: Iterable[str]) -> str:
    return "(?:" + "|".join(dict.fromkeys(forms)) + ")"


def _words(words: str) -> str:
    """An alternation of the space-separated words, as they are."""
    return _alternation(words.split())


def _nouns(words: str) -> str:
    """An alternation of the space-separated words and their plurals ("study" -> study|studies)."""
    return _alternation(
        form
        for word in words.split()
        for form in (word, word[:-1] + "ies" if word.endswith("y") else word + "s")
    )


def _verbs(regular: str, irregular: str = "") -> str:
    """An alternation of the regular verbs in base, -s and -ed forms, and the irregular forms as given."""

    def forms(word: str) -> tuple[str, str, str]:
        if word.endswith("y") and word[-2] not in "aeiou":
            return word, word[:-1] + "ies", word[:-1] + "ied"
        third = word + "es" if word.endswith(("s", "sh", "ch")) else word + "s"
        return word, third, word + "d" if word.endswith("e") else word + "ed"

    return _alternation([form for word in regular.split() for form in forms(word)] + irregular.split())


# After the normalisation below, a clause ends at punctuation, at the end, or where a question word, an
# auxiliary or a conjunction starts the next part. "According to the document, what..." ends a clause at
# "document"; "according to the document retention policy" and "the text of the law" do not.
_END = (
    r"(?= [,;:.!?]|$| (?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|does|do|did|can"
    r"|could|should|would|will|and|or)\b)"
)
_DOC_WORDS = (
    "passage text document article excerpt extract snippet section paragraph chapter page context source"
    " material reading story study paper report transcript"
)
_DOC = _nouns(_DOC_WORDS)
_DOC_AUTHOR = _nouns(_DOC_WORDS + " author writer information data table figure")
_READING = _nouns("passage excerpt extract snippet paragraph text article context")
_EXHIBIT = _nouns("table figure chart graph diagram image list example")
_ADJECTIVE = r"(?:above|following|given|provided|preceding|previous|attached|accompanying|quoted|cited)"
_ADJ_NOUN = _nouns(
    "text passage context excerpt extract document article paragraph section table figure snippet material"
    " statement sentence quote description chart list example source reading story"
)
_SPEAKER = _words(
    "passage text document article excerpt extract snippet paragraph section chapter page context author"
    " writer report study paper story transcript"
)
_SPEAKER_VERB = _verbs(
    "say state mention describe discuss suggest argue claim explain note indicate conclude recommend show"
    " reveal highlight emphasize emphasise refer define list propose report cover outline contain present"
    " provide want believe mean imply focus",
    irregular="said tell tells told find finds found think thinks thought feel feels felt",
)
_REFERRING_VERB = (
    r"(?:mentioned|described|discussed|stated|listed|shown|presented|noted|outlined|cited|quoted|referenced"
    r"|defined|explained|covered|summari[sz]ed|depicted|illustrated|given|provided|introduced)"
)

_PASSAGE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # according to the passage / to the author / to the provided text
        rf"\baccording to (?:the|this|that|these|those)(?: {_ADJECTIVE})? {_DOC_AUTHOR}{_END}",
        # the given text / in the following passage / the previous section
        rf"\b(?:the|this|these) {_ADJECTIVE} {_ADJ_NOUN}\b",
        # based on the text / given the context / as per the information provided
        rf"\b(?:based (?:on|upon)|given|judging (?:by|from)|as per|per) (?:the |this )?(?:{_ADJECTIVE} )?"
        rf"(?:{_DOC_AUTHOR}|above)(?: (?:provided|given|above|below|presented|here|shown))?{_END}",
        # this passage / in this section / these documents
        rf"\b(?:this|these) (?:{_DOC}|{_EXHIBIT})\b",
        # the passage says / what does the document say about / does the author argue
        rf"\b(?:the|this) {_SPEAKER} {_SPEAKER_VERB}\b",
        # what is the passage (mainly) about
        rf"\b(?:the|this) {_SPEAKER} (?:is |was |mainly |mostly |primarily |chiefly )*about\b",
        # the text provided / the context given
        rf"\bthe {_DOC_AUTHOR} (?:provided|given|above|below|presented|shown|supplied|here){_END}",
        # mentioned above / described here / discussed in the text / previously mentioned
        rf"\b{_REFERRING_VERB} (?:above|below|earlier|previously|here)\b",
        rf"\b{_REFERRING_VERB} in (?:the|this) {_DOC}\b",
        r"\b(?:previously|earlier|above) (?:mentioned|described|discussed|stated|listed|noted|cited)\b",
        r"\baforementioned\b",
        # in the passage / of the excerpt / in the text? (not "in the context of ...", "the text of ...")
        rf"\b(?:in|from|of|within|by) the {_READING}{_END}",
        # the table above / the figure below
        rf"\b{_EXHIBIT} (?:above|below)\b",
        # the above (not "the above-ground pool", "above-average")
        r"\bthe above\b(?! (?:ground|average|board|water|the)\b)",
        # which of the following (a multiple-choice stem without its options)
        r"\b(?:which|what|who|how many) of the following\b",
        # the author's / who is the author?
        r"\bthe (?:author|writer|narrator) s\b",
        rf"\bthe (?:author|writer){_END}",
        # here at the end of a clause: "as described here", "What rules apply here?"
        r"\bhere(?= [,;:.!?]|$)",
    )
)

_PHRASE_TOKEN = re.compile(r"[^\W_]+|[,;:.!?]")


def _phrase_form(question: str) -> str:
    """Words and clause punctuation, space-separated, folded as goldenset.text.tokenize folds:
    "According to the text, what?" -> "according to the text , what ?"."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", question).casefold())
    return " ".join(_PHRASE_TOKEN.findall(folded))


def passage_dependent(question: str) -> str | None:
    """The phrase that ties the question to its page ("according to the passage"), or None.

    Case-insensitive and indifferent to punctuation, hyphens and apostrophes; the phrase is returned in
    its normalised form (lower case, words separated by single spaces). Questions that merely use the words
    pass: "What is a document management system?", "Which passage of the Bible mentions the flood?",
    "According to the text of the Second Amendment, who may bear arms?".
    """
    text = _phrase_form(question)
    for pattern in _PASSAGE_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0).strip()
    return None


# --- question similarity ------------------------------------------------------------------------------------

# The intent of the question's first question word; what, which and how have none of their own.
_WH_INTENT: dict[str, str | None] = {
    "when": "when", "where": "where", "who": "who", "whom": "who", "whose": "who", "why": "why",
    "what": None, "which": None, "how": None,
}  # fmt: skip
# "In what year", "what is the location of", "what was the reason for": the noun is the intent, not a term.
_INTENT_NOUNS: dict[str, str] = {
    stem(word): intent
    for words, intent in (
        ("year date day month century decade time", "when"),
        ("place location venue", "where"),
        ("person", "who"),
        ("reason", "why"),
    )
    for word in words.split()
}
_NEGATIONS = frozenset(
    {"not", "no", "never", "nor", "neither", "none", "nobody", "nothing", "nowhere", "cannot", "without", "non"}
)  # fmt: skip
# Direction and order words: adding or swapping one flips the question ("log in" / "log out").
_POLAR = frozenset(
    stem(word) for word in ("up", "down", "out", "off", "over", "under", "above", "below", "before", "after")
)

_STRONG_WEIGHT = 2.0  # an unmatched marker, number or direction word
_ADDED_WEIGHT = 0.75  # an unmatched term when only one question has unmatched terms (a qualifier added)
_SUBSTITUTED_WEIGHT = 1.0  # an unmatched term when both have some (a term replaced by another)


@dataclass(frozen=True)
class _Signature:
    tokens: tuple[str, ...]
    content: frozenset[str]  # stemmed content terms
    terms: frozenset[str]  # content terms and markers ("?when", "?not")


def _signature(question: str) -> _Signature:
    tokens = tokenize(question)
    markers: set[str] = set()
    consumed = -1
    for i, token in enumerate(tokens):
        if token not in _WH_INTENT:
            continue
        intent = _WH_INTENT[token]
        if token in ("what", "which"):
            for j in range(i + 1, min(i + 4, len(tokens))):
                if tokens[j] in STOPWORDS:
                    continue
                if stem(tokens[j]) in _INTENT_NOUNS:
                    intent, consumed = _INTENT_NOUNS[stem(tokens[j])], j
                break
        if intent:
            markers.add("?" + intent)
        break  # only the first question word: "What happens when ..." is not a when-question
    negated = any(
        token in _NEGATIONS or (token == "t" and i > 0 and tokens[i - 1].endswith("n"))
        for i, token in enumerate(tokens)
    )
    if negated:
        markers.add("?not")
    content = frozenset(terms_from_tokens(token for j, token in enumerate(tokens) if j != consumed))
    return _Signature(tuple(tokens), content, content | markers)


def _strong(term: str) -> bool:
    return term.startswith("?") or term in _POLAR or any(char.isdigit() for char in term)


def _similarity(a: _Signature, b: _Signature) -> float:
    if a.tokens == b.tokens:
        return 1.0 if a.tokens else 0.0
    if not a.content & b.content:
        return 0.0
    shared = a.terms & b.terms
    only_a, only_b = a.terms - b.terms, b.terms - a.terms
    plain = _ADDED_WEIGHT if not only_a or not only_b else _SUBSTITUTED_WEIGHT
    unmatched = sum(_STRONG_WEIGHT if _strong(term) else plain for term in only_a | only_b)
    return len(shared) / (len(shared) + unmatched)


def question_similarity(a: str, b: str) -> float:
    """How alike two questions are, 0..1, symmetric, deterministic, lexical.

    1.0 when they have the same words (case, punctuation and spacing aside) or the same content terms and
    markers ("How long do refunds take?" / "How long does a refund take?"). Otherwise
    shared / (shared + unmatched), counting content terms and markers (intent: ?when ?where ?who ?why;
    negation: ?not). An unmatched term weighs 0.75 when only one question has unmatched terms (it adds a
    qualifier: "capital city of France" / "capital of France" = 0.73), 1 when both have some (a term was
    replaced: "France" / "Spain" = 0.33), and 2 when it is a marker, a number or a direction word
    (up/down/out/off/over/under/above/below/before/after). Questions sharing no content term score 0.0,
    as does a question without words.
    """
    return _similarity(_signature(a), _signature(b))


class DuplicateIndex:
    """Questions seen so far (the collection's existing golden questions + those accepted in this run).

    `find` compares a question with every known question that shares a content term with it (an inverted
    index keeps that cheap for thousands of questions) and returns the most similar one at or above the
    threshold: a question with the same words if there is one, else the best score, on a tie the one added
    first.
    """

    def __init__(self, questions: Iterable[str] = (), threshold: float = DEFAULT_DUPLICATE_MIN) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold
        self._questions: list[str] = []
        self._signatures: list[_Signature] = []
        self._postings: defaultdict[str, list[int]] = defaultdict(list)
        self._by_tokens: dict[tuple[str, ...], int] = {}
        for question in questions:
            self.add(question)

    def add(self, question: str) -> None:
        signature = _signature(question)
        position = len(self._questions)
        self._questions.append(question)
        self._signatures.append(signature)
        for term in signature.content:
            self._postings[term].append(position)
        if signature.tokens:
            self._by_tokens.setdefault(signature.tokens, position)

    def find(self, question: str, threshold: float | None = None) -> tuple[str, float] | None:
        """The most similar known question and its similarity, if at or above threshold (by default the
        index's own), else None."""
        limit = self.threshold if threshold is None else threshold
        signature = _signature(question)
        exact = self._by_tokens.get(signature.tokens)
        if exact is not None:
            return self._questions[exact], 1.0
        # Candidates share a content term; skip those whose score cannot reach the limit even if every
        # marker matched and every unmatched term weighed the least, _ADDED_WEIGHT (a question sharing only
        # "company" with this one).
        shared_counts = Counter(
            position for term in signature.content for position in self._postings.get(term, ())
        )
        markers = len(signature.terms) - len(signature.content)
        best: tuple[int, float] | None = None
        for position in sorted(shared_counts):
            known = self._signatures[position]
            shared = shared_counts[position] + markers
            unmatched = len(signature.content) + len(known.content) - 2 * shared_counts[position]
            if shared / (shared + _ADDED_WEIGHT * unmatched) < limit:
                continue
            score = _similarity(signature, known)
            if score >= limit and (best is None or score > best[1]):
                best = (position, score)
        return None if best is None else (self._questions[best[0]], best[1])

    def __len__(self) -> int:
        return len(self._questions)


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
