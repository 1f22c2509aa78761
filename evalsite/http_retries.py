"""The HTTP request loop every outbound client shares (the chat client, evalsite.llm.client, and the embeddings
endpoint client): retries on timeouts, connection errors and RETRY_STATUSES, with full-jitter exponential
backoff that honours Retry-After. Plain Python + httpx: no Django import.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

import httpx

__all__ = ["RETRY_STATUSES", "RequestFailed", "post_with_retries", "retry_after_seconds", "retry_delay"]

logger = logging.getLogger(__name__)

# Answers worth another try from any OpenAI-compatible server (chat and embeddings clients alike).
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

T = TypeVar("T")


class RequestFailed(Exception):
    """What post_with_retries could not get: the problem in words, the attempts made, the last HTTP status."""

    def __init__(self, problem: str, attempts: int, status: int | None = None):
        super().__init__(problem)
        self.problem, self.attempts, self.status = problem, attempts, status


def post_with_retries(
    post: Callable[[], httpx.Response],
    parse: Callable[[httpx.Response], T],
    *,
    max_attempts: int,
    delay: Callable[[int, float | None], float],
    timeout: float,
    retry_unreadable: bool,
    endpoint: str,
) -> tuple[T, int]:
    """The one request loop of every outbound client: (parsed answer, attempts), or RequestFailed.

    Timeouts, connection errors (refused, reset, a body cut short) and RETRY_STATUSES are tried again after
    `delay(retry, retry_after)`; another non-200 fails at once (logged with the start of its body, under
    `endpoint`, which never goes into the error). A 200 that `parse` cannot read (ValueError) is tried again
    when `retry_unreadable`, else it fails at once."""
    problem = "no attempt made"
    retry_after: float | None = None
    for attempt in range(1, max_attempts + 1):
        if attempt > 1:
            time.sleep(delay(attempt - 1, retry_after))
        retry_after = None
        try:
            response = post()
        except httpx.TimeoutException:
            problem = f"no answer within {timeout:g}s"
            continue
        except httpx.TransportError as exc:  # refused, reset, a body cut short
            problem = f"connection failed ({type(exc).__name__})"
            continue
        if response.status_code in RETRY_STATUSES:
            problem = f"HTTP {response.status_code}"
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            continue
        if response.status_code != 200:
            logger.warning("%s: HTTP %s: %s", endpoint, response.status_code, response.text[:500])
            raise RequestFailed(f"HTTP {response.status_code}", attempt, response.status_code)
        try:
            return parse(response), attempt
        except ValueError as exc:
            problem = f"unreadable answer ({exc})"
            if not retry_unreadable:
                raise RequestFailed(problem, attempt, response.status_code) from None
    raise RequestFailed(f"{problem} after {max_attempts} attempts", max_attempts)


def retry_delay(retry: int, *, backoff: float, backoff_max: float, retry_after: float | None) -> float:
    """Seconds to wait before retry number `retry` (1-based) of an HTTP call: the server's Retry-After when it
    sent one, else full-jitter exponential backoff; capped at backoff_max. Shared by every outbound client."""
    if retry_after is not None:
        return min(retry_after, backoff_max)
    return random.uniform(0, min(backoff_max, backoff * 2 ** (retry - 1)))


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds, or None (absent, or an HTTP date: fall back to our own backoff)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
