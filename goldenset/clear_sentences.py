"""Questions from clear sentences: the offline template writer's patterns. Plain Python: no Django import.

The offline writer (goldenset.generation.TemplateQuestionWriter) is a fallback for when no chat model is
configured. It writes a question only where a page offers a clear declarative sentence whose subject and verb
say what to ask, and the sentence itself is the reference answer:

=====================================================  ==========================================
sentence                                               question
=====================================================  ==========================================
The Eiffel Tower is a wrought-iron lattice tower ...   What is the Eiffel Tower?
Kaloven was founded in 1850 by a family ...            When was Kaloven founded?
The museum is located in the old harbour ...           Where is the museum located?
The tower was designed by Gustave Eiffel's company.    Who was the tower designed by?
The Marshall Plan was funded by the United States.     Who was the Marshall Plan funded by?
The drag coefficient is determined by the wing ...     What is the drag coefficient determined by?
A sextant is used to measure the angle between ...     What is a sextant used for?
The atmosphere consists of nitrogen, oxygen ...        What does the atmosphere consist of?
The heat transfer rate is proportional to the ...      What is the heat transfer rate proportional to?
The boundary layer contains a thin viscous region.     What does the boundary layer contain?
=====================================================  ==========================================

A subject must be a plain noun phrase of one to ten words that names its topic: not a pronoun or a
demonstrative ("it", "this method"), not a clause ("the review found that the evidence"), not about the page
itself ("the present paper", "the author"), with at least one content word that is not generic ("the results",
"the method" say nothing on their own). Every question is then read by goldenset.fluency and must be well
formed, with at least MIN_QUESTION_WORDS words (the gate's default minimum: a shorter one would be discarded).

Sentences are tried most informative first (most distinct content terms; the earliest on a tie), and the first
that gives a question wins; a page with none gives None, which the writer reports as a page that offered no
clear sentence (not a gate discard). Deterministic: the same page text always gives the same question.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from goldenset import lexical
from goldenset.fluency import AUXILIARIES, ill_formed
from goldenset.vocabulary.sentences import ABBREVIATIONS

__all__ = ["MIN_QUESTION_WORDS", "ClearQuestion", "clear_question", "page_sentences", "question_from"]

MIN_QUESTION_WORDS = 4  # goldenset.quality.GateLimits.question_min_words by default
SENTENCE_WORDS = (5, 45)  # shorter is a heading; longer is a run-on the reader cannot take as one fact
SUBJECT_WORDS = 10

# A sentence ends at . ! ? followed by a capital or a digit (as in prose), at a stop spaced off its word
# (" . ", tokenized text such as Cranfield's abstracts), or after a word of three or more letters followed by
# a lower-case word (lower-cased text); not after "e.g." or "U.S.".
_NOT_AFTER = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in ABBREVIATIONS) + r"(?<!\b[A-Z]\.)"


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SENTENCE_END = re.compile(
    rf"(?<=[.!?]){_NOT_AFTER}\s+(?=[\"'(\[]?[A-Z0-9])|\s+[.!?]+(?:\s+|$)|(?<=[a-z]{{3}}[.!?])\s+(?=[a-z])"
)

_VAGUE = _word_set(
    """
    it its this that these those such there here they them their he she his her we our us i you your one each
    both all some many most several other others another which what who whom whose any none either neither
    former latter same
    """
)
_CLAUSE = _word_set(
    "that which who whom whose where when if because although though while as since whether than not"
)
# Words that tie a subject to the page or its writing, not to the topic ("the present paper").
_PAGE_WORDS = _word_set(
    "paper papers report article study author authors present above following below here section chapter"
    " figure table equation appendix writer we next previous latter former similar"
)
# Heads that say nothing on their own: a subject needs a content word besides these.
_GENERIC = frozenset(
    lexical.stem(word)
    for word in _word_set(
        """
    result results method methods analysis approach data problem problems case cases value values effect
    effects example examples way ways type types kind part parts number amount form thing things fact facts
    purpose aim use work question answer first second third main new other following various solution
    solutions parameter parameters calculation calculations investigation feature features original idea
    ideas concept concepts reason reasons role roles term terms
    """
    )
)
_ADVERBS = _word_set("however thus also therefore hence then still too moreover furthermore")
_DEGREE = _word_set("more most less least very quite rather so too")
_NOUN_SUFFIXES = ("ing", "tion", "sion", "ment", "ness", "ity", "age", "ance", "ence", "ism")
_PERSON_NOUNS = _word_set(
    """
    actor actress singer songwriter rapper musician composer player footballer cricketer athlete politician
    president king queen emperor prince princess writer author novelist poet painter artist scientist
    physicist chemist biologist mathematician philosopher engineer inventor architect director producer
    character businessman businesswoman entrepreneur lawyer judge general soldier explorer journalist
    """
)
_BE = r"(?P<be>is|are|was|were)"
_ADVERB = r"(?:\w+ly )?"


@dataclass(frozen=True)
class ClearQuestion:
    question: str
    sentence: str  # the page's sentence, the reference answer
    pattern: str  # which pattern formed it (tests and the benchmark count them)


def page_sentences(text: str) -> list[str]:
    """The page's sentences, whitespace collapsed, in page order."""
    flat = " ".join(text.split())
    return [s.strip() for s in _SENTENCE_END.split(flat) if s and s.strip()]


# --- the subject ---------------------------------------------------------------------------------------------


# Asides a subject can shed without changing what it names: "The Victoria Cross ( VC )", "The Lithobiomorpha ,
# also known as stone centipedes ,", and an opening phrase before a comma: "In economics , tax incidence".
_ASIDE = re.compile(r"\s*\([^()]{1,60}\)")
_APPOSITIVE = re.compile(
    r"\s*,\s*(?:(?:also|usually|commonly|often|sometimes|formerly)\s+)?(?:known as|called|abbreviated(?: as)?)"
    r"\s[^,]{1,60},\s*"
)
_OPENER = re.compile(
    r"^(?:(?:in|on|at|during|after|before|for|under|since|from|today|currently|originally|additionally|also"
    r"|however|thus)\b[^,]{0,40}?)\s*,\s*",
    re.IGNORECASE,
)


def _plain(raw: str) -> str:
    """The subject without its asides (brackets, "also known as ...", an opening phrase before a comma)."""
    subject = _APPOSITIVE.sub(" ", _ASIDE.sub("", raw)).strip()
    return _OPENER.sub("", subject, count=1).strip()


def _subject(raw: str, page_text: str) -> str | None:
    """The subject as the question spells it, or None when it is not a plain, specific noun phrase."""
    subject = _plain(raw)
    words = subject.split()
    if not 1 <= len(words) <= SUBJECT_WORDS or _refused(subject, [w.casefold() for w in words]):
        return None
    first = words[0]
    title = first in ("A", "An") and words[1:2] and words[1][:1].isupper()  # "A Tale of Two Cities"
    capitalised = first[:1].isupper() and (len(first) == 1 or not first.isupper())
    if capitalised and not title and _common_word(words, page_text):
        words[0] = first.casefold()
    return " ".join(words) if _specific(words) else None


def _refused(subject: str, folded: list[str]) -> bool:
    """Whether the words cannot be a question's subject: punctuation inside, a vague or function word first,
    a clause, the page itself, a cut-off or inverted sentence."""
    first, second = folded[0], folded[1] if len(folded) > 1 else ""
    return bool(
        re.search(r"[,;:()\[\]\"“”/]|\s[-–—]\s|--", subject)
        or re.search(r"'(?!s\b)", subject.replace("’", "'"))  # quotes, not a possessive
        or first in _VAGUE
        or (first in lexical.STOPWORDS and first not in ("the", "a", "an"))
        or first[:1].isdigit()  # "1 the trouble", "509 certificates": a list number or a cut name
        or (len(first) >= 6 and first.endswith("ly"))  # "Especially famous is ...": inverted
        or (first.endswith("ing") and second in ("the", "a", "an"))  # "underlying the similitude is"
        or (first.endswith("ed") and (second in _DEGREE or second.endswith("ly")))  # "treated more fully is"
        or (len(folded) > 1 and folded[-1] in lexical.STOPWORDS)  # "enthalpies sufficient to" (cause ...)
        or set(folded) & (_VAGUE | _CLAUSE | _PAGE_WORDS | _ADVERBS | AUXILIARIES)
        or _reduced_clause(folded)
    )


def _specific(words: list[str]) -> bool:
    """Whether the subject names its topic: a name ("the North Pole", "Banksy"), a generic definition's "a"
    or "an" with a specific noun ("a morpheme"), or two specific content words ("kinetic theory"); "the
    bridge" or "the results" only make sense beside their page."""
    specific = [t for t in lexical.content_terms(" ".join(words)) if t not in _GENERIC]
    if not specific:
        return False
    named = any(w[:1].isupper() for w in words if w.casefold() not in lexical.STOPWORDS)
    return named or words[0] in ("a", "an") or len(specific) >= 2


def _reduced_clause(folded: list[str]) -> bool:
    """A participle after the head noun ("the example chosen", "the losses assumed in the analysis"): a clause
    cut short, not a name. An -ed word inside the noun phrase ("the integrated lift") is an adjective."""
    for index, word in enumerate(folded[1:], start=1):
        participle = (len(word) > 4 and word.endswith("ed")) or word in _IRREGULAR_PARTICIPLE_SET
        after = folded[index + 1] if index + 1 < len(folded) else None
        if participle and (after is None or after in lexical.STOPWORDS):
            return True
    return False


def _common_word(words: list[str], page_text: str) -> bool:
    """Whether a capitalised first word is an ordinary word to lower-case inside the question: an article, a
    word followed by a lower-case one ("Facilitated diffusion"), a word written in lower case elsewhere on the
    page, or one with a common noun's suffix ("Mainstreaming"). A name keeps its capital ("Fried Green
    Tomatoes", "Banksy")."""
    lower = words[0].casefold()
    if lower in lexical.STOPWORDS or lower.endswith(_NOUN_SUFFIXES):
        return True
    if len(words) > 1 and words[1][:1].islower() and words[1].casefold() not in lexical.STOPWORDS:
        return True
    return re.search(rf"(?<![\w.] )\b{re.escape(lower)}\b", page_text) is not None


# --- the patterns --------------------------------------------------------------------------------------------

_IRREGULAR_PARTICIPLES = (
    "born built made held won begun written given taken known shown drawn sung found founded led sold bought"
    " brought chosen driven grown thrown worn sent spent kept lost paid put set told understood"
)
_IRREGULAR_PARTICIPLE_SET = frozenset(_IRREGULAR_PARTICIPLES.split())
_PARTICIPLE = rf"(?P<participle>\w+ed|{'|'.join(_IRREGULAR_PARTICIPLES.split())})"
_PLACE_PARTICIPLES = "located situated headquartered buried"
_EVENT_PARTICIPLES = "born founded built held established based"
# adjective -> the prepositions it takes in a question ("proportional to", "known as").
_ADJECTIVES: dict[str, str] = {
    "proportional": "to",
    "equal": "to",
    "due": "to",
    "similar": "to",
    "related": "to",
    "equivalent": "to",
    "comparable": "to|with",
    "sensitive": "to",
    "subject": "to",
    "close": "to",
    "analogous": "to",
    "perpendicular": "to",
    "parallel": "to",
    "limited": "to",
    "composed": "of",
    "independent": "of",
    "dependent": "on",
    "based": "on",
    "responsible": "for",
    "known": "as|for",
}
# verb (base form) -> the preposition it takes ("consist of") or "" for a direct object.
_VERBS: dict[str, str] = {
    "consist": "of",
    "depend": "on",
    "rely": "on",
    "lead": "to",
    "belong": "to",
    "refer": "to",
    "correspond": "to",
    "contribute": "to",
    "contain": "",
    "include": "",
    "comprise": "",
    "produce": "",
    "cause": "",
    "require": "",
    "provide": "",
    "affect": "",
    "involve": "",
    "describe": "",
    "represent": "",
}
_IRREGULAR_PAST = {"lead": "led"}


def _forms(base: str) -> dict[str, tuple[str, str]]:
    """Surface form -> (base, auxiliary): "consists" -> ("consist", "does")."""
    if base.endswith("y") and base[-2] not in "aeiou":
        third, past = base[:-1] + "ies", base[:-1] + "ied"
    else:
        third = base + "es" if base.endswith(("s", "sh", "ch", "x")) else base + "s"
        past = _IRREGULAR_PAST.get(base, base + "d" if base.endswith("e") else base + "ed")
    return {base: (base, "do"), third: (base, "does"), past: (base, "did")}


_VERB_FORMS: dict[str, tuple[str, str]] = {
    form: value for base in _VERBS for form, value in _forms(base).items()
}

Builder = Callable[[re.Match[str], str], str | None]


def _definition(match: re.Match[str], subject: str) -> str | None:
    rest = match["rest"]
    if len(lexical.content_terms(rest)) < 2:
        return None
    head = {w.casefold() for w in rest.split()[:4]}
    wh = "Who" if head & _PERSON_NOUNS and subject[:1].isupper() else "What"
    return f"{wh} {match['be'].casefold()} {subject}?"


def _when(match: re.Match[str], subject: str) -> str:
    return f"When {match['be'].casefold()} {subject} {match['participle']}?"


def _where(match: re.Match[str], subject: str) -> str:
    return f"Where {match['be'].casefold()} {subject} {match['participle'] or match['event']}?"


def _by(match: re.Match[str], subject: str) -> str | None:
    agent = match["agent"].split()
    if not agent:
        return None
    named = agent[0][:1].isupper() or (agent[0].casefold() == "the" and agent[1:2] and agent[1][:1].isupper())
    wh = "Who" if named else "What"
    return f"{wh} {match['be'].casefold()} {subject} {match['participle']} by?"


def _used(match: re.Match[str], subject: str) -> str:
    purpose = "as" if match["prep"] == "as" else "for"
    return f"What {match['be'].casefold()} {subject} used {purpose}?"


def _adjective(match: re.Match[str], subject: str) -> str | None:
    if match["prep"] not in _ADJECTIVES[match["adjective"]].split("|"):
        return None
    return f"What {match['be'].casefold()} {subject} {match['adjective']} {match['prep']}?"


def _verb(match: re.Match[str], subject: str) -> str | None:
    base, auxiliary = _VERB_FORMS[match["verb"].casefold()]
    preposition = _VERBS[base]
    rest = match["rest"].split()
    if preposition:
        if rest[:1] != [preposition] or len(rest) < 2:
            return None
        return f"What {auxiliary} {subject} {base} {preposition}?"
    if not rest or rest[0].casefold() in lexical.STOPWORDS - {
        "the",
        "a",
        "an",
        "both",
        "all",
        "many",
        "several",
    }:
        return None
    return f"What {auxiliary} {subject} {base}?"


_YEAR = r"(?:[A-Z][a-z]+ )?(?:\d{1,2},? )?(?P<year>1[0-9]{3}|20[0-9]{2})\b"
_PATTERNS: tuple[tuple[str, re.Pattern[str], Builder], ...] = tuple(
    (name, re.compile(pattern, re.DOTALL), builder)
    for name, pattern, builder in (
        ("when", rf"^(?P<subject>.+?) {_BE} {_PARTICIPLE} (?:in|on) {_YEAR}.*$", _when),
        (
            "where",
            rf"^(?P<subject>.+?) {_BE} (?:(?P<participle>{'|'.join(_PLACE_PARTICIPLES.split())}) "
            rf"(?:in|at|on|near) \w|(?P<event>{'|'.join(_EVENT_PARTICIPLES.split())}) in (?:the )?[A-Z]).*$",
            _where,
        ),
        ("used", rf"^(?P<subject>.+?) {_BE} {_ADVERB}used (?P<prep>for|to|as) \w.*$", _used),
        (
            "adjective",
            rf"^(?P<subject>.+?) {_BE} {_ADVERB}(?P<adjective>{'|'.join(_ADJECTIVES)}) "
            r"(?P<prep>to|of|on|for|as|with) \w.*$",
            _adjective,
        ),
        ("by", rf"^(?P<subject>.+?) {_BE} {_ADVERB}{_PARTICIPLE} {_ADVERB}by (?P<agent>\w.*)$", _by),
        (
            "verb",
            rf"^(?P<subject>.+?) (?P<verb>{'|'.join(sorted(_VERB_FORMS, key=len, reverse=True))}) (?P<rest>\w.*)$",
            _verb,
        ),
        ("definition", rf"^(?P<subject>.+?) {_BE} (?:a|an|the|one of the) (?P<rest>\w.*)$", _definition),
    )
)


def question_from(sentence: str, page_text: str = "") -> ClearQuestion | None:
    """The question a clear sentence gives, or None. page_text tells a name from a capitalised common word."""
    body = sentence.strip().rstrip(".!?").strip()
    if "?" in body:
        return None
    for name, pattern, builder in _PATTERNS:
        match = pattern.match(body)
        if match is None:
            continue
        subject = _subject(match["subject"], page_text or sentence)
        if subject is None:
            continue
        question = builder(match, subject)
        if question is None:
            continue
        if lexical.word_count(question) >= MIN_QUESTION_WORDS and ill_formed(question) is None:
            return ClearQuestion(question=question, sentence=sentence.strip(), pattern=name)
    return None


def clear_question(text: str) -> ClearQuestion | None:
    """The question of the page's most informative clear sentence, or None when no sentence gives one."""
    ranked: list[tuple[int, int, str]] = []
    for position, sentence in enumerate(page_sentences(text)):
        if not SENTENCE_WORDS[0] <= len(sentence.split()) <= SENTENCE_WORDS[1]:
            continue
        ranked.append((-len(set(lexical.content_terms(sentence))), position, sentence))
    for _, _, sentence in sorted(ranked):
        found = question_from(sentence, text)
        if found is not None:
            return found
    return None
