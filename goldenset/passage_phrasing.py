"""Passage-dependent phrasing: a generated question that only makes sense next to its page ("according to
the passage", "in this section", "the text mentions", "described above", "which of the following"). Plain
Python: no Django import. The quality gate (goldenset.quality) rejects such questions: a golden question is
asked of the whole collection, so it must stand alone.

Phrasing patterns only: a question that leans on a bare pronoun ("What is it used for?") or on an unnamed
"the company" is not caught.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["passage_dependent"]


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
