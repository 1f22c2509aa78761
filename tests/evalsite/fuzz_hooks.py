"""schemathesis hooks of the fuzz run (tests/evalsite/test_fuzz_schema.py), loaded by its CLI through
SCHEMATHESIS_HOOKS: no request leaves this machine, and a 503 is only the one the run can meet by design."""

from __future__ import annotations

import os
from typing import Any

import schemathesis

# A target's base_url is where the server calls (POST /targets/{name}/test, evaluations through a target):
# every one the fuzzer writes is replaced by this loopback address, where nothing answers.
TARGET_URL = os.environ.get("EVALSITE_FUZZ_TARGET_URL", "http://127.0.0.1:9/")


def _pinned(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: TARGET_URL if key == "base_url" and isinstance(item, str) else _pinned(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_pinned(item) for item in value]
    return value


@schemathesis.hook
def before_call(context, case, kwargs):
    """Every request, in every phase, just before it is sent."""
    if isinstance(case.body, dict | list):
        case.body = _pinned(case.body)
    # The collection every other operation looks up is not deleted: the one made to be is, in its place.
    if (
        case.method == "DELETE"
        and case.operation.path == "/lmkit/v1/collections/{collection_id}"
        and (case.path_parameters or {}).get("collection_id") == "handbook"
    ):
        case.path_parameters["collection_id"] = "scratch"


@schemathesis.check
def dependency_503s_are_index_building(ctx, response, case):
    """The run's database and broker are up, and no search index is built in a request: the one 503 it may meet
    is index-building (a collection the fuzzer created, its index not built yet), with its Retry-After."""
    if response.status_code != 503:
        return None
    code = response.json().get("error", {}).get("code")
    retry_after = response.headers.get("retry-after")  # schemathesis: lowercase names, lists of values
    if code != "index-building" or retry_after != ["5"]:
        raise AssertionError(f"503 {code!r} with Retry-After {retry_after!r}: expected index-building, 5")
    return None
