"""The fields of an evaluation request, read strictly: numbers, ks, instants, booleans, choices, lists of
strings. Plain Python (the API, the CLI and the dashboard's forms share it).

Every error is an EvalsiteError with a stable code and the offending field's path, e.g.
`configs[1].search_type`, so a client is told exactly what to fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, time

from evalsite.errors import EvalsiteError

MAX_K = 1000
_DIGITS = re.compile(r"[0-9]+")


def field_path(prefix: str, name: str) -> str:
    """`name` within `prefix` (`configs[1].top_k`); the name alone where there is no prefix."""
    return f"{prefix}.{name}" if prefix else name


def field_error(code: str, field: str, message: str, **details) -> EvalsiteError:
    return EvalsiteError(code, f"{field}: {message}", details={"field": field, **details})


def parse_positive_int(value, field: str, *, maximum: int = MAX_K) -> int:
    """An integer >= 1, sent as a number or a numeric string ("10")."""
    if isinstance(value, bool):
        raise field_error("invalid-number", field, f"expected a positive integer, got {value!r}.")
    if isinstance(value, str):
        # ASCII digits only: str.isdigit() also admits "²" and "٣", and int() refuses the first (a 500).
        digits = value.strip().removeprefix("+")
        if not _DIGITS.fullmatch(digits):
            raise field_error("invalid-number", field, f"expected a positive integer, got {value!r}.")
        if len(digits.lstrip("0")) > len(str(maximum)):  # int() of 5000 digits raises; out of range anyway
            raise field_error(
                "invalid-number", field, f"expected an integer from 1 to {maximum}, got {value!r}."
            )
        value = int(digits)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 1 or value > maximum:
        raise field_error("invalid-number", field, f"expected an integer from 1 to {maximum}, got {value!r}.")
    return value


# The cutoffs an evaluation reports when none are asked (the API, the commands, the dashboard's forms, the demo).
DEFAULT_KS = (1, 5, 10)
DEFAULT_KS_TEXT = ",".join(map(str, DEFAULT_KS))  # as the commands and the forms take them: "1,5,10"


def parse_ks(raw, field: str = "ks") -> list[int]:
    """ks as numbers or numeric strings; sorted, without repeats. Default DEFAULT_KS."""
    if raw is None:
        return list(DEFAULT_KS)
    if isinstance(raw, str):
        raw = [part for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list) or not raw:
        raise field_error("invalid-ks", field, "expected a non-empty list of positive integers.")
    try:
        return sorted({parse_positive_int(k, f"{field}[{i}]") for i, k in enumerate(raw)})
    except EvalsiteError as exc:
        raise EvalsiteError("invalid-ks", exc.message, details=exc.details) from None


def parse_instant(value, field: str) -> datetime | None:
    """An ISO 8601 date (its first instant, UTC) or datetime (naive means UTC); None or "" for none."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            if len(text) == 10:
                return datetime.combine(datetime.strptime(text, "%Y-%m-%d").date(), time.min, tzinfo=UTC)
            moment = datetime.fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        except ValueError:
            pass
    raise field_error("invalid-date", field, f"expected an ISO 8601 date or datetime, got {value!r}.")


def parse_share(value, field: str) -> float:
    """A number from 0 to 1 (a weight, a rate, a threshold), sent as a number or a numeric string."""
    return parse_number(value, field, 0, 1)


def parse_number(value, field: str, low: float, high: float) -> float:
    """A number from `low` to `high`, sent as a number or a numeric string."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not low <= number <= high:
        raise field_error("validation-error", field, f"expected a number from {low:g} to {high:g}.")
    return number


def parse_bool(value, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise field_error("validation-error", field, f"expected true or false, got {value!r}.")


def parse_choice(value, field: str, choices: Sequence[str], code: str) -> str:
    if isinstance(value, str):
        for choice in choices:  # PascalCase is canonical; accept any case ("fulltext", "FULLTEXT")
            if value.strip().lower() == choice.lower():
                return choice
    raise field_error(
        code, field, f"expected one of {', '.join(choices)}, got {value!r}.", allowed=list(choices)
    )


def string_list(value, field: str, *, maximum: int) -> list[str]:
    """A list of non-empty strings (a bare string is refused: "faq" is not ["faq"] by accident)."""
    if not isinstance(value, list):
        raise field_error("validation-error", field, f"expected a list of strings, got {value!r}.")
    if len(value) > maximum:
        raise field_error("validation-error", field, f"at most {maximum} values.")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or len(item) > 200:
            raise field_error(
                "validation-error", f"{field}[{i}]", "expected a non-empty string (at most 200 characters)."
            )
        out.append(item.strip())
    return list(dict.fromkeys(out))
