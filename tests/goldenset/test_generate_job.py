"""POST /lmkit/v1/search/golden-set/generate and the Generate job: validation, sampling reproducibility, the
offline template writer, the chat writer against the scripted server, stale jobs, and real qcluster workers."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from evalsite.audit.models import AuditEvent
from evalsite.jobs import processes
from evalsite.jobs.models import Job, JobStatus
from evalsite.llm.models import LLMCall
from goldenset import services
from goldenset.models import Collection, GoldenJobKind, Origin
from tests.conftest import add_documents
from tests.generation_support import FAULTS, company_name, scripted_writer, synthetic_corpus
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import add_entries
from tests.worker_support import job_ended, job_until

URL = "/lmkit/v1/search/golden-set/generate"


@pytest.fixture
def companies(world) -> Collection:
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(40))
    return collection


@pytest.fixture
def llm(llm_server, settings):
    llm_server.reply(r"Passage:", scripted_writer)
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted-default"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 2
    return llm_server


@pytest.fixture
def gen(world, django_capture_on_commit_callbacks):
    """POST a generate request as the world's tenant; the job runs when the request's transaction commits
    (inline under the test settings, in the worker when a test starts one)."""

    def post(**body):
        with django_capture_on_commit_callbacks(execute=True):
            return world.client.post(URL, {"collection_id": "companies", **body}, format="json")

    return post


def questions(collection: Collection) -> list[str]:
    return list(
        collection.golden_entries.order_by("created_at", "question").values_list("question", flat=True)
    )


# --- the request ---------------------------------------------------------------------------------------------


def test_it_answers_202_with_the_job_the_seed_and_the_backend(world, companies, gen):
    response = gen(count="5", seed="123")  # numbers as strings, as the lmkit curl sends them
    assert response.status_code == 202, response.json()
    body = response.json()
    assert (body["seed"], body["model"], body["backend"]) == (123, "template", "template")
    job = Job.objects.get(pk=body["job_id"])
    assert job.kind == GoldenJobKind.GENERATE and job.collection == companies
    assert job.input["count"] == 5 and job.input["actor"].startswith("api-key:")


def test_a_seed_is_chosen_and_reported_when_none_is_given(world, companies, gen):
    first = gen(count=1).json()
    second = gen(count=1).json()
    assert isinstance(first["seed"], int) and first["seed"] >= 0
    assert first["seed"] != second["seed"]
    assert Job.objects.get(pk=first["job_id"]).result["seed"] == first["seed"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"count": 0}, "count"),
        ({"count": "many"}, "count"),
        ({}, "count"),
        ({"count": 5000}, "count"),
        ({"count": 3, "seed": "-1"}, "seed"),
        ({"count": 3, "seed": "soon"}, "seed"),
        ({"count": 3, "model": "llama3"}, "model"),  # no endpoint configured
    ],
)
def test_bad_input_is_a_400_naming_the_field(world, companies, body, field, gen):
    response = gen(**body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert field in error["message"]
    assert not Job.objects.filter(kind=GoldenJobKind.GENERATE).exists()


def test_another_tenants_collection_is_not_found(world, companies):
    response = world.other_client.post(URL, {"collection_id": "companies", "count": 2}, format="json")
    assert response.status_code == 404
    assert not companies.golden_entries.exists()


def test_llm_mode_needs_a_model_name(world, companies, settings, gen):
    settings.EVALSITE_LLM_BASE_URL = "http://127.0.0.1:9"
    settings.EVALSITE_LLM_MODEL = ""
    response = gen(count=2)
    assert response.status_code == 400 and "model" in response.json()["error"]["message"]


# --- the job, offline ----------------------------------------------------------------------------------------


def test_the_offline_job_stores_generated_entries_with_their_page_and_job(world, companies, gen):
    body = gen(count=10, seed=1).json()
    job = Job.objects.get(pk=body["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    result = job.result
    assert result["accepted"] == 10 == companies.golden_entries.count()
    assert result["pages_sampled"] == (
        result["accepted"] + sum(result["discards"].values()) + result["no_clear_sentence"]
    )
    assert set(result["discards"]) >= {"passage_dependent", "ill_formed", "near_duplicate", "unreadable"}
    assert (result["requested"], result["pages_available"], result["backend"]) == (10, 40, "template")
    assert result["calls"] == 0 and job.progress_done == job.progress_total == result["pages_sampled"]
    for entry in companies.golden_entries.select_related("source_page__document"):
        assert entry.origin == Origin.GENERATED and entry.reviewed is False and entry.job_id == job.pk
        assert entry.expected_document_ids == [entry.source_page.document.external_id]
        assert entry.reference_answer in entry.source_page.text  # the template answers with a page sentence
    documents = [e.expected_document_ids[0] for e in companies.golden_entries.all()]
    assert len(set(documents)) == 10  # at most one page per document
    assert (
        AuditEvent.objects.filter(
            collection_slug="companies", object_type="golden-entry", action="create"
        ).count()
        == 10
    )


def test_the_same_seed_reproduces_the_questions_and_another_seed_does_not(world, companies, gen):
    gen(count=8, seed=99)
    first = questions(companies)
    companies.golden_entries.all().delete()
    gen(count=8, seed=99)
    assert questions(companies) == first
    companies.golden_entries.all().delete()
    gen(count=8, seed=100)
    assert questions(companies) != first


def test_repeated_calls_grow_the_set_and_skip_pages_already_done(world, companies, gen):
    first = Job.objects.get(pk=gen(count=6, seed=5).json()["job_id"]).result
    second = Job.objects.get(pk=gen(count=6, seed=5).json()["job_id"]).result
    assert first["accepted"] == second["accepted"] == 6
    assert second["pages_already_done"] == 6
    assert companies.golden_entries.count() == 12
    pages = list(companies.golden_entries.values_list("source_page_id", flat=True))
    assert len(set(pages)) == 12


def test_pages_without_a_clear_sentence_are_counted_apart_in_the_job_s_result(world, gen):
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    lists = {f"list-{i}": " ".join(f"part{i}x{n} widget{n} gadget{n}" for n in range(20)) for i in range(3)}
    add_documents(collection, {**synthetic_corpus(4), **lists})
    job_id = gen(count=7, seed=1).json()["job_id"]
    body = world.client.get(f"/lmkit/v1/jobs/{job_id}").json()
    result = body["result"]
    assert (result["pages_sampled"], result["accepted"], result["no_clear_sentence"]) == (7, 4, 3)
    assert result["discarded"] == 0 == sum(result["discards"].values())
    assert "no_clear_sentence" not in result["discards"]
    assert any("3 of them offered no clear sentence" in w for w in result["warnings"])


def test_a_short_collection_says_why_fewer_questions_came_back(world, companies, gen):
    result = Job.objects.get(pk=gen(count=60, seed=2).json()["job_id"]).result
    assert result["accepted"] <= 40
    assert any("no more eligible pages" in w for w in result["warnings"])


# --- the job with a chat model (the scripted server) ---------------------------------------------------------


def test_the_llm_job_counts_every_fault_and_caches_its_calls(transactional_db, world, llm, settings, gen):
    # Transactional: the cache is read from the writer's threads, which see committed rows only.
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(12, faults=tuple(FAULTS)))
    add_entries(collection, f"What year was the company {company_name(7)} founded in?")
    body = gen(count=12, seed=3).json()
    assert (body["model"], body["backend"]) == ("scripted-default", "llm")
    job = Job.objects.get(pk=body["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    result = job.result
    for reason, _ in FAULTS.values():
        assert result["discards"][reason] == 1, (reason, result["discards"])
    assert result["discards"]["near_duplicate"] == 1  # the paraphrase of the existing question
    assert result["accepted"] == 12 - len(FAULTS) - 1
    assert result["no_clear_sentence"] == 0  # a chat model asks about any page
    assert result["calls"] == 12 and result["cache_hits"] == 0
    assert collection.golden_entries.filter(origin=Origin.GENERATED).count() == result["accepted"]
    assert LLMCall.objects.count() == 12
    assert [(r.body["model"], r.body["seed"]) for r in llm.requests] == [("scripted-default", 3)] * 12

    # The same seed again: every page already questioned is skipped, the rest are answered from the cache.
    sent = llm.count()
    again = Job.objects.get(pk=gen(count=12, seed=3).json()["job_id"]).result
    assert again["pages_already_done"] == result["accepted"]
    assert again["cache_hits"] == again["calls"] == 12 - result["accepted"]
    assert llm.count() == sent


def test_a_named_model_is_sent_and_recorded(world, llm, companies, gen):
    body = gen(count=2, seed=1, model="other-model").json()
    assert body["model"] == "other-model"
    assert {r.body["model"] for r in llm.requests} == {"other-model"}
    assert Job.objects.get(pk=body["job_id"]).result["model"] == "other-model"


def test_an_unreachable_endpoint_ends_the_job_with_counted_model_errors(world, companies, settings, gen):
    settings.EVALSITE_LLM_BASE_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    settings.EVALSITE_LLM_MODEL = "m"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    job = Job.objects.get(pk=gen(count=30, seed=1).json()["job_id"])
    assert job.status == JobStatus.COMPLETED
    assert job.result["stopped"] == "model_errors" and job.result["accepted"] == 0
    assert job.result["discards"]["model_error"] >= 10
    assert "model errors in a row" in job.result["warnings"][0]


# --- stale jobs ------------------------------------------------------------------------------------------------


def test_a_running_job_without_a_heartbeat_is_requeued_when_polled(
    world, companies, settings, django_capture_on_commit_callbacks
):
    settings.EVALSITE_JOB_STALE_SECONDS = 60
    stale = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.GENERATE,
        collection=companies,
        status=JobStatus.RUNNING,
        input={"seed": 4, "count": 3, "model": "template", "backend": "template", "actor": "test"},
        owner="elsewhere:123:456",
        attempts=1,
        heartbeat_at=timezone.now() - timedelta(seconds=61),
    )
    alive = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.GENERATE,
        collection=companies,
        status=JobStatus.RUNNING,
        owner="elsewhere:124:456",
        heartbeat_at=timezone.now() - timedelta(seconds=5),
    )
    with django_capture_on_commit_callbacks(execute=True):
        world.client.get(f"/lmkit/v1/jobs/{stale.pk}")
    body = world.client.get(f"/lmkit/v1/jobs/{stale.pk}").json()
    # Inline (sync) tasks: re-queued means run again at once, here to completion.
    assert body["status"] == "Completed", body
    assert body["attempts"] == 2
    (event,) = body["history"]
    assert event["event"] == "worker-lost" and "elsewhere:123:456" in event["message"]
    assert "continues where it stopped" in event["message"]
    stale.refresh_from_db()
    assert (stale.retries, stale.owner) == (1, processes.identity())  # who ran it last
    assert world.client.get(f"/lmkit/v1/jobs/{alive.pk}").json()["status"] == "Running"


def test_a_job_whose_worker_died_too_often_fails_job_stale(world, companies, settings):
    settings.EVALSITE_JOB_STALE_SECONDS = 60
    settings.EVALSITE_JOB_MAX_RETRIES = 2
    stale = Job.objects.create(
        tenant=world.tenant,
        kind=GoldenJobKind.GENERATE,
        collection=companies,
        status=JobStatus.RUNNING,
        input={"seed": 4, "count": 3},
        owner="elsewhere:123:456",
        attempts=3,
        retries=2,
        heartbeat_at=timezone.now() - timedelta(seconds=61),
    )
    body = world.client.get(f"/lmkit/v1/jobs/{stale.pk}").json()
    assert body["status"] == "Failed"
    assert body["error"]["code"] == "job-stale"
    assert "re-queued 2 time(s) already" in body["error"]["message"]
    assert body["error"]["details"] == {"attempts": 3, "retries": 2}
    assert [e["event"] for e in body["history"]] == ["worker-lost"]


# --- real workers --------------------------------------------------------------------------------------------


@pytest.fixture
def worker_llm(llm_server, monkeypatch):
    """The scripted model, configured for the test process and for the worker subprocess alike."""
    from django.conf import settings

    llm_server.reply(r"Passage:", scripted_writer)
    for name, value in {
        "EVALSITE_LLM_BASE_URL": llm_server.url,
        "EVALSITE_LLM_MODEL": "scripted-default",
        "EVALSITE_LLM_CONCURRENCY": "4",
        "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        "EVALSITE_JOB_STALE_SECONDS": "4",
    }.items():
        monkeypatch.setenv(name, value)  # the worker's environment (manage_env copies os.environ)
        monkeypatch.setattr(settings, name, int(value) if value.isdigit() else value, raising=False)
    return llm_server


def test_a_real_worker_generates_and_the_same_seed_gives_the_same_questions(
    world, worker_llm, manage_env, transactional_db, gen, qcluster
):
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(30, faults=("Xpassage", "Xunreadable")))
    worker_llm.latency = 0.05
    response = gen(count=10, seed=11)
    assert response.status_code == 202
    body = job_until(world.client, response.json()["job_id"], job_ended, worker=qcluster)
    assert body["status"] == "Completed", body
    result = body["result"]
    assert result["accepted"] == 10 == collection.golden_entries.count()
    assert result["pages_sampled"] == 10 + sum(result["discards"].values())
    first = sorted(questions(collection))

    collection.golden_entries.all().delete()
    LLMCall.objects.all().delete()  # no cache: the model is asked again and answers the same
    again = job_until(world.client, gen(count=10, seed=11).json()["job_id"], job_ended, worker=qcluster)
    assert again["status"] == "Completed" and again["result"]["cache_hits"] == 0
    assert sorted(questions(collection)) == first


def test_a_job_cancelled_in_a_real_worker_stops_and_keeps_its_entries(
    world, worker_llm, manage_env, transactional_db, gen, qcluster
):
    collection = services.collection_create(tenant=world.tenant, slug="companies", actor="test")
    add_documents(collection, synthetic_corpus(40))
    worker_llm.latency = 0.5
    job_id = gen(count=40, seed=1).json()["job_id"]
    job_until(world.client, job_id, lambda body: body["progress_done"] >= 2, worker=qcluster, timeout=60)
    assert world.client.post(f"/lmkit/v1/jobs/{job_id}/cancel").status_code == 200
    time.sleep(3)  # the worker notices at its next page and stops calling
    calls = worker_llm.count()
    time.sleep(2)
    assert worker_llm.count() == calls
    job = Job.objects.get(pk=job_id)
    assert job.status == JobStatus.CANCELLED
    kept = collection.golden_entries.filter(job=job).count()
    assert 2 <= kept < 40
    assert job.result["stopped"] == "cancelled" and job.result["accepted"] == kept  # the counts so far
