"""Whether a generated question is well formed: something a person would type, not keyword salad. Plain Python:
no Django import. The quality gate (goldenset.quality) discards what `ill_formed` objects to as `ill_formed`.

The old offline template writer showed what a broken question looks like: "What is known about National,
consolidated, catalogue (Primary source)?", "What is Look at you ! ''?", "What is the term `` undrafted free
agent ''?". Each rule below targets one such failure and is measured against questions people wrote (ClapNQ's
questions and Cranfield's queries, benchmarks/fluency_bench.py), which are often lower case, telegraphic and
without a question mark: none of that is held against a question. The rules, in the order they are tried:

- stray punctuation: quotes or brackets left empty or unbalanced, TeX quotes (``, ''), markup characters,
  punctuation spaced off its word (" ,", " !", "Ruth 's") or doubled (",,", "?!", "..."), a "!", "?" or ";" in the
  middle of the question;
- a keyword list: three or more comma-separated items, those inside of one to three content words (no function
  word), the last of at most four words and without "and" or "or" before it ("National, consolidated,
  catalogue"); an aside in brackets is left out first;
- a repeated word: a word twice in a row ("the the"; not "had had", "that that");
- no verb after a question word: "what", "which", "who", "when", "where", "why" or "how" followed by no
  auxiliary, no -ed, -ing or -s form and no common irregular past ("What National catalogue primary source?");
- a sentence pasted in: a capitalised connective after the first word ("What is Hence its author?"), or
  "What are a ..." (a singular pasted after a plural verb);
- mostly capitalised words: four or more, three quarters of the words after the first, and no lower-case word
  but function words (a heading or a list of names pasted in, "What is National Consolidated Catalogue
  Primary Source?"; "Who directed Star Wars Episode IV A New Hope?" passes); an all-capitals question is left
  alone (caps lock is a style, not a fragment);
- a fragment at the end: the question ends on an article, a conjunction or a possessive ("... of the?",
  "... and?"), or on a comma, colon or dash.

Honest limits: English rules (other languages pass the word rules; the punctuation rules apply to all), and a
surface check: "What is the Look at you?" is well formed to it, and a plural noun passes for a verb's -s form
("What refund window sale items?" passes; "What refund window for a sale item?" does not). Whether the question is answerable from its page
is the rest of the gate's business.
"""

from __future__ import annotations

import re
import unicodedata

from goldenset.lexical import STOPWORDS

__all__ = ["ill_formed"]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
# Auxiliaries, copulas and modals: a clause after a question word has one of these or a finite verb.
AUXILIARIES = _word_set(
    "is are was were be been being am do does did has have had can could will would shall should may might must"
    " need dare ought s re ve ll d m"
)
# Common irregular past forms (a regular past ends in -ed, which is caught by its suffix).
IRREGULAR_PAST = _word_set(
    """
    ate became began bent bit blew bore bought broke brought built burnt caught chose came cost crept cut dealt
    dove drew drank drove dug fed fell felt fled flew fought forgot forgave found froze gave got grew hid hit
    held hung hurt kept knew laid lay led leapt left lent let lit lost made meant met paid put quit ran rang read
    rode rose said sang sank sat saw sent set shed shone shook shot shut slept slid sold sought spent split spoke
    spread sprang stood stole struck stuck sung swam swept swore swung taught thought threw told took tore
    understood went wept woke won wore wound wrote
    """
)
# Words a question cannot end on: it was cut off ("What is the capital of the?").
DANGLING = _word_set("the a an and or nor but than because whose its their our my your")
# Words that open a sentence, not a name: capitalised inside a question, they mark a sentence pasted in
# ("What is Hence its author?").
CONNECTIVES = _word_set(
    "hence thus however therefore moreover furthermore nevertheless nonetheless meanwhile consequently"
    " accordingly additionally another instead otherwise indeed similarly finally"
)
# "What are a few / a couple of / a number of ...?": a plural after all.
QUANTITY_NOUNS = _word_set(
    "few couple lot lots number series variety range set group pair handful dozen total"
)
CONJUNCTIONS = ("and ", "or ", "nor ", "but ", "& ", "as well as ", "plus ", "etc")

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_TOKEN = re.compile(r"[\w'’-]+")
_EMPTY_PAIR = re.compile(r"\(\s*\)|\[\s*\]|\{\s*\}|\"\s*\"|“\s*”|‘\s*’|(?<!\w)'\s*'(?!\w)")
_TEX_QUOTES = re.compile(r"``|''")
_MARKUP = re.compile(r"[|{}\\<>*_~^`]")
_SPACED = re.compile(r"\s[,;:!?](?=\s*\S)|\s['’](?:s|t|re|ve|ll|d|m)\b|\s(?:n['’]t)\b")
_DOUBLED = re.compile(r"[,;:!?]\s*[,;:!?.]|\.\s*[,;:!?]|,\s*\.|\.\s*\.\s*\.|…")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_INNER_MARK = re.compile(r"[!?;](?![\"”’')\]])(?=.*[^\W_])")  # not inside a title: "Help!" in 1965
_SENTENCE_END = re.compile(r"[\s.?!]+$")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _stray_punctuation(question: str) -> str | None:
    if match := _TEX_QUOTES.search(question):
        return f'stray quotes "{match.group(0)}"'
    if match := _EMPTY_PAIR.search(question):
        return f'empty quotes or brackets "{match.group(0)}"'
    if match := _MARKUP.search(question):
        return f'stray character "{match.group(0)}"'
    for opening, closing in ("()", "[]", "“”"):
        if question.count(opening) != question.count(closing):
            return f'unbalanced "{opening}{closing}"'
    if question.count('"') % 2:
        return 'unbalanced "\\""'
    body = _SENTENCE_END.sub("", question)
    if match := _SPACED.search(body):
        return f'punctuation spaced off its word "{match.group(0).strip()}"'
    if match := _DOUBLED.search(question):
        return f'doubled punctuation "{match.group(0)}"'
    if match := _INNER_MARK.search(body):
        return f'"{match.group(0)}" in the middle of the question'
    return None


def _keyword_list(question: str) -> str | None:
    """Three or more comma-separated short items with no "and"/"or" before the last: a list of keywords."""
    unbracketed = _BRACKETED.sub(" ", _BRACKETED.sub(" ", question))  # "(a, b)" is an aside, not the list
    parts = [part.strip() for part in _SENTENCE_END.sub("", unbracketed).split(",")]
    if len(parts) < 3:
        return None
    interior = parts[1:-1]
    last = parts[-1].casefold()
    if last.startswith(CONJUNCTIONS) or any(p.casefold().startswith(CONJUNCTIONS) for p in interior):
        return None
    if len(_words(parts[-1])) <= 4 and all(_keywords(p) for p in interior):
        first = _words(parts[0])[-1:] if _words(parts[0]) else []
        items = [*first, *interior, " ".join(_words(parts[-1])[:3])]
        return "a keyword list, not a question: " + ", ".join(f'"{item}"' for item in items)
    return None


def _keywords(item: str) -> bool:
    """One to three words, none of them a function word: "consolidated", "Primary source"."""
    words = _words(item)
    return 1 <= len(words) <= 3 and not any(w.casefold() in STOPWORDS for w in words)


def _repeated_word(words: list[str]) -> str | None:
    folded = [w.casefold() for w in words]
    for before, after in zip(folded, folded[1:], strict=False):
        if before == after and before not in ("had", "that"):
            return f'the word "{before}" twice in a row'
    return None


def _verb_like(word: str) -> bool:
    word = word.casefold().replace("’", "'")
    if word in AUXILIARIES or word in IRREGULAR_PAST or "'" in word:  # "what's", "who're", "isn't"
        return True
    if len(word) >= 4 and word.endswith(("ed", "ing")):
        return True
    return len(word) >= 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _no_verb(words: list[str]) -> str | None:
    folded = [w.casefold() for w in words]
    if not folded or folded[0] not in WH_WORDS:
        return None
    rest = folded[1:]
    if any(_verb_like(w) for w in rest) or any(a == "to" for a in rest[:-1]):  # "how to make ..."
        return None
    return f'no verb after "{words[0]}"'


def _pasted_sentence(words: list[str]) -> str | None:
    """A capitalised connective inside the question, or "are" with "a": a sentence's words pasted after the
    question word ("What is Hence its author?", "What are a note on noise?")."""
    for word in words[1:]:
        if word[:1].isupper() and not word.isupper() and word.casefold() in CONNECTIVES:
            return f'"{word}" opens a sentence pasted into the question'
    folded = [w.casefold() for w in words[:4]]
    if (
        folded[:1] == ["what"]
        and folded[1:2] in (["are"], ["were"])
        and folded[2:3] in (["a"], ["an"])
        and folded[3:4] != []
        and folded[3] not in QUANTITY_NOUNS  # "What are a few ...?" is fine
    ):
        return f'"{words[1]} {words[2]}": the verb does not agree'
    return None


def _capitalised(words: list[str], question: str) -> str | None:
    letters = [c for c in question if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return None
    rest = words[1:]
    capitals = [w for w in rest if w[:1].isupper()]
    if any(w[:1].islower() and w.casefold() not in STOPWORDS for w in rest):
        return None  # a verb or a noun in lower case: a question about names ("Who directed Star Wars ...?")
    if len(capitals) >= 4 and len(capitals) >= 0.75 * len(rest):
        return f"mostly capitalised words ({len(capitals)} of {len(rest)}): a heading or a list of names"
    return None


def _dangling_end(question: str, words: list[str]) -> str | None:
    body = question.rstrip().rstrip("?.!").rstrip()
    if body.endswith((",", ":", ";", "-", "–", "—", "(", "/")):
        return f'it ends on "{body[-1]}"'
    last = _TOKEN.findall(body)[-1:]
    if last and last[0].casefold() in DANGLING and len(words) > 1:
        return f'it ends on "{last[0]}", a fragment'
    return None


def ill_formed(question: str) -> str | None:
    """What makes the question ill formed, in words for people, or None when it reads as a question.

    The rules of the module docstring, in order; the first that objects gives the message. Pure and
    deterministic: equal questions get equal answers.
    """
    question = unicodedata.normalize("NFKC", " ".join(question.split()))
    words = _words(question)
    return (
        _stray_punctuation(question)
        or _keyword_list(question)
        or _repeated_word(words)
        or _no_verb(words)
        or _pasted_sentence(words)
        or _capitalised(words, question)
        or _dangling_end(question, words)
    )
