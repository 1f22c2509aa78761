"""Real-browser tests: Playwright's Python client drives Debian's Chromium against a live server.

Never `playwright install`: the browser is /usr/bin/chromium (apt). Without it these tests skip with the
reason, unless EVALSITE_REQUIRE_BROWSER=1 (CI sets it), where a missing browser is a failure.
Screenshots of each page go to test-artifacts/screenshots/ (not committed): look at them.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from evalsite.tenancy.services import tenant_get_or_create
from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from tests.browser.pages import ARGS, CHROMIUM, open_page
from tests.conftest import add_documents
from tests.dashboard.answer_runs_support import PASSAGES
from tests.support import add_entries, member_of

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright's Python client is not installed (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config, items):
    missing = _missing()
    if missing is None:
        return
    if os.environ.get("EVALSITE_REQUIRE_BROWSER") == "1":
        raise pytest.UsageError(f"EVALSITE_REQUIRE_BROWSER=1 but {missing}")
    skip = pytest.mark.skip(reason=missing)
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser):
    with open_page(browser, {"width": 1280, "height": 900}) as page:
        yield page


@pytest.fixture
def screenshot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, *, max_height: int | None = None) -> Path:
        """The whole page; with max_height, only its top (a 300-row table makes a picture no one reads)."""
        path = SCREENSHOTS / f"{name}.png"
        clip = None
        if max_height:
            width, height = page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            clip = {"x": 0, "y": 0, "width": width, "height": min(height, max_height)}
        page.screenshot(path=str(path), full_page=True, clip=clip)
        return path

    return take


@pytest.fixture(autouse=True)
def _fresh_indexes(fresh_indexes):
    """Every test here gets search indexes of its own (tests/conftest.py)."""


# alice, a member of tenant acme/search, which has the collection "handbook" with the answer tests' passages.
HANDBOOK_USER, HANDBOOK_PASSWORD, HANDBOOK = "alice", "alice-handbook-secret", "handbook"


@pytest.fixture
def handbook_member():
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    user = member_of(tenant, HANDBOOK_USER, password=HANDBOOK_PASSWORD)
    collection = services.collection_create(tenant=tenant, slug=HANDBOOK, name="Handbook", actor="test")
    add_documents(collection, {doc: text for doc, (_, text) in PASSAGES.items()})
    return user


SUBJECTS = ["refund", "shipping", "warranty", "returns"]


@pytest.fixture
def policies_batch():
    """A collection of 16 documents that all share words with 4 questions (one expected document each), and two
    FullText runs of them to depth 10: a pool of well over 30 documents nobody judged."""
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    collection = services.collection_create(tenant=tenant, slug="policies", name="Policies", actor="test")
    add_documents(
        collection,
        {
            f"p{n:02d}": f"Policy note {n}: the {SUBJECTS[n % 4]} rules, with {SUBJECTS[(n + 1) % 4]} and "
            f"{SUBJECTS[(n + 2) % 4]} details for case {n}."
            for n in range(16)
        },
    )
    for n, subject in enumerate(SUBJECTS):
        add_entries(
            collection,
            services.EntryInput(
                question=f"What are the {subject} rules?", expected_document_ids=[f"p{n:02d}"]
            ),
        )
    configs = parse_configs(
        [{"label": "lucene"}, {"label": "okapi", "bm25_variant": "okapi"}], available_rerankers()
    )
    batch_id, _ = evaluate_retrieval(tenant=tenant, collections=[collection], ks=[10], configs=configs)
    member_of(tenant, "alice", password="alice-judges-pools")
    member_of(tenant, "bob", password="bob-judges-pools")
    return batch_id
