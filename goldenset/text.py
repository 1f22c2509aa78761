"""Text helpers shared by ingest and the golden set. Plain Python: no Django import."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sized

from goldenset.vocabulary.chunks import cut_at_word
from goldenset.vocabulary.sentences import FIRST_SENTENCE_END, PAGE_SENTENCE_END

_SPACE = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")


def normalize_question(question: str) -> str:
    """Case-folded, NFKC-normalised, whitespace-collapsed: the form duplicate questions are compared on."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", question).casefold()).strip()


def question_hash(question: str) -> str:
    """sha256 (hex) of the normalised question: what the database finds duplicates on. A fixed 64 characters,
    so its unique index holds questions of any length (PostgreSQL refuses btree rows above ~2.7 kB)."""
    # surrogatepass: never an encoding error here, whatever a caller passes (readers refuse lone surrogates).
    return hashlib.sha256(normalize_question(question).encode("utf-8", "surrogatepass")).hexdigest()


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


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    out: list[str] = []
    current = ""
    for sentence in PAGE_SENTENCE_END.split(paragraph):
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


def first_sentence(text: str, max_chars: int = 300) -> str:
    sentence = FIRST_SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()
    return cut_at_word(sentence, max_chars, "…")


# A NUL character, literal or as a JSON escape (an odd run of backslashes before "u0000" is an escape).
# The lengths of the columns that hold them (goldenset.models), enforced by every reader of outside input.
MAX_COLLECTION_ID_CHARS = 200
MAX_ID_CHARS = 300  # a document's external id, a golden entry's key
MAX_TAG_CHARS = 100
# The sizes of a golden entry, the same for every writer and database (none of them is indexed).
MAX_QUESTION_CHARS = 4000
MAX_REFERENCE_ANSWER_CHARS = 20_000
MAX_TAGS = 50
MAX_EXPECTED_DOCUMENTS = 1000


def find_control(text: str) -> int | None:
    """Index of the first control character (Unicode category Cc: C0, DEL, C1) in text, else None."""
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cc":
            return index
    return None


def _control_problem(value: str) -> str | None:
    index = find_control(value)
    if index is None:
        return None
    return f"may not contain control characters (U+{ord(value[index]):04X} at position {index + 1})"


def _length_problem(value: str, limit: int) -> str | None:
    return f"may have at most {limit} characters (it has {len(value)})" if len(value) > limit else None


def _count_problem(values: Sized, limit: int, what: str) -> str | None:
    return f"may have at most {limit} {what} (it has {len(values)})" if len(values) > limit else None


def collection_id_problem(value: str) -> str | None:
    """Why value cannot be a collection id, or None. The id is one URL path segment
    (collections/{collection_id}/...): with a "/" it could never be reached, and clients normalise "." and
    ".." away."""
    if problem := _length_problem(value, MAX_COLLECTION_ID_CHARS):
        return problem
    if "/" in value:
        return 'may not contain "/"'
    if value in (".", ".."):
        return f'may not be "{value}"'
    return _control_problem(value)


def document_id_problem(value: str) -> str | None:
    """Why value cannot be a document id, or None. The id ends a URL path (.../documents/{document_id}) and
    may hold "/", but clients normalise "." and ".." segments away and a leading or trailing "/" is lost."""
    if problem := _length_problem(value, MAX_ID_CHARS):
        return problem
    if value.startswith("/") or value.endswith("/"):
        return 'may not start or end with "/"'
    if any(segment in (".", "..") for segment in value.split("/")):
        return 'may not have "." or ".." as a path segment'
    return _control_problem(value)


def key_problem(value: str) -> str | None:
    """Why value cannot be a golden entry's key (its client id), or None."""
    return _length_problem(value, MAX_ID_CHARS) or _control_problem(value)


def tag_problem(value: str) -> str | None:
    """Why value cannot be a tag, or None. "|" separates tags in the index the tag filter searches."""
    if problem := _length_problem(value, MAX_TAG_CHARS):
        return problem
    return 'may not contain "|"' if "|" in value else None


def question_problem(value: str) -> str | None:
    """Why value cannot be a golden question (beyond being blank), or None."""
    return _length_problem(value, MAX_QUESTION_CHARS)


def reference_answer_problem(value: str) -> str | None:
    return _length_problem(value, MAX_REFERENCE_ANSWER_CHARS)


def tags_problem(values: Sized) -> str | None:
    """Why these cannot be an entry's tags, or None (each tag has its own rule: tag_problem)."""
    return _count_problem(values, MAX_TAGS, "tags")


def expected_documents_problem(values: Sized) -> str | None:
    return _count_problem(values, MAX_EXPECTED_DOCUMENTS, "documents")


MAX_GRADE = 1000


DEFAULT_GRADE = 1  # an expected document's grade unless said otherwise


def canonical_grades(grades: dict, expected: Iterable[str]) -> dict:
    """An entry's grades in their one stored form: an expected document's default grade (1) left out, whoever
    wrote it (a TREC import, a CSV `p1=1`, a BEIR qrels, the API), so that the same judgments are the same row
    and re-importing an unmodified export changes nothing. Whole-number grades only; anything else stays for
    grades_problem to name."""
    wanted = set(expected)
    whole = {k: _whole(v) for k, v in grades.items()}
    return {
        k: v
        for k, v in whole.items()
        if not (k in wanted and isinstance(v, int) and not isinstance(v, bool) and v == DEFAULT_GRADE)
    }


def _whole(grade: object) -> object:
    """A float whose value is whole (2.0) as the int it is; anything else as it is."""
    if isinstance(grade, float) and grade.is_integer():
        return int(grade)
    return grade


def stray_grades(grades: dict, expected: Iterable[str]) -> set[str]:
    """The graded documents an entry cannot hold: not expected, with a grade other than 0."""
    wanted = set(expected)
    return {k for k, v in grades.items() if k not in wanted and v != 0}


def grades_problem(grades: object, expected: Iterable[str]) -> str | None:
    """Why these cannot be an entry's graded relevance, or None: whole numbers 0 to MAX_GRADE (2.0 is 2), each of a
    document the entry expects, or 0 for a document it does not expect (judged not relevant: a judged document,
    no longer an unjudged one). An edit that drops an expected document must drop its grade too, or make it 0;
    the writer is told so (every writer: the API, the dashboard, the admin, the importers), never left to guess."""
    if not isinstance(grades, dict):
        return 'expected an object of document id -> grade, e.g. {"refunds": 2}'
    whole = {k: _whole(v) for k, v in grades.items()}
    bad = [
        str(k)
        for k, v in whole.items()
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_GRADE
    ]
    if bad:
        return f"grades are whole numbers from 0 to {MAX_GRADE}; check: {', '.join(bad)}"
    unknown = sorted(stray_grades(whole, expected))
    if unknown:
        return (
            f"graded documents not in expected_document_ids: {', '.join(unknown)} "
            "(a document that is not expected takes only grade 0, judged not relevant)"
        )
    return None


# What people join ids with when they do not know a list's separator (`|` in a CSV cell, a list in JSON).
_ID_JOINERS = (",", ";", " ", "\t", "/")


def id_parts(value: str) -> list[tuple[str, list[str]]]:
    """The ways one unknown id may be several joined by the wrong separator: (separator, parts) for each joiner
    it holds that splits it into two or more non-empty ids."""
    out = []
    for joiner in _ID_JOINERS:
        parts = [part.strip() for part in value.split(joiner)]
        if len(parts) > 1 and all(parts):
            out.append((joiner, parts))
    return out


def joined_ids_hint(value: str, known: Iterable[str]) -> str | None:
    """Why an unknown id may be several ids joined by the wrong separator, when splitting it on one gives only
    known ids: a hint naming the separator and the list's own; else None."""
    have = set(known)
    for joiner, parts in id_parts(value):
        if all(part in have for part in parts):
            shown = "a tab" if joiner == "\t" else "a space" if joiner == " " else f"{joiner!r}"
            return (
                f"{value!r} reads as the documents {', '.join(parts)} joined by {shown}: give each id on its own "
                "(a CSV or TSV cell separates ids with '|', JSON lists them)"
            )
    return None
