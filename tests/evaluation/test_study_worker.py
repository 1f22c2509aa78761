"""A study as a worker runs it: a real `manage.py worker` cluster on the test database and broker, the study's
trials written as they end, a cancel that stops it after the trial under way (not one trial written once the cancel
is recorded), and a study that completes."""

from __future__ import annotations

import time
from pathlib import Path

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationRun, Study
from goldenset.beir_import import beir_import
from tests.worker_support import job_ended, job_until

URL = "/lmkit/v1/search/evaluate/studies"
CLAPNQ = Path(__file__).resolve().parents[2] / "demo" / "clapnq"


def test_a_study_in_a_real_worker_writes_its_trials_completes_and_a_cancel_stops_one(world, qcluster):
    beir_import(folder=CLAPNQ, tenant=world.tenant, collection_id="clapnq", actor="test")
    body = {
        "collection_id": "clapnq",
        "base": {"search_type": "FullText"},
        "space": {"bm25_k1": {"low": 0.3, "high": 3.0}, "bm25_b": {"low": 0.1, "high": 1.0}},
        "budget": {"trials": 8},
        "seed": 2,
    }
    done = world.client.post(URL, body, format="json").json()
    job = job_until(world.client, done["job_id"], job_ended, worker=qcluster, timeout=120)
    assert job["status"] == "Completed", job
    study = world.client.get(f"{URL}/{done['study_id']}").json()
    assert len(study["trials"]) == 8 and study["confirmation"]["questions"] == 150
    assert job["result"]["confirmation"] == study["confirmation"]
    assert EvaluationRun.objects.filter(job_id=done["job_id"]).count() == 2
    assert AuditEvent.objects.filter(
        object_type="study", object_id=done["study_id"], action="create"
    ).exists()

    # a long one (random proposals, 2000 trials at most), cancelled while its trials run
    long = world.client.post(
        URL, {**body, "sampler": "random", "budget": {"trials": 2000}}, format="json"
    ).json()
    job_until(world.client, long["job_id"], lambda b: b["progress_done"] >= 3, worker=qcluster, timeout=120)
    assert world.client.post(f"/lmkit/v1/jobs/{long['job_id']}/cancel").status_code == 200
    # the trials the study holds once the cancel is recorded: not one is written after it
    at_cancel = len(Study.objects.get(pk=long["study_id"]).trials)
    deadline = time.monotonic() + 30
    while (
        Study.objects.get(pk=long["study_id"]).finished_at is None
    ):  # the study stops after the trial under way
        assert time.monotonic() < deadline, qcluster.log.read_text()
        time.sleep(0.2)
    stopped = Study.objects.get(pk=long["study_id"])
    trials = len(stopped.trials)
    time.sleep(1.5)
    assert len(Study.objects.get(pk=long["study_id"]).trials) == trials < 2000
    assert trials - at_cancel == 0, f"{trials - at_cancel} trials written after the cancel"
    assert Job.objects.get(pk=long["job_id"]).status == JobStatus.CANCELLED
    assert stopped.best is None and stopped.confirmation is None
    assert not EvaluationRun.objects.filter(job_id=long["job_id"]).exists()  # no confirmation runs
    shown = world.client.get(f"{URL}/{long['study_id']}").json()
    assert shown["status"] == "Cancelled" and len(shown["trials"]) == trials
