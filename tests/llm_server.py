"""A scripted OpenAI-compatible server for tests: real HTTP on 127.0.0.1, with faults on demand.

    from tests.llm_server import llm_server_fixture  # noqa: F401  (provides the `llm_server` fixture)

    def test_something(llm_server):
        llm_server.fail_next(429, 500, "hang")        # the next three requests fail so, then normal answers
        llm_server.reply(r"capital of (\\w+)", "Paris")  # chat: the first rule whose regex matches the last
                                                     # user message answers; else the message is echoed
        llm_server.reply_by_seed(r"Answer statements", {0: "yes", 1: "no"})  # a rule answering by the request's
                                                     # seed (k sampled calls, each its own); other seeds fall through
        ... llm_server.url ...                        # "http://127.0.0.1:<port>" (the API is under /v1)
        assert llm_server.count("/v1/embeddings") == 2

Search endpoints (targets, evaluation.targets.callers), over `documents` ({id: text}) ranked by how many of the
query's distinct words a text holds (ties by id): POST /{index}/_search answers as Elasticsearch's _search does
(`size`, `query.multi_match.query`; hits.hits[]._id/_score/_source), and POST /search is a generic JSON endpoint
(`{"query", "limit"}` in, `{"data": {"hits": [{"id", "relevance", "text"}]}}` out, each id followed by
`id_suffix`). POST /rag answers a question (`{"question", "k"}`) from the best document's first sentence, cited
[1], with the `k` best as sources (`{"output": {"text", "declined"}, "sources": [{"doc", "content"}]}`),
declining when no document shares a word. The faults below apply to them too.

Endpoints: POST /v1/embeddings (deterministic hashed bag-of-words vectors of `dims` dimensions, so texts that
share words are close; answered in reverse order, so clients must sort by `index`), POST /v1/chat/completions,
GET /v1/models. Faults, taken one per request from a queue: an HTTP status (429, 500, ...), "ok" (none: a
normal answer, to let some requests through before others fail), "hang" (sleep
`hang_seconds` before answering: past a client's timeout), "malformed" (200 with a body that is not JSON),
"truncated" (a Content-Length longer than the body sent). `latency` delays every answer. Every request is
recorded (path, parsed body, headers) whether or not it failed.

`tests` has no __init__.py; it imports as a namespace package because pytest's `pythonpath = ["."]` puts the
repository root on sys.path (as `from tests.conftest import ...` already relies on). The fixture function is
named `llm_server_fixture` and registers as `llm_server`, so importing it is not shadowed (ruff F811) by the
test parameters that use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

FAULTS = ("ok", "hang", "malformed", "truncated")
Answer = str | Callable[[list[dict]], str]  # a chat rule's answer: a text, or f(messages)
_WORD = re.compile(r"\w+")


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    fault: int | str | None = None


@dataclass
class ScriptedLLMServer:
    dims: int = 256
    latency: float = 0.0
    hang_seconds: float = 3.0
    port: int = 0  # 0: any free port
    api_key: str | None = None  # when set, requests without "Authorization: Bearer <api_key>" get 401
    requests: list[Recorded] = field(default_factory=list)
    rules: list[tuple[re.Pattern[str], Answer | Mapping[int | None, Answer]]] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)  # the search endpoints' corpus
    id_suffix: str = ""  # what the generic /search endpoint appends to every id (e.g. "#p1")
    retry_after: str | None = None  # sent as Retry-After with a scripted 429 or 503
    _indexed: tuple[dict | None, dict[str, set[str]]] = (None, {})
    _faults: deque[int | str] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _connections: set[socket.socket] = field(default_factory=set)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # --- scripting -------------------------------------------------------------------------------------

    def fail_next(self, *faults: int | str) -> None:
        """Queue faults for the next requests, one each: a status code or one of FAULTS."""
        for fault in faults:
            if not isinstance(fault, int) and fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}; a status code or one of {FAULTS}")
        with self._lock:
            self._faults.extend(faults)

    def reply(self, pattern: str, answer: Answer) -> None:
        """Chat: when `pattern` matches the last user message, answer this (a string or f(messages))."""
        self.rules.append((re.compile(pattern, re.IGNORECASE | re.DOTALL), answer))

    def reply_by_seed(self, pattern: str, answers: Mapping[int | None, Answer]) -> None:
        """Chat: when `pattern` matches the last user message, answer by the request's `seed` (None: none sent):
        answers[seed], a string or f(messages). A seed not listed falls through to the next rule. Calls made
        at once arrive in any order; their seeds tell them apart, so each gets its own answer."""
        self.rules.append((re.compile(pattern, re.IGNORECASE | re.DOTALL), dict(answers)))

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def embedded_texts(self) -> list[str]:
        """Every text sent to /v1/embeddings, in order (failed requests included)."""
        with self._lock:
            recorded = [r for r in self.requests if r.path == "/v1/embeddings" and isinstance(r.body, dict)]
        return [text for r in recorded for text in r.body.get("input", [])]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._faults.clear()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # --- the model ---------------------------------------------------------------------------------------

    def embed(self, text: str) -> list[float]:
        """Hashed bag of words: each word adds 1 to a bucket picked by its hash (not normalised)."""
        vector = np.zeros(self.dims)
        for word in _WORD.findall(text.lower()):
            bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % self.dims
            vector[bucket] += 1.0
        return vector.tolist()

    def chat(self, messages: list[dict], seed: int | None = None) -> str:
        last = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        if isinstance(last, list):  # content parts
            last = " ".join(part.get("text", "") for part in last if isinstance(part, dict))
        for pattern, rule in self.rules:
            if not pattern.search(last):
                continue
            if isinstance(rule, Mapping):  # by seed
                if seed not in rule:
                    continue
                rule = rule[seed]
            return rule(messages) if callable(rule) else rule
        return last

    def rank(self, query: str, size: int) -> list[tuple[str, float]]:
        """The documents sharing words with the query, most shared first (ties: id ascending), at most size."""
        words = set(_WORD.findall(query.lower()))
        with self._lock:  # each text's words, read once per corpus (a benchmark's target must answer fast)
            if self._indexed[0] is not self.documents or len(self._indexed[1]) != len(self.documents):
                self._indexed = (
                    self.documents,
                    {d: set(_WORD.findall(t.lower())) for d, t in self.documents.items()},
                )
            indexed = self._indexed[1]
        scored = [(float(len(words & indexed[d])), d) for d in self.documents]
        scored = sorted(((s, d) for s, d in scored if s > 0), key=lambda x: (-x[0], x[1]))
        return [(d, s) for s, d in scored[:size]]

    def _es_search(self, index: str, body: dict) -> Any:
        query = ((body.get("query") or {}).get("multi_match") or {}).get("query", "")
        hits = [
            {"_index": index, "_id": d, "_score": s, "_source": {"doc_id": d, "body": self.documents[d]}}
            for d, s in self.rank(str(query), int(body.get("size", 10)))
        ]
        return {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": len(hits), "relation": "eq"},
                "max_score": hits[0]["_score"] if hits else None,
                "hits": hits,
            },
        }

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and the
            # client's delayed ACK add about 40 ms to every answer on keep-alive connections.
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # 16 clients connecting at once must not wait on a listen queue of 5

        self._httpd = Server(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:  # end kept-alive connections, so no handler thread outlives the server
            for connection in list(self._connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- one request -------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = handler.path.split("?", 1)[0]
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            self.requests.append(Recorded(method, path, body, dict(handler.headers.items()), fault))
        if self.latency:
            self._stopping.wait(self.latency)

        if fault == "hang":
            self._stopping.wait(self.hang_seconds)
            fault = None  # a client that waited long enough gets a normal answer
        if isinstance(fault, int):
            extra = {"Retry-After": self.retry_after} if self.retry_after and fault in (429, 503) else {}
            payload = json.dumps({"error": {"message": f"scripted {fault}", "code": fault}}).encode()
            return self._send_raw(handler, fault, payload, headers=extra)
        if self.api_key is not None and handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._send(handler, 401, {"error": {"message": "bad api key", "code": "invalid_api_key"}})

        if method == "GET" and path == "/v1/models":
            answer: Any = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
        elif method == "POST" and path == "/v1/embeddings" and isinstance(body, dict):
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                return self._send(handler, 400, {"error": {"message": "input: expected strings"}})
            data = [
                {"object": "embedding", "index": i, "embedding": self.embed(t)} for i, t in enumerate(texts)
            ]
            answer = {
                "object": "list",
                "data": data[::-1],  # out of order on purpose: clients must sort by index
                "model": body.get("model", "scripted"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        elif method == "POST" and re.fullmatch(r"/[^/_][^/]*/_search", path) and isinstance(body, dict):
            answer = self._es_search(path.split("/")[1], body)
        elif method == "POST" and path == "/search" and isinstance(body, dict):
            found = self.rank(str(body.get("query", "")), int(body.get("limit", 10)))
            answer = {
                "data": {
                    "hits": [
                        {"id": d + self.id_suffix, "relevance": s, "text": self.documents[d]}
                        for d, s in found
                    ]
                }
            }
        elif method == "POST" and path == "/rag" and isinstance(body, dict):
            found = self.rank(str(body.get("question", "")), int(body.get("k", 3)))
            if found:  # the best passage's first sentence, cited
                first = re.split(r"(?<=[.!?])\s", self.documents[found[0][0]], maxsplit=1)[0]
                text, refused = f"{first} [1]", False
            else:
                text, refused = "I cannot answer that from the documents.", True
            answer = {
                "output": {"text": text, "declined": refused},
                "sources": [{"doc": d, "content": self.documents[d]} for d, _ in found],
            }
        elif method == "POST" and path == "/v1/chat/completions" and isinstance(body, dict):
            seed = body.get("seed")
            content = self.chat(body.get("messages") or [], seed if isinstance(seed, int) else None)
            answer = {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        else:
            return self._send(handler, 404, {"error": {"message": f"no route {method} {path}"}})

        if fault == "malformed":
            return self._send_raw(handler, 200, b'{"data": [{"index": 0, "embedding": [0.1, ')
        if fault == "truncated":
            encoded = json.dumps(answer).encode()
            return self._send_raw(handler, 200, encoded[: len(encoded) // 2], length=len(encoded))
        self._send(handler, 200, answer)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        ScriptedLLMServer._send_raw(handler, status, json.dumps(payload).encode())

    @staticmethod
    def _send_raw(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: bytes,
        length: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(data) if length is None else length))
            if length is not None:
                handler.send_header("Connection", "close")
                handler.close_connection = True
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): nothing to do
            handler.close_connection = True


@pytest.fixture(name="llm_server")
def llm_server_fixture() -> Iterator[ScriptedLLMServer]:
    """`llm_server`: a started scripted server, stopped after the test. Import this function into a test module
    to use it (its own name differs from the fixture's, so the import is not shadowed by test parameters)."""
    with ScriptedLLMServer() as server:
        yield server


def demo_writer(messages: list[dict]) -> str:
    """For local demos: answer a golden-set generation prompt the way a model would, with a question written
    from the passage by the offline template writer (so the whole LLM path runs without a model)."""
    from goldenset.generation import PageText, TemplateQuestionWriter

    user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    found = re.search(r"(?:Title: (?P<title>[^\n]*)\n)?Passage:\n<<<\n(?P<text>.*?)\n>>>", user, re.DOTALL)
    if not found:
        return user
    page = PageText(key=0, document_id="", number=1, title=found["title"] or "", text=found["text"])
    draft = TemplateQuestionWriter().write(page, seed=0)
    return json.dumps({"question": draft.question, "answer": draft.answer})


def main() -> None:
    """`python -m tests.llm_server [--port 8089] [--latency 0.2]`: a scripted OpenAI-compatible server for local
    demos (it writes generated questions, answers from passage [1] and judges everything supported); point
    EVALSITE_LLM_BASE_URL at the address it prints."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--documents", help="a JSON file {id: text}: the corpus of the search endpoints")
    args = parser.parse_args()
    server = ScriptedLLMServer(latency=args.latency, port=args.port)
    if args.documents:
        with open(args.documents, encoding="utf-8") as file:
            server.documents = json.load(file)
    server.reply(r"Passage:\n<<<", demo_writer)
    from tests.answer_support import scripted_rag

    server.reply(r".", scripted_rag)  # grounded answers and judgements
    with server:
        print(f"scripted OpenAI-compatible server on {server.url}/v1 (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
