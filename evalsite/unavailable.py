"""Which database errors mean "the database cannot be reached" (a 503 database-unavailable), not a bug (500).

Django raises django.db.OperationalError and InterfaceError for very different things: a refused connection,
a server that went away, but also a statement timeout, a deadlock, "no such table", a misused cursor. Only the
first kind is a lost dependency: nothing is wrong with the request or the code, and the same request succeeds
once the database is back, so the client is told 503 with a Retry-After. Everything else stays a 500 (a bug or
an overload we want to see as one). The decision is made on the driver's own exception, which Django keeps as
__cause__ of the one it raises:

- PostgreSQL (psycopg 3): an OperationalError without an SQLSTATE comes from the client library itself, never
  from a statement the server ran: the connection could not be made (refused, timed out, unknown host, a
  rejected login or a database that no longer exists) or its socket broke ("server closed the connection
  unexpectedly", "the connection is closed"). With an SQLSTATE: class 08 (connection exception), and the
  server ending the session (57P01 admin shutdown, as pg_terminate_backend does; 57P02 crash shutdown; 57P03
  cannot connect now, a server starting or stopping). Not: 57014 query canceled, 40P01 deadlock, 53xxx
  resources, ... An InterfaceError ("the cursor is closed") counts only when the connection under it is closed
  or broken; on a live connection it is a bug.
- SQLite: SQLITE_CANTOPEN (the file or its directory is gone or unreadable), SQLITE_IOERR and its extended
  codes (the disk under an open file failed), SQLITE_READONLY_DBMOVED (the file was moved or deleted while
  open). Not: SQLITE_BUSY ("database is locked", contention), SQLITE_ERROR ("no such table"), SQLITE_FULL.
"""

from __future__ import annotations

import sqlite3

from django.db import InterfaceError, OperationalError, connections

# Seconds a client is asked to wait before retrying (the Retry-After of database-unavailable).
RETRY_AFTER_SECONDS = 5

# What the client reads: no host, port, database name, user or file path (those are in the server's log).
MESSAGE = "The database cannot be reached; the service is temporarily unavailable. Try again shortly."

_PG_CONNECTION_LOST = {"57P01", "57P02", "57P03"}
_SQLITE_CANTOPEN = 14
_SQLITE_IOERR = 10
_SQLITE_READONLY_DBMOVED = 1032


def database_unavailable(exc: BaseException | None) -> bool:
    """True when `exc` is Django's error for a database that cannot be reached (see the module's doc)."""
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    cause = exc.__cause__
    if isinstance(cause, sqlite3.Error):
        code = getattr(cause, "sqlite_errorcode", None)
        if code is None:
            return False
        return code & 0xFF in (_SQLITE_CANTOPEN, _SQLITE_IOERR) or code == _SQLITE_READONLY_DBMOVED
    try:
        import psycopg  # only where PostgreSQL is used
    except ImportError:  # PostgreSQL is optional; without its driver no error can be one of its own
        return False
    if isinstance(cause, psycopg.OperationalError):
        state = cause.sqlstate
        return state is None or state.startswith("08") or state in _PG_CONNECTION_LOST
    if isinstance(cause, psycopg.InterfaceError):
        return _a_connection_is_lost()
    return False


def _a_connection_is_lost() -> bool:
    """Whether one of this thread's open database connections is closed or broken (psycopg's own flags: no
    round trip to a server that may be gone)."""
    for wrapper in connections.all(initialized_only=True):
        raw = wrapper.connection
        if raw is not None and (getattr(raw, "closed", False) or getattr(raw, "broken", False)):
            return True
    return False
