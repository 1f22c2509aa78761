"""How many connections each web process holds, in memory every process of one server shares.

gunicorn binds a keep-alive connection to the web process that accepted it, and its requests queue behind that
process's threads alone. The processes get equal shares of the CPU whatever they hold, so when connections land
unevenly (measured with 50 users on 4 processes: 19/18/8/5) a user on a crowded process waits behind all its
neighbours while another process idles. With this table a process accepts a new connection only while it holds
no more than the least-loaded live process plus ACCEPT_SLACK, and asks a client to reconnect ("Connection:
close" on an answer) while it holds more than the least plus SHED_SLACK (after a process restarted, say): the
new connection lands on a process with room.

The table is an anonymous shared mapping made in the arbiter before it forks (no file, nothing left behind):
one slot per process, (pid, connections, heartbeat). A process claims a free slot when it starts and writes
its count at least once a second; a slot whose heartbeat is older than STALE_SECONDS (a process killed, one
stopped by the arbiter) no longer counts, so a process that died can never stop the others from accepting.
Reads take no lock: a count a moment old only moves a connection to a neighbour.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import struct
import time

SLOTS = 64  # more than any web process count (EVALSITE_WEB_PROCESSES), restarts included
ACCEPT_SLACK = 1
SHED_SLACK = 2
STALE_SECONDS = 5.0
_SLOT = struct.Struct("=qqd")  # pid, connections, heartbeat (time.monotonic: one clock for the whole machine)


class ConnectionShares:
    def __init__(self, slots: int = SLOTS) -> None:
        self._slots = slots
        self._map = mmap.mmap(-1, slots * _SLOT.size)  # anonymous, MAP_SHARED: the forked children see it
        self._lock = multiprocessing.get_context("fork").Lock()
        self._mine: int | None = None

    def claim(self, pid: int | None = None, now: float | None = None) -> int | None:
        """Take a free slot for this process (a slot never written, or one whose process stopped beating). None
        when every slot is taken: the process then runs as gunicorn's own, accepting whatever comes (it is not
        counted, and sheds nothing), rather than failing to start."""
        pid = os.getpid() if pid is None else pid
        now = time.monotonic() if now is None else now
        # A bounded wait: a process killed while holding the lock must not keep the next one from starting.
        locked = self._lock.acquire(timeout=1.0)
        try:
            for slot in range(self._slots):
                owner, _, beat = _SLOT.unpack_from(self._map, slot * _SLOT.size)
                if owner == 0 or now - beat > STALE_SECONDS:
                    _SLOT.pack_into(self._map, slot * _SLOT.size, pid, 0, now)
                    self._mine = slot
                    return slot
        finally:
            if locked:
                self._lock.release()
        return None

    def publish(self, connections: int, now: float | None = None) -> None:
        """This process's connection count, and that it is alive and accepting."""
        if self._mine is None:
            return
        pid = _SLOT.unpack_from(self._map, self._mine * _SLOT.size)[0]
        now = time.monotonic() if now is None else now
        _SLOT.pack_into(self._map, self._mine * _SLOT.size, pid, connections, now)

    def release(self) -> None:
        """This process stops accepting (it is stopping): it no longer counts for the others."""
        if self._mine is not None:
            _SLOT.pack_into(self._map, self._mine * _SLOT.size, 0, 0, 0.0)
            self._mine = None

    def least(self, mine: int, now: float | None = None) -> int:
        """The fewest connections any live process holds, this one's own (current) count included."""
        now = time.monotonic() if now is None else now
        fewest = mine
        for slot in range(self._slots):
            if slot == self._mine:
                continue
            owner, connections, beat = _SLOT.unpack_from(self._map, slot * _SLOT.size)
            if owner and now - beat <= STALE_SECONDS:
                fewest = min(fewest, connections)
        return fewest

    def may_accept(self, mine: int, now: float | None = None) -> bool:
        """Whether this process takes a new connection now (always, for a process that holds no slot)."""
        return self._mine is None or mine <= self.least(mine, now) + ACCEPT_SLACK

    def should_shed(self, mine: int, now: float | None = None) -> bool:
        """Whether this process asks a client to reconnect elsewhere (never, for a process that holds no slot)."""
        return self._mine is not None and mine > self.least(mine, now) + SHED_SLACK
