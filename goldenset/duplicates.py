"""Near-duplicate questions: how alike two questions are (`question_similarity`) and the questions seen so far
(`DuplicateIndex`), for the quality gate's near_duplicate check (goldenset.quality). Plain Python: no Django
import, no randomness.

`question_similarity` is lexical: stemmed content terms, plus markers for the question's intent (when /
where / who / why, also when spelt "in what year", "what is the location of", "what is the reason for")
and for negation ("not", "without", "can't"). Paraphrases by reordering, inflection and function words
score 1.0; a substituted term ("France" / "Spain", "built" / "tall") costs a lot, an added qualifier less,
and a differing number, negation, intent or direction word ("in" / "out", "before" / "after") costs most.
It knows no synonyms: "How long do refunds take?" and "What is the refund processing time?" score low.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from goldenset.lexical import STOPWORDS, stem, terms_from_tokens
from goldenset.text import tokenize

__all__ = ["DEFAULT_DUPLICATE_MIN", "DuplicateIndex", "question_similarity"]

DEFAULT_DUPLICATE_MIN = 0.7

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
