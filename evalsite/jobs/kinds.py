"""The kinds of job, each registered by the app that owns it (its AppConfig.ready) with the handler that runs it.

A handler takes the Job and a progress callback and returns the result dict; it raises EvalsiteError for a
failure the user should read. A kind whose handler continues where an interrupted run stopped says so
(`resumes`), and a job re-queued after its worker died is told that it will."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalsite.jobs.models import Job

Progress = Callable[[int, int], None]
Handler = Callable[["Job", Progress], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    name: str
    handler: Handler
    resumes: bool = False


_KINDS: dict[str, JobKind] = {}


def register_job_handler(kind: str, handler: Handler, *, resumes: bool = False) -> None:
    """Make a kind of job known, with what runs it: job_create refuses a kind nobody registered, so every
    Job.kind stored has one owner."""
    registered = JobKind(str(kind), handler, resumes)
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
