"""An index's description as saved: JSON, beside named arrays saved as .npy files (allow_pickle=False). Reading
one back runs no code, whoever wrote it: a file that is not what evalsite writes is refused (ValueError), never
executed. (The description used to be a pickle, and unpickling runs whatever the file names.)

The description holds the format, the content version, what was saved of each part (the BM25 variants, whether
the postings and the page vectors were), the embedder as `Embedder.saved` gives it (its kind, settings, and the
names of its arrays), and the corpus's number of documents, its supersessions and successors (few). The arrays
named here are the corpus's (`corpus-page_document`, `corpus-page_ids`, `corpus-id_rank`,
`corpus-document_starts`, its document ids as an IdTable: `corpus-id_offsets`, `corpus-id_bytes`, and when any
document has time data its validity: `corpus-valid_from`, `corpus-valid_until`) and the embedder's
(`embedder-<name>`); the parts' own arrays (postings, BM25 weights, page vectors) are
evaluation.retrieval.index_files'. Everything that grows with the collection is an array, mapped by every process
that reads the index: nothing per page or per document is parsed into a process's private memory. Format 1 held
the document ids in the JSON (a million strings in every web process at a million pages), formats 1 and 2 the
validity (an entry a document once any had time data); they are still read, as they were, until the
collection's next version saves format 3.
Plain Python + numpy: no Django import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.embeddings import (
    EndpointEmbedder,
    EndpointSettings,
    LsiEmbedder,
    MiniLMEmbedder,
)
from evaluation.retrieval.search.engine import Embedder, SearchIndex
from evaluation.retrieval.search.id_table import IdTable
from goldenset.temporal import TimeTable, Validity

FORMAT = 3  # what is written
# 1: the document ids a list in the JSON, the documents' first rows derived when read; 1 and 2: the validity a
# list in the JSON (an entry a document once any has time data)
READABLE = (1, 2, 3)
CORPUS_ARRAYS = ("page_document", "page_ids", "id_rank", "document_starts")

Arrays = Callable[[str], np.ndarray]  # an array's name -> the array (mapped from its .npy file)


def describe(
    index: SearchIndex, *, postings: bool, variants: list[str], embedder: Embedder | None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The description of `index` with the parts given (a snapshot the caller took: postings saved or not, the
    BM25 variants, the embedder of the saved vectors or None), and the arrays it names, by name."""
    corpus = index.corpus
    arrays = {f"corpus-{name}": np.asarray(getattr(corpus, name)) for name in CORPUS_ARRAYS}
    ids = corpus.document_ids
    table = ids if isinstance(ids, IdTable) else IdTable.packed(ids)
    arrays.update({"corpus-id_offsets": table.offsets, "corpus-id_bytes": table.data})
    time = corpus.validity if isinstance(corpus.validity, TimeTable) else None
    if time is not None:
        arrays.update({"corpus-valid_from": time.valid_from, "corpus-valid_until": time.valid_until})
    description: dict[str, Any] = {
        "format": FORMAT,
        "content_version": index.content_version,
        "builds": index.builds,
        "build_seconds": index.build_seconds,
        "postings": postings,
        "bm25": sorted(variants),
        "vectors": embedder is not None,
        "embedder": None,
        "corpus": {
            "documents": len(table),
            # the validity's arrays named corpus-valid_from and corpus-valid_until; the few supersessions here
            "time": None
            if time is None
            else {"supersedes": [[r, list(n)] for r, n in time.supersedes.items()]},
            "successors": [_validity_json(v) for v in corpus.successors],
        },
    }
    if embedder is not None:
        saved, own = embedder.saved()
        description["embedder"] = {**saved, "arrays": sorted(own)}
        arrays.update({f"embedder-{name}": array for name, array in own.items()})
    return description, arrays


def parse(raw: bytes) -> dict[str, Any]:
    """A description read from its file; ValueError when it is not one this version writes (an older pickle
    among them: refused, not unpickled)."""
    try:
        description = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a JSON index description ({exc})") from None
    if not isinstance(description, dict) or description.get("format") not in READABLE:
        found = description.get("format") if isinstance(description, dict) else type(description).__name__
        raise ValueError(f"index description format {found!r}, expected one of {READABLE}")
    return description


def restored_index(
    description: dict[str, Any], array: Arrays, endpoint_settings: Callable[[], EndpointSettings]
) -> SearchIndex:
    """The index a description describes, with its corpus and embedder; its parts' arrays are the caller's to
    attach (postings, BM25 indexes, page vectors). `endpoint_settings`: how this process reaches an embeddings
    endpoint, for an index whose vectors came from one."""
    index = SearchIndex(restored_corpus(description, array))
    version = description["content_version"]
    index.content_version = None if version is None else int(version)
    index.builds = int(description["builds"])
    index.build_seconds = float(description["build_seconds"])
    saved = description["embedder"]
    if saved is not None:
        own = {name: array(f"embedder-{name}") for name in saved["arrays"]}
        index.embedder = restored_embedder(saved, own, endpoint_settings)
    return index


def restored_corpus(description: dict[str, Any], array: Arrays) -> Corpus:
    saved = description["corpus"]
    if description["format"] == 1:
        ids: Sequence[str] = saved["document_ids"]
        if not isinstance(ids, list):
            raise ValueError("the saved corpus's document ids are not a list")
        documents, starts = len(ids), None
    else:
        documents = int(saved["documents"])
        ids = IdTable(array("corpus-id_offsets"), array("corpus-id_bytes"))
        starts = array("corpus-document_starts")
    validity = _saved_validity(description, array, documents)
    corpus = Corpus.restored(
        page_document=array("corpus-page_document"),
        document_ids=ids,
        validity=validity,
        page_ids=array("corpus-page_ids"),
        successors=[_validity(item) for item in saved["successors"]],
        id_rank=array("corpus-id_rank"),
        document_starts=starts,
    )
    if (
        len(corpus.document_ids) != documents
        or len(corpus.id_rank) != documents
        or len(corpus.page_ids) != corpus.size
        or len(corpus.document_starts) != (documents if corpus.size else 0)
    ):
        raise ValueError("the saved corpus's arrays do not match its documents")
    return corpus


def restored_embedder(
    saved: dict[str, Any], arrays: dict[str, np.ndarray], endpoint_settings: Callable[[], EndpointSettings]
) -> Embedder:
    kind = saved["kind"]
    if kind == "lsi":
        return LsiEmbedder.restored(saved, arrays)
    if kind == "endpoint":
        return EndpointEmbedder(str(saved["model"]), endpoint_settings, name=str(saved["name"]))
    if kind == "minilm":
        return MiniLMEmbedder()
    raise ValueError(f"an index saved with an unknown embedder {kind!r}")


def _saved_validity(
    description: dict[str, Any], array: Arrays, documents: int
) -> list[Validity] | TimeTable | None:
    """The validity as saved: arrays and the supersessions (format 3), or a list of an entry a document."""
    saved = description["corpus"]
    if description["format"] < 3:
        validity = [_validity(item) for item in saved["validity"]]
        if len(validity) not in (0, documents):
            raise ValueError("the saved corpus's validity does not match its documents")
        return validity
    if saved["time"] is None:
        return None
    supersedes = {int(row): tuple(str(name) for name in names) for row, names in saved["time"]["supersedes"]}
    table = TimeTable(array("corpus-valid_from"), array("corpus-valid_until"), supersedes)
    if any(
        a.dtype != np.int64 or a.shape != (documents,) for a in (table.valid_from, table.valid_until)
    ) or any(not 0 <= row < documents for row in supersedes):
        raise ValueError("the saved corpus's validity does not match its documents")
    return table


def _validity_json(validity: Validity) -> list:
    return [
        validity.document_id,
        _instant_json(validity.valid_from),
        _instant_json(validity.valid_until),
        list(validity.supersedes),
    ]


def _validity(item: list) -> Validity:
    document_id, valid_from, valid_until, supersedes = item
    return Validity(
        str(document_id), _instant(valid_from), _instant(valid_until), tuple(str(s) for s in supersedes)
    )


def _instant_json(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)
