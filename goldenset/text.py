"""Text helpers shared by ingest and the golden set. Plain Python: no Django import."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")


def normalize_question(question: str) -> str:
    """Case-folded, NFKC-normalised, whitespace-collapsed: the form duplicate questions are compared on."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", question).casefold()).strip()


def split_pages(text: str, max_chars: int) -> list[str]:
    """Split a long text into pages at paragraph boundaries.

    Paragraphs are packed greedily into pages of at most max_chars characters; a single paragraph longer than
    that is split at sentence ends, and a sentence longer than that at spaces, so no page exceeds the limit
    and no word is cut. An empty or blank text gives no pages.
    """
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text.replace("\r\n", "\n")) if p.strip()]
    pieces: list[str] = []
    for paragraph in paragraphs:
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
        else:
            pieces.extend(_split_long(paragraph, max_chars))
    pages: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= max_chars:
            current = candidate
        else:
            pages.append(current)
            current = piece
    if current:
        pages.append(current)
    return pages


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        parts = [sentence] if len(sentence) <= max_chars else _split_words(sentence, max_chars)
        for part in parts:
            candidate = f"{current} {part}" if current else part
            if len(candidate) <= max_chars:
                current = candidate
            else:
                out.append(current)
                current = part
    if current:
        out.append(current)
    return out


def _split_words(sentence: str, max_chars: int) -> list[str]:
    out: list[str] = []
    current = ""
    for word in sentence.split():
        while len(word) > max_chars:  # one "word" longer than a page (a URL, a hash): cut it
            if current:
                out.append(current)
                current = ""
            out.append(word[:max_chars])
            word = word[max_chars:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= max_chars:
            current = candidate
        else:
            out.append(current)
            current = word
    if current:
        out.append(current)
    return out


_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """The one tokenizer of evalsite (index, query, sample questions): Unicode words, case-folded.

    On ASCII text this equals the `[a-z0-9]+` on lowercased text that the reference BM25 figures use.
    NFKC before and after case folding, so composed and decomposed forms (and full-width or ligature
    compatibility forms) give the same tokens.
    """
    return _WORD.findall(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()))


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def first_sentence(text: str, max_chars: int = 300) -> str:
    sentence = _SENTENCE.split(text.strip(), maxsplit=1)[0].strip()
    if len(sentence) > max_chars:
        sentence = sentence[:max_chars].rsplit(" ", 1)[0] + "…"
    return sentence


# A NUL character, literal or as a JSON escape (an odd run of backslashes before "u0000" is an escape).
_NUL = re.compile(r"\x00|(?<!\\)(?:\\\\)*\\u0000")
_LITERAL_NUL = re.compile("\x00")


def find_nul(text: str, *, json_escapes: bool = True) -> tuple[int, int] | None:
    """(line, column), 1-based, of the first NUL character in text or in its JSON escapes, else None.

    PostgreSQL cannot store NUL in a text or JSON column, so every reader of outside text rejects it with
    its position instead of letting the database fail later.
    """
    match = (_NUL if json_escapes else _LITERAL_NUL).search(text)
    if match is None:
        return None
    at = match.end() - (1 if match.group().endswith("\x00") else 6)
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
