"""External search targets: the systems users already run, called once per golden question. Plain Python,
httpx and jmespath: no Django import (evaluation.targets.services stores them, decrypts their secrets and hands
a TargetSpec here).

Every HTTP kind is one request template and one response mapping:
- ``http``: the user's own template (strings may hold ``{{query}}``, ``{{top_k}}``, ``{{question_id}}`` and
  ``{{params.NAME}}``: its default in ``options.params``, set over by a configuration or a study) and mapping (JMESPath expressions for ``ids`` and, optionally, ``scores`` and ``texts``);
- ``lmkit``: an LMKIT One-compatible server (another evalsite is one): ``POST {base}/lmkit/v1/search`` with the
  seed's request shape, results read from ``results[].document_id`` / ``score`` / ``text``;
- ``elasticsearch`` (OpenSearch too): ``POST {base}/{index}/_search``, by default a ``multi_match`` over the
  configured fields of ``size`` top_k, the id from ``_id`` or a ``_source`` field, the score ``_score``;
- ``python``: a dotted path to a callable ``(query, top_k) -> [(document_id, score), ...]``, loaded only when a
  setting lists it.
Placeholders are substituted into the parsed template, never into JSON text: a string that is exactly one
placeholder takes the value with its type (``"{{top_k}}"`` becomes the number 100), any other string has each
placeholder replaced by the value's text, so a query holding quotes or braces stays one JSON string.

The ids a target returns are mapped through its optional ``id_transform`` (``{"regex": ...}``: the first group,
or the whole match, of ids that match; ``{"jmespath": ...}``: evaluated on the id), and a document repeated in a
ranking keeps its first rank. Calls go through the one retry loop of every outbound client (evalsite.http_retries),
at most ``concurrency`` at once per target and, with ``rate_limit``, no more than that many a second, and only to
addresses the operator's egress policy allows (evalsite.egress).

A target's definition is checked before it is stored or called (evaluation.targets.definitions).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import httpx
import jmespath
from jmespath.exceptions import JMESPathError

from evalsite.egress import EgressPolicy, EgressRefused, GuardedTransport
from evalsite.http_retries import RequestFailed, post_with_retries, retry_delay
from evaluation.targets.definitions import (
    LIMITS,
    MAPPING_KEYS,
    PLACEHOLDER,
    check_index,
    id_transform_parts,
    load_callable,
    shown,
)
from evaluation.targets.kinds import (
    ELASTICSEARCH,
    LMKIT,
    PYTHON,
    RAG_HTTP,
)

MAX_ATTEMPTS = 3
BACKOFF, BACKOFF_MAX = 0.5, 10.0
# The start of a JSON answer kept for "test connection" (cut again to EVALSITE_TARGET_TEST_ECHO_CHARS, which the
# operator sets at most to this).
EXCERPT_CHARS = 20_000


@dataclass(frozen=True)
class TargetSpec:
    """A target as a call needs it: secret header values decrypted (kept in memory only, never logged)."""

    name: str
    kind: str
    base_url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    secret_headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 30.0
    concurrency: int = 4
    rate_limit: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hits:
    """One question's ranking from a target: document ids best first (transformed, repeats dropped), their
    scores (None when the target gives none), passage texts when mapped, and the call's latency."""

    ids: list[str]
    scores: list[float] | None
    texts: list[str] | None
    latency_ms: float
    attempts: int = 1
    repeats_dropped: int = 0


@dataclass(frozen=True)
class RagAnswer:
    """An answering target's answer to one question: its text, whether it declined (None when the target does
    not say), the passages it used (ids transformed, and their texts when mapped), the ids it cites."""

    text: str
    refused: bool | None
    passage_ids: list[str]
    passage_texts: list[str] | None
    cited_ids: list[str] | None
    latency_ms: float
    attempts: int = 1
    prompt_tokens: int = 0  # when the target reports its model's usage
    completion_tokens: int = 0


class TargetError(Exception):
    """A call that failed after retries, or an answer that could not be read or mapped; `excerpt` is the start
    of the raw body when there was one (shown by "test connection", stored with the question's error)."""

    def __init__(self, problem: str, *, excerpt: str = "", latency_ms: float | None = None):
        super().__init__(problem)
        self.problem, self.excerpt, self.latency_ms = problem, excerpt, latency_ms


class TargetRefused(TargetError):
    """A call the egress policy refused before anything was sent (evalsite.egress): `rule` names why."""

    def __init__(self, problem: str, *, rule: str):
        super().__init__(problem)
        self.rule = rule


# --- requests ---------------------------------------------------------------------------------------------------


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with its placeholders substituted (see the module docstring); the template is unchanged."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template.strip())
        if whole:
            return values[whole.group(1)]
        return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)
    if isinstance(template, Mapping):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    return template


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def request_of(spec: TargetSpec, query: str, top_k: int, question_id: str) -> tuple[str, Any]:
    """(url, JSON body) of one search (or answer) call."""
    options = spec.options
    values = {"query": query, "top_k": top_k, "question_id": question_id}
    values.update({f"params.{name}": value for name, value in (options.get("params") or {}).items()})
    if spec.kind == LMKIT:
        body: dict[str, Any] = {
            "collection_id": options["collection_id"],
            "query": query,
            "search_type": options.get("search_type") or "FullText",
            "top_k": top_k,
            **{key: options[key] for key in ("cluster_id", "tenant_id") if options.get(key)},
            **dict(options.get("params") or {}),
        }
        return _join(spec.base_url, "lmkit/v1/search"), body
    if spec.kind == ELASTICSEARCH:
        template = options.get("query_template") or {
            "size": "{{top_k}}",
            "query": {"multi_match": {"query": "{{query}}", "fields": list(options.get("fields") or ["*"])}},
            "_source": [options["id_field"]] if options.get("id_field") else False,
        }
        index = quote(
            check_index(options["index"]), safe=",*:+"
        )  # checked again: a row stored before the check
        return _join(spec.base_url, f"{index}/_search"), fill(template, values)
    return spec.base_url, fill(options["request_template"], values)


def mapping_of(spec: TargetSpec) -> dict[str, str]:
    """The JMESPath expressions a kind's answers are read with."""
    if spec.kind == LMKIT:
        return {"ids": "results[].document_id", "scores": "results[].score", "texts": "results[].text"}
    if spec.kind == ELASTICSEARCH:
        id_field = spec.options.get("id_field")
        ids = f"hits.hits[]._source.{json.dumps(id_field)}" if id_field else "hits.hits[]._id"
        return {"ids": ids, "scores": "hits.hits[]._score"}
    return dict(spec.options.get("response_mapping") or {})


def _scalar_id(value: Any, where: str, expression: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TargetError(f"{where}: `{expression}` gave {shown(value)}, not a document id")
    return str(value)


def _search(expression: str, payload: Any, name: str) -> Any:
    try:
        return jmespath.search(expression, payload)
    except JMESPathError as exc:  # a function given the wrong type by this answer, say
        raise TargetError(
            f"{name}: `{expression}` failed on this answer ({' '.join(str(exc).split())})"
        ) from None


def read_hits(spec: TargetSpec, payload: Any, top_k: int, latency_ms: float, attempts: int) -> Hits:
    """The ranking in a parsed answer; a TargetError names the expression and what it found."""
    mapping = mapping_of(spec)
    expression = mapping["ids"]
    found = _search(expression, payload, "ids")
    if not isinstance(found, list):
        raise TargetError(f"ids: `{expression}` found {shown(found)}, not a list")
    where = "ids"
    ids = [_scalar_id(value, f"{where}[{i}]", expression) for i, value in enumerate(found)]
    scores = None
    if "scores" in mapping:
        found_scores = _search(mapping["scores"], payload, "scores")
        if (
            not isinstance(found_scores, list)
            or len(found_scores) != len(ids)
            or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in found_scores)
        ):
            raise TargetError(
                f"scores: `{mapping['scores']}` found {shown(found_scores)}, not {len(ids)} numbers (one per id)"
            )
        scores = [float(s) for s in found_scores]
    texts = _texts(mapping, "texts", payload, len(ids), "one per id")
    return _ranked(spec, ids, scores, texts, top_k, latency_ms, attempts)


def _texts(mapping: Mapping[str, str], name: str, payload: Any, count: int, what: str) -> list[str] | None:
    """The texts a mapping's `name` expression finds, one for each of `count` ids (None when not mapped)."""
    if name not in mapping:
        return None
    found = _search(mapping[name], payload, name)
    if not isinstance(found, list) or len(found) != count:
        raise TargetError(f"{name}: `{mapping[name]}` found {shown(found)}, not {count} texts ({what})")
    return ["" if t is None else str(t) for t in found]


def read_answer(spec: TargetSpec, payload: Any, latency_ms: float, attempts: int) -> RagAnswer:
    """A rag-http target's answer in a parsed body (response_mapping: answer, and optionally passage_ids,
    passage_texts, citations, refused); a TargetError names the expression and what it found."""
    mapping = mapping_of(spec)
    text = _search(mapping["answer"], payload, "answer")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise TargetError(f"answer: `{mapping['answer']}` found {shown(text)}, not a text")
    refused = None
    if "refused" in mapping:
        refused = _search(mapping["refused"], payload, "refused")
        if refused is not None and not isinstance(refused, bool):
            raise TargetError(f"refused: `{mapping['refused']}` found {shown(refused)}, not true or false")
    transform = id_transform(spec.options["id_transform"]) if spec.options.get("id_transform") else None

    def ids_of(name: str) -> list[str] | None:
        if name not in mapping:
            return None
        found = _search(mapping[name], payload, name)
        if found is None:
            return []
        if not isinstance(found, list):
            raise TargetError(f"{name}: `{mapping[name]}` found {shown(found)}, not a list")
        ids = [_scalar_id(value, f"{name}[{i}]", mapping[name]) for i, value in enumerate(found)]
        return [transform(d) for d in ids] if transform else ids

    passage_ids = ids_of("passage_ids") or []
    passage_texts = _texts(mapping, "passage_texts", payload, len(passage_ids), "one per passage id")
    tokens = {}
    for name in ("prompt_tokens", "completion_tokens"):
        if name in mapping:
            found = _search(mapping[name], payload, name)
            if found is not None and (isinstance(found, bool) or not isinstance(found, int) or found < 0):
                raise TargetError(f"{name}: `{mapping[name]}` found {shown(found)}, not a count")
            tokens[name] = found or 0
    return RagAnswer(
        text=text,
        refused=refused,
        passage_ids=passage_ids,
        passage_texts=passage_texts,
        cited_ids=ids_of("citations"),
        latency_ms=latency_ms,
        attempts=attempts,
        **tokens,
    )


def _ranked(spec, ids, scores, texts, top_k, latency_ms, attempts) -> Hits:
    """Transformed ids, first rank kept, cut at top_k."""
    transform = id_transform(spec.options["id_transform"]) if spec.options.get("id_transform") else None
    seen: set[str] = set()
    keep: list[int] = []
    for i, doc_id in enumerate(ids):
        if transform is not None:
            doc_id = ids[i] = transform(doc_id)
        if doc_id not in seen:
            seen.add(doc_id)
            keep.append(i)
    dropped = len(ids) - len(keep)
    keep = keep[:top_k]
    return Hits(
        ids=[ids[i] for i in keep],
        scores=None if scores is None else [scores[i] for i in keep],
        texts=None if texts is None else [texts[i] for i in keep],
        latency_ms=latency_ms,
        attempts=attempts,
        repeats_dropped=dropped,
    )


# --- calls ------------------------------------------------------------------------------------------------------


class _RateLimit:
    """At most `per_second` calls a second across the threads of one evaluation (evenly spaced)."""

    def __init__(self, per_second: float | None):
        self.interval = 1.0 / per_second if per_second else 0.0
        self.next_at = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            at = max(now, self.next_at)
            self.next_at = at + self.interval
        if at > now:
            time.sleep(at - now)


class TargetClient:
    """Calls one target: thread-safe (one connection pool of `concurrency` connections), closed after use."""

    def __init__(
        self, spec: TargetSpec, python_allowed: Sequence[str] = (), policy: EgressPolicy | None = None
    ):
        self.spec = spec
        self._limit = _RateLimit(spec.rate_limit)
        self._callable: Callable | None = None
        self._http: httpx.Client | None = None
        if spec.kind == PYTHON:
            self._callable = load_callable(spec.options["callable"], python_allowed)
        else:
            limits = httpx.Limits(
                max_connections=spec.concurrency, max_keepalive_connections=spec.concurrency
            )
            self._http = httpx.Client(
                headers={**spec.headers, **spec.secret_headers},
                timeout=spec.timeout_s,
                transport=GuardedTransport(policy or EgressPolicy(), limits=limits),
                follow_redirects=False,  # a redirect is an answer (HTTP 3xx), never a second request
            )

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def __enter__(self) -> TargetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, top_k: int, question_id: str = "") -> Hits:
        """One question's ranking, or TargetError."""
        if self._callable is not None:
            return self._call_python(query, top_k)
        payload, latency_ms, attempts, _ = self.call(query, top_k, question_id)
        return read_hits(self.spec, payload, top_k, latency_ms, attempts)

    def call(self, query: str, top_k: int, question_id: str = "") -> tuple[Any, float, int, str]:
        """(parsed JSON answer, latency of the successful attempt in ms, attempts, raw excerpt)."""
        assert self._http is not None
        url, body = request_of(self.spec, query, top_k, question_id)
        started = [0.0]
        http = self._http

        def post() -> httpx.Response:
            self._limit.wait()
            started[0] = time.perf_counter()
            return _bounded(http, http.build_request("POST", url, json=body), LIMITS.answer_bytes)

        def parse(response: httpx.Response) -> tuple[Any, str]:
            text = response.text
            try:
                return json.loads(text), text[:EXCERPT_CHARS]
            except (ValueError, RecursionError):
                # Not a byte of a body that is not JSON: what a target answers is shown to the tenant, and a
                # page that is not a search answer is nothing a mapping could read (docs/evaluation.md, "Test connection").
                kind = response.headers.get("content-type", "no content type").split(";")[0]
                raise ValueError(f"not JSON ({kind}, {len(response.content)} bytes)") from None

        try:
            (payload, excerpt), attempts = post_with_retries(
                post,
                parse,
                max_attempts=MAX_ATTEMPTS,
                delay=lambda retry, after: retry_delay(
                    retry, backoff=BACKOFF, backoff_max=BACKOFF_MAX, retry_after=after
                ),
                timeout=self.spec.timeout_s,
                retry_unreadable=True,
                endpoint=f"target {self.spec.name}",
            )
        except RequestFailed as exc:
            raise TargetError(exc.problem) from None
        except EgressRefused as exc:
            raise TargetRefused(exc.message, rule=exc.rule) from None
        except (
            httpx.HTTPError,
            httpx.InvalidURL,
        ) as exc:  # a body that does not decode, redirects without end
            raise TargetError(f"request failed ({type(exc).__name__}: {exc})") from None
        return payload, (time.perf_counter() - started[0]) * 1000, attempts, excerpt

    def answer(self, query: str, top_k: int, question_id: str = "") -> RagAnswer:
        """One question's answer from a rag-http target (or a python one's answering form), or TargetError."""
        if self._callable is not None:
            return self._answer_python(query, top_k)
        payload, latency_ms, attempts, _ = self.call(query, top_k, question_id)
        return read_answer(self.spec, payload, latency_ms, attempts)

    def _answer_python(self, query: str, top_k: int) -> RagAnswer:
        """A python target in an answer evaluation: its callable returns a mapping with `answer` and, optionally,
        the other keys of a rag-http mapping (passage_ids, passage_texts, citations, refused, tokens)."""
        assert self._callable is not None
        path = self.spec.options["callable"]
        started = time.perf_counter()
        try:
            found = self._callable(query, top_k)
        except Exception as exc:  # the user's code: any failure is this question's error, stored and shown
            raise TargetError(f"{path} raised {type(exc).__name__}: {exc}") from None
        latency_ms = (time.perf_counter() - started) * 1000
        if not isinstance(found, Mapping) or "answer" not in found:
            raise TargetError(f"{path} returned {shown(repr(found))}, not a mapping with an 'answer'")
        keys = {key: key for key in MAPPING_KEYS[RAG_HTTP] if key in found}
        spec = replace(self.spec, options={**self.spec.options, "response_mapping": keys})
        return read_answer(spec, dict(found), latency_ms, 1)

    def _call_python(self, query: str, top_k: int) -> Hits:
        assert self._callable is not None
        started = time.perf_counter()
        try:
            found = self._callable(query, top_k)
        except Exception as exc:  # the user's code: any failure is this question's error, stored and shown
            raise TargetError(f"{self.spec.options['callable']} raised {type(exc).__name__}: {exc}") from None
        latency_ms = (time.perf_counter() - started) * 1000
        ids: list[str] = []
        scores: list[float] = []
        for i, item in enumerate(found or []):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise TargetError(f"result[{i}]: expected (document_id, score), got {shown(repr(item))}")
            ids.append(_scalar_id(item[0], f"result[{i}]", "(document_id, score)"))
            if isinstance(item[1], bool) or not isinstance(item[1], int | float):
                raise TargetError(f"result[{i}]: score {item[1]!r} is not a number")
            scores.append(float(item[1]))
        return _ranked(self.spec, ids, scores, None, top_k, latency_ms, 1)


def _bounded(http: httpx.Client, request: httpx.Request, limit: int) -> httpx.Response:
    """The response, its body read (decoded) up to `limit` bytes: a target that answers more is this call's
    TargetError, never a worker holding gigabytes."""
    streamed = http.send(request, stream=True)
    try:
        chunks: list[bytes] = []
        size = 0
        for chunk in streamed.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise TargetError(f"answer larger than {limit} bytes (the limit of a target's answer)")
            chunks.append(chunk)
    finally:
        streamed.close()
    headers = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() != "content-encoding"]
    return httpx.Response(streamed.status_code, headers=headers, content=b"".join(chunks), request=request)


def id_transform(raw: Any) -> Callable[[str], str]:
    """The id transform an `id_transform` option describes (or raises naming it)."""
    how, text, compiled = id_transform_parts(raw)
    if how == "regex":
        pattern = compiled

        def by_regex(doc_id: str) -> str:
            match = pattern.search(doc_id)
            if match is None:
                return doc_id
            return match.group(1) if pattern.groups else match.group(0)

        return by_regex

    def by_jmespath(doc_id: str) -> str:
        try:
            value = compiled.search(doc_id)
        except JMESPathError as exc:
            raise TargetError(
                f"id_transform: `{text}` failed on {doc_id!r} ({' '.join(str(exc).split())})"
            ) from None
        return doc_id if value is None else _scalar_id(value, "options.id_transform.jmespath", text)

    return by_jmespath
