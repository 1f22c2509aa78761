"""A chat client for any OpenAI-compatible /v1/chat/completions endpoint (Ollama, llama.cpp, vLLM, OpenAI, ...).

Plain Python + httpx, no Django at import: `ChatClient(base_url, ...)` is configured explicitly, and
`ChatClient.from_settings()` reads EVALSITE_LLM_BASE_URL / EVALSITE_LLM_API_KEY / EVALSITE_LLM_MODEL (and the
optional EVALSITE_LLM_TIMEOUT / _MAX_ATTEMPTS / _BACKOFF / _CONCURRENCY) when called.

- `complete(messages, model=None, temperature=0.0, max_tokens=None) -> ChatResult` (text, model, tokens,
  latency, attempts). 408, 429, 5xx, timeouts, connection errors, bodies cut short and bodies that are not
  JSON are retried with jittered exponential backoff (Retry-After honoured, capped at backoff_max); other 4xx
  are not. Whatever still fails raises EvalsiteError("llm-unavailable", status 503); the API key is never in
  the message or the details.
- `complete_json(messages, schema=...) -> (data, ChatResult)`: the answer's first JSON value (code fences and
  prose around it tolerated, see evalsite.llm.json_replies.extract_json) validated against a small JSON-schema subset
  (evalsite.llm.json_replies.validate); an answer that does not fit raises EvalsiteError("llm-unreadable", status
  502) naming the path.
- At most `concurrency` requests are in flight per client, however many threads call it; `map_concurrent`
  runs a function over items on that many threads and returns the results in input order.
- With a `cache` (anything with `get(key)` / `put(key, record)`; `MemoryCallCache` here, the database-backed
  `evalsite.llm.cache.DbCallCache` in the app), an answer is stored under `call_key(model, messages, params)`
  and a repeated call is answered from it: a re-run costs nothing and reads the same text. Only successful
  answers are stored; a cached result says so (`cached=True`, no attempts, no latency).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import httpx

from evalsite.errors import EvalsiteError
from evalsite.http_retries import RequestFailed, post_with_retries, retry_delay
from evalsite.llm.json_replies import extract_json, storable, validate

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

Message = Mapping[str, Any]


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    prompt_tokens: int | None  # None when the server reports no usage
    completion_tokens: int | None
    latency_ms: float  # first attempt sent -> answer read, retries and backoff included
    attempts: int
    finish_reason: str | None = None
    cached: bool = False  # answered from the call cache: no request was sent

    def record(self) -> dict[str, Any]:
        """What the call cache stores (the answer, not the circumstances of this call)."""
        return {
            "text": self.text,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
        }


class CallCache(Protocol):
    def get(self, key: str) -> Mapping[str, Any] | None: ...

    def put(self, key: str, record: Mapping[str, Any]) -> None: ...


class MemoryCallCache:
    """A call cache in this process's memory (tests, benchmarks, one-off scripts)."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            return self._records.get(key)

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        with self._lock:
            self._records[key] = dict(record)

    def __len__(self) -> int:
        return len(self._records)


def call_key(model: str, messages: Sequence[Message], params: Mapping[str, Any]) -> str:
    """The cache key of a call: sha256 of its model, messages and parameters in canonical JSON."""
    canonical = json.dumps(
        {"model": model, "messages": [dict(m) for m in messages], "params": dict(params)},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Usage:
    """Totals over a client's calls (a snapshot; see ChatClient.usage())."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class ChatClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str = "",
        timeout: float = 30.0,
        max_attempts: int = 4,
        backoff: float = 0.5,
        concurrency: int = 4,
        backoff_max: float = 20.0,
        cache: CallCache | None = None,
    ):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise EvalsiteError(
                "llm-unavailable", "The LLM base URL must start with http:// or https://.", status=503
            )
        if max_attempts < 1 or concurrency < 1:
            raise ValueError("max_attempts and concurrency must be at least 1")
        base = base_url.rstrip("/")
        self.url = f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"
        self._api_key = api_key or ""
        self.model = model
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.concurrency = concurrency
        self.cache = cache
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._client_pid = 0
        self._usage = Usage()

    def __repr__(self) -> str:  # no key
        return f"ChatClient({self.url!r}, model={self.model!r}, concurrency={self.concurrency})"

    @classmethod
    def from_settings(cls, **overrides: Any) -> ChatClient:
        """A client configured from Django settings (read now, not at import); keyword arguments override."""
        from django.conf import settings  # late: this module loads without Django (tests/test_layers.py)

        config: dict[str, Any] = {
            "base_url": settings.EVALSITE_LLM_BASE_URL,
            "api_key": settings.EVALSITE_LLM_API_KEY or None,
            "model": settings.EVALSITE_LLM_MODEL,
            "timeout": float(settings.EVALSITE_LLM_TIMEOUT),
            "max_attempts": settings.EVALSITE_LLM_MAX_ATTEMPTS,
            "concurrency": settings.EVALSITE_LLM_CONCURRENCY,
        }
        config.update(overrides)
        if not config["base_url"]:
            raise EvalsiteError(
                "llm-unavailable", "No LLM endpoint configured (EVALSITE_LLM_BASE_URL).", status=503
            )
        return cls(**config)

    # --- lifecycle ---------------------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        """One pool per client and process (a forked worker makes its own); httpx clients are thread-safe."""
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                self._client = httpx.Client(
                    headers={"Accept": "application/json"},
                    limits=httpx.Limits(
                        max_connections=self.concurrency, max_keepalive_connections=self.concurrency
                    ),
                )
                self._client_pid = os.getpid()
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._client_pid == os.getpid():
                self._client.close()
            self._client = None

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    def _record(self, result: ChatResult | None, attempts: int, latency_ms: float) -> None:
        with self._lock:
            u = self._usage
            self._usage = Usage(
                calls=u.calls + 1,
                cache_hits=u.cache_hits + bool(result is not None and result.cached),
                failures=u.failures + (result is None),
                attempts=u.attempts + attempts,
                prompt_tokens=u.prompt_tokens + ((result.prompt_tokens or 0) if result else 0),
                completion_tokens=u.completion_tokens + ((result.completion_tokens or 0) if result else 0),
                latency_ms=u.latency_ms + latency_ms,
            )

    # --- calls -------------------------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        model = model if model is not None else self.model
        payload: dict[str, Any] = {"messages": [dict(m) for m in messages], "temperature": temperature}
        if model:
            payload["model"] = model
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if seed is not None:  # OpenAI, vLLM, llama.cpp and Ollama's OpenAI API read it; others ignore it
            payload["seed"] = seed
        key = ""
        if self.cache is not None:
            key = call_key(
                model, messages, {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
            )
            hit = self.cache.get(key)
            if hit is not None:
                result = ChatResult(
                    text=str(hit.get("text") or ""),
                    model=str(hit.get("model") or model),
                    prompt_tokens=_int(hit.get("prompt_tokens")),
                    completion_tokens=_int(hit.get("completion_tokens")),
                    latency_ms=0.0,
                    attempts=0,
                    finish_reason=hit.get("finish_reason"),
                    cached=True,
                )
                self._record(result, 0, 0.0)
                return result
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
        started = time.perf_counter()

        def post() -> httpx.Response:
            with self._slots:
                return self._http().post(self.url, json=payload, headers=headers, timeout=timeout)

        try:
            result, attempt = post_with_retries(
                post,
                lambda response: self._parse(response, model),
                max_attempts=self.max_attempts,
                delay=self._delay,
                timeout=self.timeout,
                retry_unreadable=True,  # not JSON, or not a chat completion: the server's fault, try again
                endpoint=f"LLM endpoint {self.url}",
            )
        except RequestFailed as failed:
            self._record(None, failed.attempts, _ms(started))
            status = {"status": failed.status} if failed.status is not None else {}
            raise self._unavailable(failed.problem, model, **status, attempts=failed.attempts) from None
        result = replace(result, attempts=attempt, latency_ms=_ms(started))
        self._record(result, attempt, result.latency_ms)
        if self.cache is not None and result.finish_reason != "length":  # a cut-off answer is not kept
            self.cache.put(key, result.record())
        logger.debug(
            "LLM call model=%s prompt_tokens=%s completion_tokens=%s latency_ms=%.0f attempts=%d",
            result.model,
            result.prompt_tokens,
            result.completion_tokens,
            result.latency_ms,
            attempt,
        )
        return result

    def complete_json(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any],
        model: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> tuple[Any, ChatResult]:
        result = self.complete(
            messages, model=model, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        expected = schema.get("type")
        data = extract_json(result.text, expect=expected if expected in ("object", "array") else None)
        validate(data, schema)
        return data, result

    def map_concurrent(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        return map_concurrent(fn, items, concurrency=self.concurrency)

    # --- helpers -----------------------------------------------------------------------------------------

    def _delay(self, retry: int, retry_after: float | None) -> float:
        return retry_delay(retry, backoff=self.backoff, backoff_max=self.backoff_max, retry_after=retry_after)

    @staticmethod
    def _parse(response: httpx.Response, model: str) -> ChatResult:
        """The answer of a 200 (attempts and latency are filled in by the caller); ValueError if unreadable."""
        try:
            body = response.json()
            choice = body["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a chat completion: {type(exc).__name__}") from None
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return ChatResult(
            text=storable(content) if isinstance(content, str) else "",
            model=str(body.get("model") or model),
            prompt_tokens=_int(usage.get("prompt_tokens")),
            completion_tokens=_int(usage.get("completion_tokens")),
            latency_ms=0.0,
            attempts=0,
            finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None,
        )

    def _unavailable(self, problem: str, model: str, **details: object) -> EvalsiteError:
        # The endpoint's address is the operator's business: the log has it, the error does not.
        logger.warning("LLM endpoint %s (model %r) failed: %s", self.url, model, problem)
        return EvalsiteError(
            "llm-unavailable",
            f"The LLM endpoint failed: {problem}.",
            details={"model": model, **details},
            status=503,
        )


def map_concurrent(fn: Callable[[T], R], items: Iterable[T], *, concurrency: int = 4) -> list[R]:
    """fn over items on at most `concurrency` threads; results in input order. The first exception is
    raised once the calls already running have finished; calls not yet started are cancelled."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(
        max_workers=max(1, min(concurrency, len(items))), thread_name_prefix="llm"
    ) as pool:
        futures: list[Future[R]] = [pool.submit(fn, item) for item in items]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future in done and future.exception() is not None:
                for other in futures:
                    other.cancel()
                break
        return [future.result() for future in futures]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
