"""Shared by the evaluation tests."""

import pytest


@pytest.fixture(autouse=True)
def _fresh_indexes(fresh_indexes):
    """Every test here gets search indexes of its own (tests/conftest.py)."""
