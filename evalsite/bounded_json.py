"""Outside text read within bounds, before anything uses it: JSON parsed with its depth, its numbers and its
constants bounded, and NUL characters and lone surrogates (which PostgreSQL cannot store) found with their line
and column. Plain Python: no Django import. Every reader of a tenant's input (the API's parsers, the golden-set
file formats, label and run files) goes through here."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable
from typing import Any

_NUL = re.compile(r"\x00|(?<!\\)(?:\\\\)*\\u0000")
_LITERAL_NUL = re.compile("\x00")


NUL_REFUSED = "NUL characters are not allowed."


def nul_field(fields: Iterable[tuple[str, object]]) -> str | None:
    """The name of the first field (a query parameter, a form field, a path) whose name or text holds a NUL
    character, else None. The one rule for the text a request carries: PostgreSQL cannot store NUL, and SQLite
    would, so evalsite refuses it on both (docs/operations.md, Input limits)."""
    for name, value in fields:
        if "\x00" in name or (isinstance(value, str) and "\x00" in value):
            return name.replace("\x00", "\\x00")
    return None


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


# A UTF-16 surrogate that is not half of a pair cannot be encoded as UTF-8, so a row holding one is stored
# (SQLite) and then fails every read. Only a str can hold one literally (strict UTF-8 decoding refuses the
# bytes); JSON can spell one as an escape. A high escape directly followed by a low one is one character
# (json.loads joins them), so the pair is matched first and skipped.
_SURROGATE = re.compile(
    r"[\ud800-\udfff]"
    r"|(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)
_LITERAL_SURROGATE = re.compile("[\ud800-\udfff]")


def find_lone_surrogate(text: str, *, json_escapes: bool = True) -> tuple[int, int] | None:
    """(line, column), 1-based, of the first lone surrogate in text or in its JSON escapes, else None.

    The companion of find_nul: every reader of outside text refuses both, at their position.
    """
    for match in (_SURROGATE if json_escapes else _LITERAL_SURROGATE).finditer(text):
        escape = match.group(1) if json_escapes else None
        if escape is not None and len(escape) == 12:  # a high and a low escape: one valid character
            continue
        at = match.start(1) if escape is not None else match.start()
        return _position(text, at)
    return None


def _position(text: str, at: int) -> tuple[int, int]:
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


class JsonValueError(ValueError):
    """A JSON text that is well formed but holds a value evalsite cannot store or render."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class _Refused(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not valid JSON")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _Refused(f"the number {token} is out of range")
    return value


def _bounded_int(token: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(token.lstrip("-")) > limit:
        raise _Refused(f"an integer of {len(token.lstrip('-'))} digits is too long")
    return int(token)


# A JSON string, or a token the decoder hands to parse_constant / parse_float / parse_int.
_JSON_VALUE_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|-?(?:NaN|Infinity)|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?', re.DOTALL
)


# Arrays and objects inside one another, at most. Far past any real body (a search configuration nests 4 deep,
# a document's metadata a few more), and far below where a value starts to break the recursive code that reads,
# validates, stores or writes it (serializers, JSONField, json.dumps fail from about 850 levels).
MAX_JSON_DEPTH = 100

# A JSON string (skipped: its brackets are text), or a bracket.
_JSON_NESTING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_loads(text: str) -> Any:
    """json.loads for outside text: NaN and Infinity (not JSON), numbers that overflow a float to infinity,
    integers too long to convert and arrays or objects nested more than MAX_JSON_DEPTH deep are refused with a
    JsonValueError at their line and column.

    A syntax error stays json.JSONDecodeError.
    """
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int
        )
    except RecursionError:  # nested far deeper than the limit: where it passed the limit
        raise _too_deep(text) from None
    except _Refused as exc:
        # The decoder reads left to right, so the text before the refused value is valid JSON and the first
        # refused-looking token outside a string is the one it refused.
        for match in _JSON_VALUE_TOKEN.finditer(text):
            token = match.group()
            if token.startswith('"'):
                continue
            try:
                if "N" in token or "I" in token:
                    _refuse_constant(token)
                elif any(c in token for c in ".eE"):
                    _finite_float(token)
                else:
                    _bounded_int(token)
            except _Refused:
                raise JsonValueError(str(exc), *_position(text, match.start())) from None
        raise JsonValueError(str(exc), 1, 1) from None  # not reached: the decoder saw such a token
    if _deeper_than(value, text, MAX_JSON_DEPTH):
        raise _too_deep(text)
    return value


def json_value(text: str) -> Any:
    """A JSON text from a file, read as json_loads reads it, whose NUL characters (PostgreSQL stores none) and
    lone surrogates (not UTF-8), literal or escaped, are refused too: every problem, a syntax error included, is
    one JsonValueError at its line and column (the readers of golden-set rows, labels and run files)."""
    for found, problem in (
        (find_nul(text), "NUL characters are not allowed"),
        (find_lone_surrogate(text), "lone surrogates are not valid Unicode"),
    ):
        if found is not None:
            raise JsonValueError(problem, *found)
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise JsonValueError(exc.msg, exc.lineno, exc.colno) from None


def _deeper_than(value: Any, text: str, limit: int) -> bool:
    """Whether arrays and objects nest more than `limit` deep in the parsed value (level by level, no
    recursion); a text with no more brackets than that cannot, and is not walked."""
    if text.count("[") + text.count("{") <= limit:
        return False
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(limit):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def _too_deep(text: str) -> JsonValueError:
    """The error for a text nested more than MAX_JSON_DEPTH deep, at the bracket that passes the limit."""
    message = f"arrays and objects nested more than {MAX_JSON_DEPTH} deep"
    depth = 0
    for match in _JSON_NESTING_TOKEN.finditer(text):
        first = match.group()[0]
        if first in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return JsonValueError(message, *_position(text, match.start()))
        elif first in "]}":
            depth -= 1
    return JsonValueError(message, 1, 1)  # not reached: the text nests that deep


# --- identifiers and golden-entry sizes --------------------------------------------------------------------
