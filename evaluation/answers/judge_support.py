"""How well passages support a statement, the heuristic judge's core. Plain Python: no Django import.

`evaluation.answers.judge.statement_support` is the entry point; this module holds its parts, each small and pure:

- `claim_terms`: the content terms of a text (goldenset.lexical) with numbers kept whole: "$1,000" is the term
  "1000", "3.5%" is "3.5", "24th" is "24", "seven" is "7" (zero to twenty spelled out), so a separator, a
  currency sign or an ordinal suffix neither splits a number nor hides it.
- `TermWeights`: how rare each term is, as BM25's idf over document frequencies, from the collection when the
  caller has them (cheap: a dict and a count), else over the passages at hand. Rare terms ("Kariba", "1958")
  weigh more than common ones ("year", "known").
- `support_of`: the score of one piece of evidence (one passage, or two together): the idf-weighted share of
  the statement's terms it holds, blended with the share of the statement's word pairs (adjacent content
  terms) it holds in the same order; then penalties: a number or a name (a capitalised word past the first) of
  the statement the evidence lacks, a short statement (few content terms) missing any term, and a negation that none of the evidence's two closest
  sentences shares (or that the statement dropped), a negation counting for the few words after it.

The constants (and SUPPORT_MIN and the two-passage discount in evaluation.answers.judge) are chosen on the dev parts
of public sets labelled by three raters each, abstractive answers (LFQA-Verification) and summaries (QAGS):
`benchmarks/judge_agreement.py --sweep` searches a grid and keeps the point with the best mean AUC over those dev
parts among the points where a copied sentence with a changed number, a changed name or an added negation still
fails; the test parts are only reported, and the repo's own labels (benchmarks/data/judge_statements.jsonl) are
regression cases.
Measured there, word pairs are what ranks summaries (without them the dev AUC falls from .800 to .665 on summaries,
from .823 to .814 on answers); a Snowball stemmer and judging a statement that leans on the one before it
with it changed the AUC by under .003 and were not adopted.

Honest limits: still lexical. A paraphrase that shares no word ("two weeks" for "14 days") is invisible; a
negation is seen only as a word (not, no, never, n't, without) a few words before a statement's term, so
"refunds are refused" against "refunds are given" passes, and a negation in another clause of the passage's
sentence ("... while in 18 states there is no minimum age") can count against a statement it does not touch; word
pairs must be adjacent ("the studio, claiming ..., refused" lacks the pair studio-refused); a name is seen only when
capitalised (a lower-cased summary's names are plain words).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from goldenset import lexical
from goldenset.text import tokenize
from goldenset.vocabulary.sentences import split_sentences

__all__ = [
    "BIGRAM_WEIGHT",
    "Evidence",
    "NAME_PENALTY",
    "NEGATION_PENALTY",
    "NEGATION_SENTENCES",
    "NEGATION_WINDOW",
    "NUMBER_PENALTY",
    "SHORT_PENALTY",
    "SHORT_TERMS",
    "TermWeights",
    "bigrams",
    "claim_terms",
    "evidence_of",
    "name_terms",
    "support_of",
]

BIGRAM_WEIGHT = 0.4  # share of the score given to word pairs (the rest to weighted single terms)
NUMBER_PENALTY = 0.5  # the score is multiplied by this when a number of the statement is missing
SHORT_TERMS = 4  # a statement with at most this many distinct terms is short: it must have all of them
SHORT_PENALTY = 0.7  # the score of a short statement missing a term is multiplied by this
NEGATION_PENALTY = 0.5  # the statement and the evidence's closest sentences disagree on a negation
NAME_PENALTY = 0.5  # the score is multiplied by this when a name of the statement is missing
NEGATION_WINDOW = 3  # a negation word negates the content words up to this many words after it
NEGATION_SENTENCES = 2  # the statement's polarity must match one of this many closest sentences

# Numbers with thousands separators or decimals, an optional ordinal suffix: "1,200", "3.5", "24th", "1990s".
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?(?:st|nd|rd|th|s)?\b")
_ORDINAL = re.compile(r"(?:st|nd|rd|th|s)$")
_SPELLED_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty"
)
_SPELLED = {word: str(i) for i, word in enumerate(_SPELLED_WORDS.split())}
# A word (any script's letters) and what stands before it: a name is a capitalised word that does not open the
# statement, a sentence, a quotation or a parenthesis.
_WORD = re.compile(r"\w+")
_OPENERS = frozenset('.!?:;"“(')
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


@lru_cache(maxsize=8192)
def name_terms(statement: str) -> frozenset[str]:
    """The content terms of the statement's names: capitalised words (in any script: "Khloé", "Shōtoku") past its
    first word and not opening a sentence, a quotation or a parenthesis ("General Lee surrendered to Grant" ->
    lee, grant; "General" opens it)."""
    text = statement.strip()
    names = []
    last, position = "", 0  # the last character before the word that is not a space
    for match in _WORD.finditer(text):
        word, gap = match.group(), text[position : match.start()].rstrip()
        last = gap[-1] if gap else last
        if match.start() and word[0].isupper() and last not in _OPENERS:
            names.append(word)
        last, position = word[-1], match.end()
    return frozenset(t for word in names for t in _words(word))


def is_number(term: str) -> bool:
    return any(c.isdigit() for c in term)


def bigrams(terms: Sequence[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of content terms ("Lake Kariba" -> (lake, kariba)): the order words stand in."""
    return set(zip(terms, terms[1:], strict=False))


def _negated_near(text: str, terms: set[str] | frozenset[str]) -> bool:
    """Whether a negation word stands at most NEGATION_WINDOW words before one of terms in text: "is not
    refundable" negates "refundable"; "This is not the same as the atomic number" does not negate "atomic"."""
    tokens = tokenize(text)
    for i, token in enumerate(tokens):
        if token in _NEGATIONS:
            following = claim_terms(" ".join(tokens[i + 1 : i + 1 + NEGATION_WINDOW]))
            if any(t in terms for t in following):
                return True
    return False


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
    sentences: tuple[tuple[frozenset[str], str], ...] = field(default=())  # (terms, text) per sentence

    def __add__(self, other: Evidence) -> Evidence:
        return Evidence(
            self.numbers + other.numbers,
            self.terms | other.terms,
            self.pairs | other.pairs,
            self.sentences + other.sentences,
        )


@lru_cache(maxsize=4096)
def evidence_of(number: int, title: str, text: str) -> Evidence:
    """A passage's evidence: the title counts as part of it (as a sentence of its own). Cached: an evaluation
    judges the same retrieved page for several metrics, configurations and questions (Evidence is immutable)."""
    sentences = [title, *split_sentences(text)] if title else split_sentences(text)
    rows = []
    terms: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for sentence in sentences:
        own = claim_terms(sentence)
        terms.update(own)
        pairs |= bigrams(own)
        rows.append((frozenset(own), sentence))
    return Evidence((number,), frozenset(terms), frozenset(pairs), tuple(rows))


def _weighted_share(terms: set[str], found: Iterable[str], weights: TermWeights) -> float:
    # fsum: the sum of a set's weights must not depend on the order the set iterates in, which changes with
    # each process's string hashing (a plain sum differed in the last bits and, rounded, in the 4th decimal).
    total = math.fsum(weights.weight(t) for t in terms)
    return math.fsum(weights.weight(t) for t in found) / total if total else 0.0


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
    if any(t not in evidence.terms for t in name_terms(statement)):
        score *= NAME_PENALTY
    if len(own) <= SHORT_TERMS and found != own:
        score *= SHORT_PENALTY
    if evidence.sentences and _negation_differs(statement, own, evidence):
        score *= NEGATION_PENALTY
    return min(max(score, 0.0), 1.0), coverage


_ANSWER_WORD = re.compile(r"^\s*(?:no|yes)\s*[.,;:!]\s*", re.IGNORECASE)


def _negation_differs(statement: str, own: set[str], evidence: Evidence) -> bool:
    """Whether the statement's negation (or its absence) is found in none of the evidence's closest sentences
    (the NEGATION_SENTENCES sharing most of its terms): "Slavery was not abolished" against "Slavery was
    abolished"; not "they aren't coming" against "The androids, the aliens ... They are n't coming"."""
    ranked = sorted(evidence.sentences, key=lambda row: -len(own & row[0]))[:NEGATION_SENTENCES]
    closest = [text for terms, text in ranked if own & terms]
    if not closest:
        return False
    negated = _negated_near(_ANSWER_WORD.sub("", statement), own)  # a reply's "No." negates nothing
    return all(_negated_near(text, own) != negated for text in closest)
