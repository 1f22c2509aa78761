"""The Targets page's forms: a target's definition (its JSON fields read as objects, secret headers typed once
and never shown again) and the test-connection query."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings

from evaluation.dashboard.forms import DashboardForm
from evaluation.models import TargetKind
from evaluation.targets.definitions import secret_header_lines
from evaluation.targets.kinds import ELASTICSEARCH, HTTP, LMKIT, PYTHON, RAG_HTTP

# A python target's example when the server lists no callable (EVALSITE_PYTHON_TARGETS): the form says so.
PYTHON_EXAMPLE = "mypackage.search.top_k"


def kind_examples() -> list[dict[str, Any]]:
    """A working example per kind for the form's help (docs/evaluation.md, "Evaluate your own system"): its base
    URL and options, accepted by the same checks as a target saved (tests/dashboard/test_target_pages.py)."""
    listed = list(settings.EVALSITE_PYTHON_TARGETS)
    examples: list[tuple[str, str, dict[str, Any], str]] = [
        (LMKIT, "https://search.example.com", {"collection_id": "clapnq", "search_type": "Hybrid",
         "params": {"rerank": True}}, "Another LMKIT One-compatible server (another evalsite is one)."),
        (ELASTICSEARCH, "https://es.example.com:9200", {"index": "docs", "fields": ["title^2", "body"],
         "id_field": "doc_id"}, "Elasticsearch or OpenSearch: a multi_match over the fields; the id from _id, or "
         "from a _source field with id_field."),
        (HTTP, "https://search.example.com/retrieve", {"request_template": {"q": "{{query}}", "k": "{{top_k}}"},
         "response_mapping": {"ids": "matches[].doc_id", "scores": "matches[].score"}},
         "Any JSON endpoint that ranks: {{query}}, {{top_k}}, {{question_id}} are filled in; the answer is read "
         "with JMESPath (ids required)."),
        (RAG_HTTP, "https://rag.example.com/answer", {"request_template": {"question": "{{query}}"},
         "response_mapping": {"answer": "answer", "passage_ids": "sources[].id",
         "passage_texts": "sources[].text"}}, "A system that answers (answer evaluations): answer required; "
         "the passages it used, optional."),
        (PYTHON, "", {"callable": listed[0] if listed else PYTHON_EXAMPLE},
         "A callable (query, top_k) -> [(document_id, score), ...] in the server's process; only those "
         "EVALSITE_PYTHON_TARGETS lists may load"
         + (f" (this server lists {', '.join(listed)})." if listed else " (this server lists none).")),
    ]  # fmt: skip
    return [
        {"kind": kind, "base_url": url, "options": json.dumps(options, indent=2), "note": note}
        for kind, url, options, note in examples
    ]


class JSONObjectField(forms.JSONField):
    """A JSON object typed into a text area ({} when left blank)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3, "class": "mono", "spellcheck": "false"}))
        super().__init__(*args, **kwargs)

    def prepare_value(self, value):
        if value is None or value == {}:  # nothing stored: an empty box (blank is read as {}), never "null"
            return ""
        if isinstance(value, dict):  # shown indented: options are read and edited by people
            return json.dumps(value, indent=2, ensure_ascii=False)
        return super().prepare_value(value)

    def clean(self, value):
        data = super().clean(value)
        if data in (None, ""):
            return {}
        if not isinstance(data, dict):
            raise forms.ValidationError('Enter a JSON object, e.g. {"X-Team": "search"}.')
        return data


class TargetForm(DashboardForm):
    """An external target (evaluation.targets.callers), as POST /lmkit/v1/targets takes it; secret header values are
    typed here and never shown again."""

    ERROR_FIELDS = {
        "target-exists": "name",
        "python-target-not-allowed": "options",
        "invalid-jmespath": "options",
        "url-not-allowed": "base_url",
        "target-secrets-origin": "secret_headers",
    }

    name = forms.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        max_length=100,
        help_text="Letters, digits, '.', '_', '-'; unique among your targets.",
        error_messages={
            "invalid": "Use letters, digits, '.', '_' and '-' only, starting with a letter or digit."
        },
    )
    kind = forms.ChoiceField(choices=[(kind, kind) for kind in TargetKind.values])
    base_url = forms.CharField(
        required=False, max_length=2000, label="Base URL", help_text="http(s)://… (none for python)."
    )
    headers = JSONObjectField(
        required=False, help_text='Plain headers, shown as they are: {"X-Team": "search"}.'
    )
    secret_headers = forms.CharField(
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 2, "class": "mono", "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text="One “Header: value” per line (API keys, basic auth): stored encrypted, never shown again. "
        "Editing: a header named here gets this value, “Header:” alone removes it, the others are kept.",
    )
    timeout_s = forms.FloatField(min_value=0.1, max_value=600, initial=30, label="Timeout (s)")
    concurrency = forms.IntegerField(min_value=1, max_value=64, initial=4, help_text="Calls in flight.")
    rate_limit = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=10_000,
        label="Rate limit",
        help_text="Calls a second; blank: none.",
    )
    options = JSONObjectField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono", "spellcheck": "false"}),
        help_text="What the kind needs, as JSON: an example per kind below "
        "(docs/evaluation.md, “Evaluate your own system”, says every option).",
    )

    def clean_secret_headers(self) -> dict[str, str | None]:
        try:
            return secret_header_lines(self.cleaned_data.get("secret_headers", ""))
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def as_data(self, *, creating: bool) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        secrets = data.pop("secret_headers")
        if creating:
            data["secret_headers"] = {k: v for k, v in secrets.items() if v is not None}
        elif secrets:
            data["secret_headers"] = secrets
        return data


class TargetTestForm(DashboardForm):
    query = forms.CharField(max_length=10_000, initial="test", label="Query")
    top_k = forms.IntegerField(min_value=1, max_value=1000, initial=10, label="Top k")
