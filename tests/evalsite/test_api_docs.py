"""The OpenAPI schema and the interactive docs are served, with every asset from this server (no CDN)."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command


def test_the_schema_generates_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    text = target.read_text()
    for path in (
        "/lmkit/v1/search/golden-set:",
        "/lmkit/v1/search/golden-set/{entry_id}:",
        "/lmkit/v1/jobs/{job_id}:",
    ):
        assert path in text


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/api/docs", "/api/redoc"])
def test_the_docs_load_only_local_assets(client, page):
    response = client.get(page)
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, "the docs page references no assets"
    assert not [a for a in assets if a.startswith(("http:", "https:", "//"))]
    static = [a for a in assets if a.startswith("/static/")]
    assert static, "the docs page references no asset of this server"
    for asset in static:
        served = client.get(asset)
        served.close()  # a streamed file response: close it, or its file handle leaks
        assert served.status_code == 200, asset
    assert client.get("/api/schema").status_code == 200
