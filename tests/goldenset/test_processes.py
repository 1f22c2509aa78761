"""Who holds a job: process names that survive pid reuse and never judge another machine's or container's
processes."""

from __future__ import annotations

import socket
import subprocess
import sys

from evalsite.jobs import processes


def test_this_process_is_alive_and_named_by_host_namespace_pid_and_start():
    name = processes.identity()
    host, pid, start = name.rsplit(":", 2)
    assert host == processes.HOST and host.startswith(f"{socket.gethostname()}~")
    assert int(pid) > 0 and start.isdigit()
    assert processes.alive_here(name) is True


def test_a_process_that_exited_is_gone_and_a_reused_pid_is_not_taken_for_it():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ticks = processes._start_ticks(child.pid)
        assert processes.alive_here(f"{processes.HOST}:{child.pid}:{ticks}") is True
        # The same pid with another start time is another process: the one named is gone.
        assert processes.alive_here(f"{processes.HOST}:{child.pid}:{int(ticks) + 1}") is False
    finally:
        child.kill()
        child.wait()
    assert processes.alive_here(f"{processes.HOST}:{child.pid}:{ticks}") is False


def test_another_machine_or_pid_namespace_is_not_judged_here():
    assert processes.alive_here("elsewhere~4026531836:1:1") is None
    assert processes.alive_here(f"{socket.gethostname()}~1:1:1") is None  # same host name, another container
    assert processes.alive_here("not a process name") is None
