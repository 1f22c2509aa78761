"""gunicorn's gthread worker, stopping so that clients see a clean close (`manage.py serve` runs it).

A stopping gthread worker stops accepting but keeps its listening socket open until it exits, and so do the
other workers, which share it. Meanwhile the kernel still completes connections into the socket's backlog,
which nobody accepts: when the last process closes the socket they are reset, and a client that had just sent
its request on one reads an error instead of an answer (measured: 12 of 20 keep-alive clients, a ReadError each,
on a SIGTERM under load). Here a stopping worker takes in what the backlog already holds (those requests are
answered, with "Connection: close") and closes its listening socket at once: once every process has, a new
connection is refused, which clients treat as the server being down, and nothing is reset mid-request.
"""

from __future__ import annotations

import errno

from gunicorn.workers import gthread


class ThreadWorker(gthread.ThreadWorker):
    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if enabled or self.alive:
            return
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
