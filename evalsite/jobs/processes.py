"""Which process holds a job or a leased task, and whether it still lives.

A process is named "host:pid:start", its start time in clock ticks since boot (/proc/<pid>/stat), so a pid
the kernel reuses for another process never passes for the old one. "host" is the host name and the pid
namespace (containers that share a host name, or a kernel, still see different processes under one pid). A
process of this host is checked directly; one of another host is judged by its heartbeats alone.
"""

from __future__ import annotations

import os
import socket
from functools import cache


def _host() -> str:
    try:
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    except OSError:
        namespace = "0"
    return f"{socket.gethostname()}~{namespace}"


HOST = _host()


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count fields after its last ")".
    return stat[stat.rindex(b")") + 2 :].split()[19].decode()


@cache
def _identity(pid: int) -> str:
    return f"{HOST}:{pid}:{_start_ticks(pid) or '0'}"


def identity() -> str:
    """This process's name (cached per pid: a forked child gets its own)."""
    return _identity(os.getpid())


def alive_here(name: str) -> bool | None:
    """Whether the process `name` is alive: True or False for a process of this host, None for another host's
    (or a name this module did not write)."""
    parts = name.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    host, pid, start = parts[0], int(parts[1]), parts[2]
    if host != HOST:
        return None
    ticks = _start_ticks(pid)
    return ticks is not None and (start == "0" or ticks == start)
