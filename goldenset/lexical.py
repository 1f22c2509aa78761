"""Lexical helpers: content terms, a small stemmer, coverage and overlap. Plain Python: no Django import.

Used by the golden-set quality gate (goldenset.quality) and meant for any other cheap, deterministic,
model-free text check (a heuristic answer judge, for instance). Everything here starts from
goldenset.text.tokenize, evalsite's one tokenizer (Unicode words, case-folded, NFKC), so the terms agree with
the search index and the golden-set tools.

What a "content term" is: a token that is not an English function word (STOPWORDS) and not a lone letter,
reduced by `stem` so that inflections of one word meet ("refunds", "refunded", "refunding" -> "refund").
Numbers are content terms and are kept as written ("30", "2024"; "1,200" is the two terms "1" and "200").

Honest limits:

- English only. Stopwords and suffix rules are English; other Latin-script languages get no stopword
  removal and the occasional odd suffix cut (still consistent, so matching works). Scripts written without
  spaces are handled for Chinese and Japanese only: a run of Han or kana characters becomes its overlapping
  character bigrams (the usual search-engine fallback); Thai, Lao, Khmer and Burmese runs stay one term.
- No synonyms, no spelling-out of numbers ("14 days" and "two weeks" or "fourteen days" share no term),
  no irregular forms ("built"/"build", "took"/"take").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from goldenset.text import tokenize
from goldenset.vocabulary.stopwords import CONTENT_STOPWORDS

__all__ = [
    "STOPWORDS",
    "content_terms",
    "coverage",
    "jaccard",
    "stem",
    "terms_from_tokens",
    "word_count",
]


# Defined in goldenset.vocabulary.stopwords (with the rationale for its words); re-exported here, where
# content terms are made.
STOPWORDS = CONTENT_STOPWORDS


# Han ideographs (with extensions and compatibility forms), hiragana and katakana: written without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_SPLIT = re.compile(f"[{_CJK}]+|[^{_CJK}]+")

_VOWELS = frozenset("aeiouy")


def _has_vowel(text: str) -> bool:
    return any(char in _VOWELS for char in text)


def _undouble(word: str) -> str:
    """Drop one of a final doubled consonant left by cutting a suffix ("shipp" -> "ship"), except l, s, z
    ("fall", "miss", "buzz")."""
    if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in _VOWELS and word[-1] not in "lsz":
        return word[:-1]
    return word


def stem(token: str) -> str:
    """A small deterministic suffix stripper: makes inflections of the same English word collide.

    Rules, applied once each and in this order, each only when enough of a word (with a vowel) remains:

    1. plural and third person: -ies -> -y ("policies" -> "policy"), -es after ss/sh/ch/x/z
       ("boxes" -> "box", "classes" -> "class"), else a final -s unless -ss/-us/-is ("refunds" -> "refund", "status" stays);
    2. -eed -> -ee ("agreed" -> "agree"; "need", "feed" stay), -ied -> -y ("applied" -> "apply"), -ed and
       -ing, undoubling a final consonant ("shipping", "shipped" -> "ship"; "returned" -> "return";
       "bring", "thing" stay);
    3. -able/-ible ("refundable" -> "refund", "accessible" -> "access");
    4. -ly ("monthly" -> "month"; "apply", "early" stay);
    5. a final silent -e, but not -ee ("take", "taking" -> "tak"; "agree" stays).

    It is not Porter: no -ment, -ness, -ation, -er/-est, no irregular forms; stems need not be words
    ("tak", "franc"). Only purely alphabetic tokens are stemmed: numbers and codes ("1990s", "mp3") and
    tokens of two letters or fewer are returned unchanged. The input is expected to be a token of
    goldenset.text.tokenize (case-folded); the function is pure, so equal input gives equal output.
    """
    if len(token) <= 2 or not token.isalpha():
        return token
    word = token
    # 1. plurals, third person singular
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and word[:-2].endswith(("sh", "ch", "x", "z", "ss")) and len(word) > 4:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) >= 4:
        word = word[:-1]
    # 2. past tense and participles
    if word.endswith("eed"):
        if _has_vowel(word[:-3]):
            word = word[:-1]
    elif word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ed") and len(word) >= 4 and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    elif word.endswith("ing") and len(word) >= 5 and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    # 3. -able / -ible
    if word.endswith(("able", "ible")) and len(word) >= 8:
        word = _undouble(word[:-4])
    # 4. adverbs in -ly
    if word.endswith("ly") and len(word) >= 6:
        word = word[:-2]
    # 5. silent e
    if word.endswith("e") and not word.endswith("ee") and len(word) >= 3 and _has_vowel(word[:-1]):
        word = word[:-1]
    return word


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def terms_from_tokens(tokens: Iterable[str]) -> list[str]:
    """content_terms for text already split by goldenset.text.tokenize."""
    terms: list[str] = []
    for token in tokens:
        if not _CJK_RUN.search(token):
            if token not in STOPWORDS and (len(token) > 1 or token.isdigit()):
                terms.append(stem(token))
            continue
        for piece in _CJK_SPLIT.findall(token):  # a token may mix scripts: "iphone手机"
            if _CJK_RUN.fullmatch(piece):
                terms.extend(_cjk_bigrams(piece))
            else:
                terms.extend(terms_from_tokens([piece]))
    return terms


def content_terms(text: str) -> list[str]:
    """The stemmed content terms of text, in order, duplicates kept.

    Tokens by goldenset.text.tokenize; STOPWORDS and one-letter tokens dropped (one-digit numbers kept);
    the rest through `stem`. Han and kana runs become character bigrams (a lone character stays itself).
    """
    return terms_from_tokens(tokenize(text))


def word_count(text: str) -> int:
    """Number of words in text: tokenize tokens, where each Han or kana character counts as one word
    (those scripts have no spaces, so a whole sentence would otherwise be one token)."""
    count = 0
    for token in tokenize(text):
        cjk = sum(len(run) for run in _CJK_RUN.findall(token))
        count += cjk + (1 if cjk < len(token) else 0)
    return count


def coverage(part_terms: Iterable[str], whole_terms: Iterable[str]) -> float:
    """Fraction of the distinct terms of part that occur in whole, 0..1.

    An empty part gives 0.0 (there is nothing to cover; callers decide what an empty part means and should
    test for it before asking).
    """
    part = set(part_terms)
    if not part:
        return 0.0
    whole = whole_terms if isinstance(whole_terms, (set, frozenset)) else set(whole_terms)
    return len(part & whole) / len(part)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| on the distinct terms of a and b, 0..1; 0.0 when both are empty."""
    set_a, set_b = set(a), set(b)
    union = set_a | set_b
    return len(set_a & set_b) / len(union) if union else 0.0
