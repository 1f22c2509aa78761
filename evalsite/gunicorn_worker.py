"""gunicorn's gthread worker, stopping so that clients see a clean close (`manage.py serve` runs it).

A stopping gthread worker stops accepting but keeps its listening socket open until it exits, and so do the
other workers, which share it. Meanwhile the kernel still completes connections into the socket's backlog,
which nobody accepts: when the last process closes the socket they are reset, and a client that had just sent
its request on one reads an error instead of an answer (measured: 12 of 20 keep-alive clients, a ReadError each,
on a SIGTERM under load). Here a stopping worker takes in what the backlog already holds (those requests are
answered, with "Connection: close") and closes its listening socket at once: once every process has, a new
connection is refused, which clients treat as the server being down, and nothing is reset mid-request.

The processes share out the keep-alive connections (evalsite.connection_shares): a process accepts only while
it holds no more than the least-loaded one plus one, and one holding more than the least plus two answers with
"Connection: close" so that its client reconnects to a process with room.

A request the HTTP layer refuses before the application sees it (a request line past 8,190 bytes, too many or
too long header fields, a line that is not HTTP) gets the API's error envelope, not gunicorn's HTML page.
"""

from __future__ import annotations

import errno
import json
from http import HTTPStatus

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.workers import gthread

from evalsite.connection_shares import ConnectionShares
from evalsite.errors import ERROR_CODES, envelope

# gunicorn's refusals of a malformed request, by exception, and the error code each is answered with (its
# status from evalsite.errors.ERROR_CODES).
_REFUSALS: tuple[tuple[type[Exception], str], ...] = (
    (http_errors.LimitRequestLine, "uri-too-long"),
    (http_errors.LimitRequestHeaders, "headers-too-large"),
    (http_errors.InvalidRequestLine, "bad-request"),
    (http_errors.InvalidRequestMethod, "bad-request"),
    (http_errors.InvalidHTTPVersion, "bad-request"),
    (http_errors.InvalidHeader, "bad-request"),
    (http_errors.InvalidHeaderName, "bad-request"),
    (http_errors.ObsoleteFolding, "bad-request"),
)

_MESSAGES = {
    "uri-too-long": "The request line (method, path and query) is longer than 8,190 bytes.",
    "headers-too-large": "Too many header fields (more than 100), or one longer than 8,190 bytes.",
    "bad-request": "The request is not valid HTTP.",
}


# Made in the arbiter, by the first worker object it creates, before any fork: every web process shares it.
_shares: ConnectionShares | None = None


class ThreadWorker(gthread.ThreadWorker):
    def __init__(self, *args, **kwargs) -> None:
        global _shares
        if _shares is None:
            _shares = ConnectionShares()
        self._shares = _shares
        super().__init__(*args, **kwargs)

    def init_process(self) -> None:
        self._shares.claim()
        super().init_process()

    @property
    def worker_connections(self) -> int:
        """The connections this process may hold now: its configured cap while it has no more than its share,
        none more otherwise (gthread's loop reads this before each wait, so the count is published as often)."""
        self._shares.publish(self.nr_conns)
        return self._cap if self._shares.may_accept(self.nr_conns) else 0

    @worker_connections.setter
    def worker_connections(self, value: int) -> None:
        self._cap = value

    def handle_request(self, req, conn):
        if self.alive and self._shares.should_shed(self.nr_conns):
            req.must_close = True  # answered with "Connection: close": the client reconnects elsewhere
        return super().handle_request(req, conn)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if enabled or self.alive:
            return
        self._shares.release()
        for listener in self.sockets:
            self._drain(listener)
            listener.close()

    def _drain(self, listener) -> None:
        """Accept every connection the kernel has queued (each is handled as usual)."""
        listener.setblocking(False)
        while True:
            try:
                client, address = listener.accept()
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ECONNABORTED):
                    return
                raise
            self.nr_conns += 1
            client.setblocking(True)
            self.enqueue_req(gthread.TConn(self.cfg, client, address, listener.getsockname()))

    def handle_error(self, req, client, addr, exc):
        code = next((code for kind, code in _REFUSALS if isinstance(exc, kind)), None)
        if code is None:
            return super().handle_error(req, client, addr, exc)
        status = ERROR_CODES[code][0]
        reason = HTTPStatus(status).phrase
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        body = json.dumps(envelope(code, _MESSAGES[code], {"reason": str(exc)[:200]})).encode()
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            util.write_nonblock(client, head + body)
        except Exception:
            self.log.debug("Failed to send error message.")
