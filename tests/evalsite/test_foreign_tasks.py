"""A task this deployment cannot read (signed with another SECRET_KEY: a queue another deployment filled, or left
from before the key changed) is dropped by the broker with a one-line warning, never handed to django-q2, whose
pusher would log a traceback; a readable task beside it is taken as usual. On the broker the settings choose:
the database's on SQLite, Redis on CI's PostgreSQL leg."""

from __future__ import annotations

import logging

import pytest
from django.core import signing
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.signing import PickleSerializer, SignedPackage

pytestmark = pytest.mark.django_db(transaction=True)


def _foreign_package(task: dict) -> str:
    return signing.dumps(task, key="another deployment's key", salt=Conf.PREFIX, serializer=PickleSerializer)


def _take_all(broker) -> list[tuple]:
    taken = []
    for _ in range(3):  # a taking broker hands out one task at a time (Redis), or a batch (the database)
        taken += list(broker.dequeue() or ())
    return taken


def test_a_task_signed_with_another_key_is_dropped_and_a_readable_one_is_taken(caplog):
    broker = get_broker()
    broker.purge_queue()
    # What earlier tests of this process left leased (a purge empties only the queue).
    leased = broker.lock_size()
    readable = SignedPackage.dumps({"id": "ours", "func": "evalsite.jobs.tasks.run_job", "args": ("x",)})
    broker.enqueue(_foreign_package({"id": "theirs", "func": "evalsite.jobs.tasks.run_job", "args": ("y",)}))
    broker.enqueue(readable)
    with caplog.at_level(logging.WARNING, logger="evalsite.jobs.brokers"):
        taken = _take_all(broker)
    assert [SignedPackage.loads(payload)["id"] for _ack, payload in taken] == ["ours"]
    assert "cannot read" in caplog.text and "Traceback" not in caplog.text
    assert broker.queue_size() == 0  # the foreign task is gone, not queued again
    for ack, _payload in taken:  # the readable one, acknowledged: nothing of this test's is left leased
        broker.acknowledge(ack)
    assert broker.lock_size() == leased
