"""Shared by the evaluation tests."""

import pytest

from evaluation.judgments.pools import pool_create
from evaluation.runs.slices import EVERY
from tests.support import handbook_entries, lucene_and_okapi_runs


@pytest.fixture(autouse=True)
def _fresh_indexes(fresh_indexes):
    """Every test here gets search indexes of its own (tests/conftest.py)."""


@pytest.fixture
def runs(world):
    """Two FullText runs (lucene, okapi) of the three handbook questions, each expecting one document of three:
    the runs also rank the other two, which nobody judged."""
    handbook_entries(world.collection)
    return lucene_and_okapi_runs(world)


@pytest.fixture
def pool(world, runs):
    """A depth-3 pool of those two runs."""
    return pool_create(
        tenant=world.tenant, collection=world.collection, run_ids=[str(r.pk) for r in runs], depth=3,
        raters_per_item=1, subset=EVERY, actor="test",
    )  # fmt: skip
