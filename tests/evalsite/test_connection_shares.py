"""Web processes share out keep-alive connections (evalsite/connection_shares.py, evalsite/gunicorn_worker.py):
the table's rules, the table seen across a fork, and `manage.py serve` with 4 processes holding 40 clients'
connections evenly, also after one of its processes is killed and replaced."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from evalsite.connection_shares import STALE_SECONDS, ConnectionShares
from tests.worker_support import Serve


def test_a_process_accepts_while_it_holds_no_more_than_the_least_plus_one_and_sheds_past_the_least_plus_two():
    shares = ConnectionShares(slots=4)
    others = [_view(shares), _view(shares)]
    assert others[0].claim(pid=101, now=10.0) == 0 and others[1].claim(pid=102, now=10.0) == 1
    others[0].publish(5, now=10.0)
    others[1].publish(9, now=10.0)
    assert shares.claim(pid=103, now=10.0) == 2
    assert shares.least(7, now=10.5) == 5
    assert shares.may_accept(6, now=10.5) and not shares.may_accept(7, now=10.5)
    assert not shares.should_shed(7, now=10.5) and shares.should_shed(8, now=10.5)
    assert shares.least(2, now=10.5) == 2  # its own count, not the table's, when it is the least


def test_a_process_that_stopped_beating_or_released_its_slot_no_longer_counts_and_its_slot_is_reused():
    shares = ConnectionShares(slots=2)
    dead = _view(shares)
    dead.claim(pid=201, now=100.0)
    dead.publish(0, now=100.0)  # a process with no connection, then killed: it never writes again
    assert shares.claim(pid=202, now=100.0) == 1
    assert not shares.may_accept(3, now=100.0 + STALE_SECONDS - 0.1)
    assert shares.may_accept(3, now=100.0 + STALE_SECONDS + 0.1)  # the dead one no longer holds others back
    replacement = _view(shares)
    assert replacement.claim(pid=203, now=100.0 + STALE_SECONDS + 0.1) == 0  # its slot is taken again
    replacement.publish(4, now=100.0 + STALE_SECONDS + 0.1)
    shares.publish(3, now=100.0 + STALE_SECONDS)  # alive: its slot is not free
    full = _view(shares)
    assert full.claim(pid=204, now=100.0 + STALE_SECONDS + 0.2) is None  # every slot taken: not counted
    assert full.may_accept(99, now=100.0 + STALE_SECONDS + 0.2)  # it runs as gunicorn's own worker
    assert not full.should_shed(99, now=100.0 + STALE_SECONDS + 0.2)
    full.publish(1, now=100.0 + STALE_SECONDS + 0.2)
    assert shares.least(7, now=100.0 + STALE_SECONDS + 0.2) == 4  # its count is written nowhere
    shares.release()  # a stopping process gives its slot back at once
    assert _view(shares).claim(pid=205, now=106.0) == 1


def _view(shares: ConnectionShares) -> ConnectionShares:
    """Another process's handle on the same table (the memory and the lock), holding no slot yet."""
    view = ConnectionShares.__new__(ConnectionShares)
    view.__dict__.update({**shares.__dict__, "_mine": None})
    return view


def test_the_table_made_before_a_fork_is_the_one_the_forked_processes_write():
    shares = ConnectionShares(slots=4)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: claim, publish, say so, exit without running pytest's teardown
        try:
            shares.claim()
            shares.publish(3)
            os.write(write, b"x")
            time.sleep(5)
        finally:
            os._exit(0)
    try:
        assert os.read(read, 1) == b"x"
        assert shares.least(99) == 3  # the child's count, seen by the parent
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        os.close(write)


# --- the production server ------------------------------------------------------------------------------------


def _web_processes(server_pid: int) -> list[int]:
    """gunicorn's web processes under `manage.py serve`: the processes whose parent is its gunicorn master."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
                commands[int(entry.name)] = (entry / "cmdline").read_bytes()
    masters = {
        pid for pid, parent in parents.items() if parent == server_pid and b"gunicorn" in commands[pid]
    }
    return sorted(pid for pid, parent in parents.items() if parent in masters)


def _held(pids: list[int], port: int) -> dict[int, int]:
    """Established connections to `port` each process holds (its socket descriptors against /proc/net/tcp)."""
    inodes: set[str] = set()
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    inodes.add(fields[9])
    held = {}
    for pid in pids:
        count = 0
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    count += target.startswith("socket:[") and target[8:-1] in inodes
        held[pid] = count
    return held


@pytest.mark.django_db(transaction=True)
def test_forty_keep_alive_clients_spread_evenly_over_four_web_processes_also_after_one_is_killed(
    world, manage_env, tmp_path
):
    serve = Serve(manage_env, tmp_path / "serve.log", processes=4, threads=2).start()
    clients = [httpx.Client(base_url=serve.url, timeout=30) for _ in range(40)]
    try:
        for client in clients:  # one after the other, as a browser's or a proxy's connections open
            assert client.get("/healthz").status_code == 200
        workers = _web_processes(serve.pid)
        assert len(workers) == 4, workers
        held = _held(workers, serve.port)
        assert sum(held.values()) == 40 and max(held.values()) - min(held.values()) <= 2, held

        killed = workers[0]
        os.kill(
            killed, signal.SIGKILL
        )  # its clients' connections are gone; the arbiter starts another process
        deadline = time.monotonic() + 30
        while (replaced := _web_processes(serve.pid)) == workers or len(replaced) < 4:
            assert time.monotonic() < deadline, serve.log.read_text()
            time.sleep(0.2)
        for _ in range(3):  # the processes holding more than their share ask clients to reconnect
            for client in clients:
                with contextlib.suppress(httpx.RemoteProtocolError):  # only the killed process's connections
                    assert client.get("/healthz").status_code == 200
        held = _held(replaced, serve.port)
        assert sum(held.values()) == 40 and max(held.values()) - min(held.values()) <= 3, held
        assert "Traceback" not in serve.log.read_text()
    finally:
        for client in clients:
            client.close()
        serve.close()
