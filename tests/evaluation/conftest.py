"""Shared by the evaluation tests."""

import pytest

from evaluation.configs import parse_configs
from evaluation.judgments.pools import pool_create
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs.slices import EVERY
from tests.support import handbook_entries


@pytest.fixture(autouse=True)
def _fresh_indexes(fresh_indexes):
    """Every test here gets search indexes of its own (tests/conftest.py)."""


@pytest.fixture
def pool(world):
    """A depth-3 pool of two FullText runs (lucene, okapi) over the three handbook questions."""
    handbook_entries(world.collection)
    configs = parse_configs(
        [{"label": "lucene"}, {"label": "okapi", "bm25_variant": "okapi"}], available_rerankers()
    )
    _, runs = evaluate_retrieval(tenant=world.tenant, collections=[world.collection], ks=[3], configs=configs)
    return pool_create(
        tenant=world.tenant, collection=world.collection, run_ids=[str(r.pk) for r in runs], depth=3,
        raters_per_item=1, subset=EVERY, actor="test",
    )  # fmt: skip
