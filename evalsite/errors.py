"""Domain errors with a stable code; plain Python, so pure modules and services can raise them.

evalsite's API exception handler renders them as {"error": {"code", "message", "details"}}; management
commands print them as one line. The code is the contract: clients branch on it, never on the message.
"""

from __future__ import annotations

from typing import Any

# Every code a client or an operator can meet, with its HTTP status and when it happens: the API's envelope,
# a job's `error`, the dashboard's notices and the commands' one-line errors. docs/api.md, "Errors", lists them all
# (a test holds the two together); an EvalsiteError with a code not listed here is a bug and refuses to exist.
ERROR_CODES: dict[str, tuple[int, str]] = {
    # the request itself
    "invalid-json": (400, "the body is not JSON, or nests more than 100 deep (line and column named)"),
    "invalid-body": (400, "a form or multipart body that cannot be parsed"),
    "bad-request": (400, "a request refused before any view (a disallowed Host header, say)"),
    "validation-error": (
        400,
        "a field is missing or invalid, or a query parameter is unknown to the operation; details name it "
        "(and the entry's index; for a query parameter, the `allowed` ones)",
    ),
    "payload-too-large": (413, "the body exceeds EVALSITE_MAX_REQUEST_BYTES"),
    "uri-too-long": (414, "the request line (method, path, query) is longer than 8,190 bytes"),
    "headers-too-large": (431, "more than 100 header fields, or one longer than 8,190 bytes"),
    "unsupported-media-type": (415, "a Content-Type the endpoint does not read"),
    "method-not-allowed": (405, "a method the endpoint does not have"),
    "not-acceptable": (406, "an Accept header no renderer satisfies"),
    "throttled": (429, "too many requests"),
    "unauthenticated": (401, "no API key, or one that is unknown or revoked"),
    "forbidden": (
        403,
        "the caller's role in the tenant lacks the permission the operation needs (details name the permission "
        "and the role; docs/teams.md)",
    ),
    "permission-denied": (403, "a dashboard action the user may not take"),
    "last-admin": (409, "the last admin of a tenant can be neither removed nor given another role"),
    "not-found": (404, "no such object for this tenant (another tenant's objects answer the same)"),
    # search and evaluation parameters
    "invalid-ks": (400, "ks is not a list of positive integers"),
    "invalid-number": (400, "a number field holds something else (numeric strings are accepted)"),
    "invalid-date": (400, "as_of or a validity date is not ISO 8601"),
    "unknown-search-type": (400, "search_type is not FullText, Vector or Hybrid"),
    "unknown-fusion": (400, "fusion is not Rrf or Weighted"),
    "unknown-variant": (400, "bm25_variant is not lucene or okapi"),
    "unknown-groundedness": (400, "groundedness is not Off, Low, Medium or High"),
    "reranker-unavailable": (400, "the named reranker is not available on this server"),
    "duplicate-label": (400, "two configurations of one call share a label"),
    "too-many-configs": (400, "more configurations than one call may evaluate"),
    "empty-golden-set": (400, "no golden entry with expected documents to evaluate"),
    "golden-set-too-small": (
        400,
        "a study's golden set cannot be split into a tuning and a confirmation part",
    ),
    "no-trial-succeeded": (
        400,
        "no trial of a study was scored on every tuning question within its limits (a job's error)",
    ),
    "study-not-finished": (409, "saving the winner of a study that has no confirmed winner yet"),
    "winner-not-better": (
        409,
        "saving a study's winner its confirmation did not show better, without accept_not_better: true",
    ),
    "unknown-preset": (400, "a configuration names a preset the tenant does not have (its field named)"),
    "preset-exists": (409, "a configuration preset with this name exists for the tenant"),
    "schedule-exists": (409, "a schedule with this name exists for the tenant"),
    "empty-pool": (400, "the runs rank no unjudged document within the pool's depth for the questions asked"),
    "changed-since": (
        409,
        "a pool's application cannot be taken back: entries it changed were changed since",
    ),
    "already-reverted": (409, "a pool's application was taken back already"),
    "embeddings-unavailable": (503, "the embeddings endpoint failed after its retries"),
    "index-building": (
        503,
        "the collection has no search index yet: a job builds it; retry after the Retry-After seconds",
    ),
    "index-not-shared": (
        503,
        "the collection's index was built where this server cannot read it: a server without a worker needs "
        "EVALSITE_INDEX_STORE=database, or the worker's EVALSITE_INDEX_DIR (an operator's setting; retrying "
        "will not help)",
    ),
    "unknown-target": (
        400,
        "a configuration names a target the tenant does not have (configs[i].target named)",
    ),
    "target-kind-mismatch": (
        400,
        "a search configuration names an answering (rag-http) target, or the reverse",
    ),
    "invalid-jmespath": (400, "a target's response mapping or id transform is not a JMESPath expression"),
    "python-target-not-allowed": (
        400,
        "a python target names a callable EVALSITE_PYTHON_TARGETS does not list",
    ),
    "target-exists": (409, "a target with this name exists for the tenant"),
    "url-not-allowed": (
        400,
        "a URL a tenant set leads to an address the operator does not allow (loopback, private, link-local...; "
        "EVALSITE_OUTBOUND_ALLOW)",
    ),
    "target-secrets-origin": (
        400,
        "a target's scheme, host or port changes while its secret headers, given for the old one, are not sent again",
    ),
    "target-secrets-unreadable": (
        409,
        "a target's secret headers cannot be decrypted with the configured keys",
    ),
    "llm-not-configured": (400, "a model was named but no chat endpoint is configured"),
    "llm-unavailable": (503, "the chat endpoint failed after its retries"),
    "llm-unreadable": (502, "the chat model's answer could not be read"),
    # golden sets, documents and files
    "empty-question": (400, "a golden entry's question is empty"),
    "unknown-documents": (400, "expected_document_ids name documents the collection does not have"),
    "duplicate-question": (409, "the question (case and spacing folded) exists in the collection"),
    "duplicate-key": (409, "the entry key exists in the collection"),
    "collection-exists": (409, "a collection with this id exists"),
    "too-many-entries": (400, "more entries than EVALSITE_MAX_ENTRIES_PER_CALL"),
    "too-many-documents": (400, "more documents than EVALSITE_MAX_DOCUMENTS_PER_CALL"),
    "empty-file": (400, "an uploaded or imported file is empty (the same over HTTP and on the command line)"),
    "invalid-file": (400, "an uploaded .md/.txt file is not UTF-8, holds NUL, or its name is no document id"),
    "unsupported-file": (415, "an uploaded file type other than .jsonl, .md, .txt"),
    "golden-invalid": (400, "a golden.json that is not valid JSON (line and column named)"),
    "golden-schema": (400, "a golden.json record of the wrong shape (record and field named)"),
    "run-file-invalid": (
        400,
        "a TREC or JSONL run file line of the wrong shape (line named); nothing evaluated",
    ),
    "import-invalid": (
        400,
        "a golden-set or label file (csv, tsv, trec, ragas, deepeval, promptfoo, phoenix; labels) with a bad line or record (named)",
    ),
    "beir-invalid": (400, "a BEIR file line of the wrong shape (file, line and field named)"),
    "file-unreadable": (400, "a file named on the command line cannot be read"),
    "unknown-metric": (400, "the command line names a metric evaluation does not compute"),
    "usage": (400, "a command-line option is missing or wrong (exit code 2)"),
    # jobs
    "broker-unavailable": (503, "the task queue cannot be reached: the job was not started (and is Failed)"),
    "job-finished": (409, "cancelling a job that already ended"),
    "job-cancelled": (400, "the job was cancelled while it ran (a job's error)"),
    "job-stale": (500, "the job's worker died EVALSITE_JOB_MAX_RETRIES + 1 times (a job's error)"),
    "job-lost": (500, "the broker lost the job's task too often (a job's error)"),
    "database-error": (500, "the worker lost its database connection too often (a job's error)"),
    "job-kind-unknown": (500, "no handler for the job's kind (a job's error)"),
    "collection-gone": (404, "the job's collection was deleted before it ran (a job's error)"),
    # the dashboard's compare page
    "no-calibration": (
        400,
        "a calibrated threshold asked for a judge and metric without labels of both verdicts",
    ),
    "too-few-runs": (400, "compare: fewer than two runs selected"),
    "too-many-runs": (400, "compare: more runs selected than one chart shows"),
    "mixed-kinds": (400, "compare: retrieval and answer runs in one comparison"),
    "mixed-collections": (400, "compare: runs of different collections"),
    # the server
    "database-unavailable": (
        503,
        "the database cannot be reached (refused, lost or its file gone): retry after the Retry-After seconds",
    ),
    "internal-error": (500, "a bug: logged with its traceback, answered without one"),
}


def envelope(code: str, message: str, details: dict | None = None) -> dict:
    """The API's error body: {"error": {"code", "message", "details"}}."""
    if code not in ERROR_CODES:
        raise ValueError(f"error code {code!r} is not in evalsite.errors.ERROR_CODES")
    return {"error": {"code": code, "message": message, "details": details or {}}}


class EvalsiteError(Exception):
    status_code = 400

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        retry_after: int | None = None,
    ):
        if code not in ERROR_CODES:
            raise ValueError(f"error code {code!r} is not in evalsite.errors.ERROR_CODES")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.retry_after = retry_after  # seconds, sent as Retry-After
        if status is not None:
            self.status_code = status

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class NotFound(EvalsiteError):
    status_code = 404

    def __init__(self, what: str, identifier: Any):
        super().__init__(
            "not-found",
            f"{what} {identifier!s} not found.",
            details={"resource": what, "id": str(identifier)},
        )
