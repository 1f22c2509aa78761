"""The dashboard's form of a new schedule: the fields of POST /search/evaluate/schedules, laid out for people (a
webhook, a Slack webhook and e-mail addresses rather than a list of channels), read into the body the service
checks (evaluation.watch.schedules), whose errors land on the field they name."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from evalsite.errors import EvalsiteError

CONFIGS_HELP = 'A JSON list of configurations as /search/evaluate takes them, e.g. [{"label": "bm25"}, {"preset": "tuned"}].'


class ScheduleForm(forms.Form):
    collection = forms.ChoiceField()
    name = forms.CharField(max_length=100)
    configs = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), initial='[{"label": "FullText"}]',
                              help_text=CONFIGS_HELP)  # fmt: skip
    cron = forms.CharField(required=False, max_length=200, initial="0 3 * * *",
                           help_text="Five fields (minute hour day month weekday); or every N minutes below.")  # fmt: skip
    every_minutes = forms.IntegerField(required=False, min_value=1, label="Every N minutes")
    timezone = forms.CharField(
        max_length=64, initial="UTC", help_text='An IANA time zone, e.g. "Europe/Paris".'
    )
    metric = forms.CharField(max_length=40, initial="ndcg@10", label="Gate: metric")
    minimum = forms.FloatField(required=False, min_value=0, max_value=1, label="Gate: at least")
    max_drop = forms.FloatField(required=False, min_value=0, max_value=1, label="Gate: largest drop",
                                help_text="Against the last passing run, judged by the paired test.")  # fmt: skip
    max_drift = forms.IntegerField(required=False, min_value=0, label="Gate: drifted entries at most")
    webhook = forms.CharField(required=False, max_length=2000, label="Webhook URL (JSON body)")
    slack = forms.CharField(required=False, max_length=2000, label="Slack-compatible webhook URL")
    emails = forms.CharField(
        required=False, max_length=2000, label="E-mail addresses", help_text="Comma-separated."
    )
    enabled = forms.BooleanField(required=False, initial=True)

    FIELD_OF = {"gate.metric": "metric", "gate.min": "minimum", "gate.max_drop": "max_drop",
                "gate.max_drift": "max_drift", "timezone": "timezone", "cron": "cron",
                "every_minutes": "every_minutes", "name": "name"}  # fmt: skip

    def __init__(self, *args: Any, collections: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice = self.fields["collection"]
        assert isinstance(choice, forms.ChoiceField)
        choice.choices = [(slug, slug) for slug in collections]

    def clean_configs(self) -> list:
        try:
            value = json.loads(self.cleaned_data["configs"])
        except ValueError:
            raise forms.ValidationError("Not JSON: " + CONFIGS_HELP) from None
        if not isinstance(value, list):
            raise forms.ValidationError(CONFIGS_HELP)
        return value

    def body(self) -> dict[str, Any]:
        """The schedule's fields as the API takes them."""
        data = self.cleaned_data
        channels: list[dict] = []
        if data.get("webhook"):
            channels.append({"kind": "webhook", "url": data["webhook"], "format": "json"})
        if data.get("slack"):
            channels.append({"kind": "webhook", "url": data["slack"], "format": "slack"})
        emails = [e.strip() for e in (data.get("emails") or "").split(",") if e.strip()]
        if emails:
            channels.append({"kind": "email", "to": emails})
        gate = {"metric": data["metric"], "min": data.get("minimum"), "max_drop": data.get("max_drop"),
                "max_drift": data.get("max_drift")}  # fmt: skip
        every = data.get("every_minutes")
        return {"name": data["name"], "configs": data["configs"], "cron": None if every else data.get("cron") or None,
                "every_minutes": every, "timezone": data["timezone"], "gate": gate, "channels": channels,
                "enabled": data.get("enabled", False)}  # fmt: skip

    def refused(self, exc: EvalsiteError) -> None:
        """The service's refusal on the field it names (the form's own errors otherwise)."""
        field = str(exc.details.get("field", ""))
        target: str | None
        if field.startswith("configs"):
            target = "configs"
        elif field.startswith("channels"):
            target = "webhook"
        else:
            target = self.FIELD_OF.get(field)
        self.add_error(target, exc.message)
