"""Drift of a golden entry: why what it expects may no longer hold. Plain Python: no Django import.

An entry remembers a hash of each expected document as it was when a person last looked at the entry (created
it, changed what it expects, or marked it reviewed). It has drifted when, for one of its expected documents:

- `deleted`: the document is no longer in the collection;
- `changed`: its content hash differs from the one remembered (a document the entry remembers no hash of, one
  added to it by a writer that does not remember, is not called changed: there is nothing to compare);
- `expired`: its validity ended (valid_until in the past) or another document in force supersedes it
  (goldenset.temporal's `expired` and `superseded`).

The reasons come in that order, each naming its documents in the entry's order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

DELETED, CHANGED, EXPIRED = "deleted", "changed", "expired"
REASONS = (DELETED, CHANGED, EXPIRED)


def page_hash(text: str) -> str:
    """sha256 (hex) of a page's text: `Page.content_hash`."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_hash(page_hashes: Iterable[str]) -> str:
    """sha256 (hex) over a document's page hashes in page order: what an entry remembers of the document."""
    digest = hashlib.sha256()
    for value in page_hashes:
        digest.update(value.encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass(frozen=True)
class Reason:
    reason: str  # one of REASONS
    document_ids: tuple[str, ...]


def entry_reasons(
    expected: Sequence[str],
    remembered: Mapping[str, str],
    current: Mapping[str, str],
    ended: Iterable[str] = (),
) -> list[Reason]:
    """Why an entry drifted ([] when it did not).

    `expected` is its expected document ids, `remembered` the hashes it remembers by document id, `current` the
    hash of each expected document still in the collection (one absent: deleted) and `ended` the expected
    documents whose validity ended (expired or superseded).
    """
    ended = set(ended)
    found: dict[str, list[str]] = {name: [] for name in REASONS}
    for document_id in dict.fromkeys(expected):
        if document_id not in current:
            found[DELETED].append(document_id)
            continue
        if document_id in remembered and remembered[document_id] != current[document_id]:
            found[CHANGED].append(document_id)
        if document_id in ended:
            found[EXPIRED].append(document_id)
    return [Reason(name, tuple(ids)) for name, ids in found.items() if ids]
