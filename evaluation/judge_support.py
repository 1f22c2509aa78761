"""How well passages support a statement, the heuristic judge's core. Plain Python: no Django import.

`evaluation.judge.statement_support` is the entry point; this module holds its parts, each small and pure:

- `claim_terms`: the content terms of a text (goldenset.lexical) with numbers kept whole: "$1,000" is the term
  "1000", "3.5%" is "3.5", "24th" is "24", "seven" is "7" (zero to twenty spelled out), so a separator, a
  currency sign or an ordinal suffix neither splits a number nor hides it.
- `TermWeights`: how rare each term is, as BM25's idf over document frequencies, from the collection when the
  caller has them (cheap: a dict and a count), else over the passages at hand. Rare terms ("Kariba", "1958")
  weigh more than common ones ("year", "known").
- `support_of`: the score of one piece of evidence (one passage, or two together): the idf-weighted share of
  the statement's terms it holds, blended with the share of the statement's word pairs (adjacent content
  terms) it holds in the same order; then penalties: a number of the statement the evidence lacks, a short
  statement (few content terms) missing any term, and a negation the evidence's closest sentence does not
  share (or a negation of that sentence the statement dropped).

Every constant is tuned on the dev half of `benchmarks/data/judge_statements.jsonl` and measured on its test
half by `benchmarks/judge_agreement.py`: never tune on the test half.

Honest limits: still lexical. A paraphrase that shares no word ("two weeks" for "14 days") is invisible; a
negation is seen only as a word (not, no, never, n't, without) in the statement or in the passage's closest
sentence, so "refunds are refused" against "refunds are given" passes; a changed name among many shared words
costs only that name's weight.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from goldenset import lexical
from goldenset.text import tokenize
from goldenset.vocabulary.sentences import split_sentences

__all__ = [
    "BIGRAM_WEIGHT",
    "Evidence",
    "NEGATION_PENALTY",
    "NUMBER_PENALTY",
    "SHORT_PENALTY",
    "SHORT_TERMS",
    "TermWeights",
    "bigrams",
    "claim_terms",
    "evidence_of",
    "support_of",
]

BIGRAM_WEIGHT = 0.3  # share of the score given to word pairs (the rest to weighted single terms)
NUMBER_PENALTY = 0.5  # the score is multiplied by this when a number of the statement is missing
SHORT_TERMS = 4  # a statement with at most this many distinct terms is short: it must have all of them
SHORT_PENALTY = 0.7  # the score of a short statement missing a term is multiplied by this
NEGATION_PENALTY = 0.7  # the statement and the evidence's closest sentence disagree on a negation

# Numbers with thousands separators or decimals, an optional ordinal suffix: "1,200", "3.5", "24th", "1990s".
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?(?:st|nd|rd|th|s)?\b")
_ORDINAL = re.compile(r"(?:st|nd|rd|th|s)$")
_SPELLED_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty"
)
_SPELLED = {word: str(i) for i, word in enumerate(_SPELLED_WORDS.split())}
_NEGATIONS = frozenset({"not", "no", "never", "nor", "without", "none", "neither", "cannot", "nobody", "t"})


def _number_term(raw: str) -> str:
    number = _ORDINAL.sub("", raw.replace(",", ""))
    return number.rstrip("0").rstrip(".") if "." in number else number


def claim_terms(text: str) -> list[str]:
    """text's content terms in order, numbers whole ("$1,000" -> "1000") and small spelled numbers as digits."""
    terms: list[str] = []
    position = 0
    for match in _NUMBER.finditer(text):
        terms.extend(_words(text[position : match.start()]))
        terms.append(_number_term(match.group()))
        position = match.end()
    terms.extend(_words(text[position:]))
    return terms


def _words(text: str) -> list[str]:
    return [_SPELLED.get(t, t) for t in lexical.content_terms(text)]


def is_number(term: str) -> bool:
    return any(c.isdigit() for c in term)


def bigrams(terms: Sequence[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of content terms ("Lake Kariba" -> (lake, kariba)): the order words stand in."""
    return set(zip(terms, terms[1:], strict=False))


def _negated(text: str) -> bool:
    return any(t in _NEGATIONS for t in tokenize(text))


@dataclass(frozen=True)
class TermWeights:
    """Document frequencies and their count: a term's weight is BM25's idf, log(1 + (n - df + .5) / (df + .5)).

    From the collection (`df` of every term, `n` documents) the weights say what is rare in the user's pages;
    `from_texts` makes them from the passages at hand when nothing better is known. A term absent from `df`
    weighs as one seen once (the rarest a known term can be), so a statement's words missing from every passage
    are not made heavier than the rare words it shares with them."""

    df: Mapping[str, int]
    n: int

    def weight(self, term: str) -> float:
        df = min(max(self.df.get(term, 0), 1), max(self.n, 1))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> TermWeights:
        counts: Counter[str] = Counter()
        n = 0
        for text in texts:
            counts.update(set(claim_terms(text)))
            n += 1
        return cls(dict(counts), n)


@dataclass(frozen=True)
class Evidence:
    """One passage (or two together) as the judge reads it: its terms, word pairs and sentences."""

    numbers: tuple[int, ...]  # the passage numbers it is made of
    terms: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    sentences: tuple[tuple[frozenset[str], bool], ...] = field(default=())  # (terms, negated) per sentence

    def __add__(self, other: Evidence) -> Evidence:
        return Evidence(
            self.numbers + other.numbers,
            self.terms | other.terms,
            self.pairs | other.pairs,
            self.sentences + other.sentences,
        )


def evidence_of(number: int, title: str, text: str) -> Evidence:
    """A passage's evidence: the title counts as part of it (as a sentence of its own)."""
    sentences = [title, *split_sentences(text)] if title else split_sentences(text)
    rows = []
    terms: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for sentence in sentences:
        own = claim_terms(sentence)
        terms.update(own)
        pairs |= bigrams(own)
        rows.append((frozenset(own), _negated(sentence)))
    return Evidence((number,), frozenset(terms), frozenset(pairs), tuple(rows))


def _weighted_share(terms: set[str], found: Iterable[str], weights: TermWeights) -> float:
    total = sum(weights.weight(t) for t in terms)
    return sum(weights.weight(t) for t in found) / total if total else 0.0


def support_of(statement: str, evidence: Evidence, weights: TermWeights) -> tuple[float, float]:
    """(support score in 0..1, plain coverage: the unweighted share of distinct terms found) of statement."""
    ordered = claim_terms(statement)
    own = set(ordered)
    if not own:
        return 0.0, 0.0
    found = own & evidence.terms
    coverage = len(found) / len(own)
    score = _weighted_share(own, found, weights)
    pairs = bigrams(ordered)
    if pairs:
        pair_share = len(pairs & evidence.pairs) / len(pairs)
        score = (1 - BIGRAM_WEIGHT) * score + BIGRAM_WEIGHT * pair_share
    if any(is_number(t) and t not in evidence.terms for t in own):
        score *= NUMBER_PENALTY
    if len(own) <= SHORT_TERMS and found != own:
        score *= SHORT_PENALTY
    if evidence.sentences and _negation_differs(own, _negated(statement), evidence):
        score *= NEGATION_PENALTY
    return min(max(score, 0.0), 1.0), coverage


def _negation_differs(own: set[str], negated: bool, evidence: Evidence) -> bool:
    """Whether the evidence's closest sentence (most shared terms) and the statement disagree on negation."""
    closest = max(evidence.sentences, key=lambda row: len(own & row[0]))
    return bool(own & closest[0]) and closest[1] != negated
