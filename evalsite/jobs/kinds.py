"""The kinds of job, each registered by the app that owns it (its AppConfig.ready) with the handler that runs it.

A handler takes the Job and a progress callback and returns the result dict; it raises EvalsiteError for a
failure the user should read. A kind whose handler continues where an interrupted run stopped says so
(`resumes`), and a job re-queued after its worker died is told that it will.

A handler may spread its work instead (evalsite.jobs.fan_out): it returns a FanOut, one Child per part, and each
part becomes a child job any worker may take; the job waits, its progress the sum of its children's, and once
every child completed, a worker runs its kind's `gather` with the children, whose result is the job's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalsite.jobs.models import Job

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Child:
    """One part of a job's work, run as a child job of `kind` on `input` (`total`: its progress total, known
    before it starts, so that its parent's progress counts it from the start)."""

    kind: str
    input: dict[str, Any]
    total: int = 0


@dataclass(frozen=True)
class FanOut:
    """What a handler returns to spread its work over the workers (see the module's doc)."""

    children: tuple[Child, ...]


Handler = Callable[["Job", Progress], "dict[str, Any] | FanOut"]
# The parent, its children (in the order the FanOut listed them), and a progress callback -> the parent's result.
Gather = Callable[["Job", "list[Job]", Progress], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    name: str
    handler: Handler
    resumes: bool = False
    gather: Gather | None = None


_KINDS: dict[str, JobKind] = {}


def register_job_handler(
    kind: str, handler: Handler, *, resumes: bool = False, gather: Gather | None = None
) -> None:
    """Make a kind of job known, with what runs it: job_create refuses a kind nobody registered, so every
    Job.kind stored has one owner. `gather`: what ends a job whose handler spread its work (FanOut)."""
    registered = JobKind(str(kind), handler, resumes, gather)
    if _KINDS.setdefault(registered.name, registered) != registered:
        raise ValueError(f"job kind {kind!r} registered twice")


def job_kind(name: str) -> JobKind | None:
    return _KINDS.get(name)


# What a worker does on every heartbeat besides beating (a domain's clock: schedules falling due, deliveries to
# try again), registered by the app that owns it. Each must be quick and safe to run in many workers at once.
_TICKS: dict[str, Callable[[], Any]] = {}


def register_tick(name: str, tick: Callable[[], Any]) -> None:
    if _TICKS.setdefault(name, tick) is not tick:
        raise ValueError(f"tick {name!r} registered twice")


def ticks() -> dict[str, Callable[[], Any]]:
    return dict(_TICKS)
