"""The warnings of an import that the file's own records decide: fields evalsite does not read, and entries found
by their question under another key. Imports no Django: the entries they update come in as anything with a key."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol

from goldenset.formats import Entry, shown


class Keyed(Protocol):
    key: str


IGNORED_SHOWN = 10  # unknown fields a warning names (a file may carry any number, of any length)


def ignored_fields(entries: Sequence[Entry]) -> list[str]:
    """A warning naming the fields the file's records carry that evalsite does not read, and where: each name
    cut to 60 characters, the first IGNORED_SHOWN of them, with how many more."""
    seen: dict[str, tuple[int, str]] = {}  # name -> (records holding it, the first of them)
    for entry in entries:
        for name in entry.ignored:
            count, first = seen.get(name, (0, entry.where))
            seen[name] = (count + 1, first)
    if not seen:
        return []
    listed = "; ".join(
        f"{shown(name)} ({count} record{'s' if count > 1 else ''}, first {first})"
        for name, (count, first) in itertools.islice(seen.items(), IGNORED_SHOWN)
    )
    more = f"; and {len(seen) - IGNORED_SHOWN} more" if len(seen) > IGNORED_SHOWN else ""
    return [f"Fields evalsite does not read were left out: {listed}{more}."]


def found_by_question(entries: Sequence[Entry], replaced: Sequence[Keyed | None]) -> list[str]:
    """A warning naming the file's entries that are found by their question under another key: they update
    that entry, which keeps its own key."""
    found = [
        (e, g) for e, g in zip(entries, replaced, strict=True) if e.key and g is not None and g.key != e.key
    ]
    if not found:
        return []
    named = ", ".join(
        f"{e.where}{'' if e.key in e.where else f' ({e.key})'} -> {'entry ' + g.key if g.key else 'an entry without a key'}"
        for e, g in found[:5]
    )
    return [
        f"{len(found)} entr{'y' if len(found) == 1 else 'ies'} of the file ask a question the collection has "
        f"under another key: each updates that entry, which keeps its own key ({named}"
        f"{' ...' if len(found) > 5 else ''})."
    ]
