"""Targets: the tenant's external systems (evaluation.targets.callers calls them). Create, change, delete (audited),
their secrets sealed (evaluation.targets.secret_box), and "test connection"."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.egress import EgressPolicy, EgressRefused, check_url, origin
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.models import Tenant
from evaluation.configs import RunConfig
from evaluation.models import EvaluationAuditObject, Target
from evaluation.targets.callers import (
    TargetClient,
    TargetError,
    TargetRefused,
    TargetSpec,
    read_answer,
    read_hits,
)
from evaluation.targets.definitions import check_headers, check_options
from evaluation.targets.kinds import LMKIT, PYTHON, RAG_HTTP, RETRIEVAL_KINDS
from evaluation.targets.secret_box import SecretBox, derived_key
from goldenset.models import Collection

FIELDS = (
    "name",
    "kind",
    "base_url",
    "headers",
    "secret_headers",
    "timeout_s",
    "concurrency",
    "rate_limit",
    "options",
)
SHOWN = ("name", "kind", "base_url", "headers", "timeout_s", "concurrency", "rate_limit", "options")


def secret_box() -> SecretBox:
    keys: list[str | bytes] = list(settings.EVALSITE_TARGET_KEYS) or [derived_key(settings.SECRET_KEY)]
    return SecretBox(keys)


def egress_policy() -> EgressPolicy:
    """The operator's allowance for the URLs tenants set (EVALSITE_OUTBOUND_ALLOW; checked at start-up)."""
    return EgressPolicy.parse(settings.EVALSITE_OUTBOUND_ALLOW)


def target_get(*, tenant: Tenant, name: str) -> Target:
    target = Target.objects.filter(tenant=tenant, name=name).first()
    if target is None:
        raise NotFound("target", name)
    return target


def targets_list(*, tenant: Tenant):
    return Target.objects.filter(tenant=tenant).order_by("name")


def target_names(*, tenant: Tenant, kinds: Sequence[str]) -> list[str]:
    """The names of the tenant's targets of these kinds (what a retrieval or an answer evaluation can call)."""
    found = Target.objects.filter(tenant=tenant, kind__in=list(kinds)).order_by("name")
    return list(found.values_list("name", flat=True))


def target_spec(target: Target) -> TargetSpec:
    """What a call needs, secrets decrypted."""
    return TargetSpec(
        name=target.name,
        kind=target.kind,
        base_url=target.base_url,
        headers=dict(target.headers or {}),
        secret_headers=secret_box().open(target.secret_headers_sealed),
        timeout_s=target.timeout_s,
        concurrency=target.concurrency,
        rate_limit=target.rate_limit,
        options=dict(target.options or {}),
    )


def resolve_targets(
    tenant: Tenant,
    collections: Sequence[Collection],
    configs: Sequence[RunConfig],
    kinds: Sequence[str] = RETRIEVAL_KINDS,
) -> dict[str, Target]:
    """The tenant's targets the configurations name, by name; a 400 naming `configs[i].target` for one it does
    not have (another tenant's is as unknown as a missing one), one of another kind than `kinds` (an answering
    target in a retrieval evaluation, a search target in an answer evaluation), or several collections."""
    found: dict[str, Target] = {}
    for i, config in enumerate(configs):
        if not config.target:
            continue
        field = f"configs[{i}].target"
        target = Target.objects.filter(tenant=tenant, name=config.target).first()
        if target is None:
            raise EvalsiteError(
                "unknown-target", f"{field}: no target named {config.target!r}.", details={"field": field}
            )
        if target.kind not in kinds:
            what = "answers questions" if target.kind == RAG_HTTP else "returns rankings"
            raise EvalsiteError(
                "target-kind-mismatch",
                f"{field}: target {config.target!r} is of kind {target.kind}, which {what}; this evaluation "
                f"needs one of {', '.join(kinds)}.",
                details={"field": field},
            )
        if len(collections) > 1:
            raise EvalsiteError(
                "validation-error",
                f"{field}: a target is evaluated against one collection at a time.",
                details={"field": field},
            )
        check_config_params(target, dict(getattr(config, "params", ())), f"configs[{i}].params")
        found[config.target] = target
    return found


def check_config_params(target: Target, params: dict[str, Any], field: str) -> None:
    """Parameters a configuration sets for its target: an lmkit target takes any (extra search fields); a
    template's are the names its options.params gives defaults for; a python target takes none."""
    if not params or target.kind == LMKIT:
        return
    known = dict((target.options or {}).get("params") or {})
    for name in params:
        if target.kind == PYTHON or name not in known:
            listed = ", ".join(known) or "none"
            raise EvalsiteError(
                "validation-error",
                f"{field}.{name}: target {target.name!r} has no parameter {name!r} (its options.params: {listed}).",
                details={"field": f"{field}.{name}", "allowed": sorted(known)},
            )


def with_params(spec: TargetSpec, params: Mapping[str, Any]) -> TargetSpec:
    """The spec with `params` over its options.params (what a template's {{params.NAME}} and lmkit's extra
    search fields read)."""
    if not params:
        return spec
    merged = {**dict(spec.options.get("params") or {}), **params}
    return replace(spec, options={**spec.options, "params": merged})


def target_client(target: Target, params: Mapping[str, Any] | None = None) -> TargetClient:
    """A client of the target; `params` over its options.params (a configuration's, a study trial's)."""
    spec = with_params(target_spec(target), params or {})
    # A target stored before the header limits (a CR or a non-ASCII value) is a 400 naming the header, to edit,
    # not a failure inside the HTTP client.
    check_headers(spec.headers, spec.secret_headers)
    return TargetClient(spec, settings.EVALSITE_PYTHON_TARGETS, egress_policy())


def snapshot(target: Target) -> dict[str, Any]:
    """The target as the API shows it and the audit trail records it: secret header NAMES only."""
    data = {name: getattr(target, name) for name in SHOWN}
    data["secret_headers"] = list(target.secret_header_names or [])
    return data


def target_check(
    kind: str,
    options: Mapping[str, Any],
    base_url: str,
    *,
    headers: Mapping[str, Any] | None = None,
    secret_headers: Mapping[str, Any] | None = None,
    stored: Target | None = None,
) -> dict[str, Any]:
    """Every check of a target's fields before anything is stored (the API, the dashboard and the admin call
    this): the kind's options, the headers, the URL against the egress policy, and, for a `stored` target whose
    scheme, host or port changes, that its secret headers are sent again. Returns the options normalized."""
    options = check_options(kind, options, settings.EVALSITE_PYTHON_TARGETS)
    kept = {name: "" for name in (stored.secret_header_names or [])} if stored is not None else {}
    check_headers(headers or {}, {**kept, **(secret_headers or {})})  # the kept ones count too
    if kind != PYTHON:
        try:
            check_url(base_url, egress_policy())
        except EgressRefused as exc:
            code = "validation-error" if exc.rule in ("url", "scheme", "userinfo") else "url-not-allowed"
            raise EvalsiteError(code, exc.message, details={"field": "base_url", "rule": exc.rule}) from None
    if stored is not None and stored.secret_header_names and origin(base_url) != origin(stored.base_url):
        # Secrets were given for one server: re-pointing the target must not carry them to another.
        missing = [name for name in stored.secret_header_names if name not in (secret_headers or {})]
        if missing:
            raise EvalsiteError(
                "target-secrets-origin",
                f"secret_headers: the base_url's scheme, host or port changes, and the stored secret headers "
                f"({', '.join(missing)}) were given for the old one: send each again in the same change (a value "
                "for the new server, or drop it: null over the API, “Header:” alone on the form).",
                details={"field": "secret_headers", "names": missing},
            )
    return options


def target_create(*, tenant: Tenant, data: Mapping[str, Any], actor: str) -> Target:
    """A new target from validated fields (the serializer checked their types)."""
    options = target_check(
        data["kind"],
        data.get("options") or {},
        data.get("base_url") or "",
        headers=data.get("headers") or {},
        secret_headers=data.get("secret_headers") or {},
    )
    secrets = dict(data.get("secret_headers") or {})
    target = Target(
        tenant=tenant,
        name=data["name"],
        kind=data["kind"],
        base_url=data.get("base_url") or "",
        headers=dict(data.get("headers") or {}),
        secret_headers_sealed=secret_box().seal(secrets),
        secret_header_names=sorted(secrets),
        timeout_s=data.get("timeout_s", 30.0),
        concurrency=data.get("concurrency", 4),
        rate_limit=data.get("rate_limit"),
        options=options,
    )
    return _save(target, AuditAction.CREATE, lambda: snapshot(target), actor)


def target_update(*, target: Target, data: Mapping[str, Any], actor: str) -> Target:
    """PATCH: the fields sent change. `secret_headers` replaces the secret values it names (null removes one);
    the others are kept, still sealed."""
    before = snapshot(target)
    kind = data.get("kind", target.kind)
    options = data.get("options", target.options)
    base_url = data.get("base_url", target.base_url)
    checked = target_check(
        kind,
        options or {},
        base_url or "",
        headers=data.get("headers", target.headers) or {},
        secret_headers=data.get("secret_headers") or {},
        stored=target,
    )
    for name in ("name", "kind", "base_url", "headers", "timeout_s", "concurrency", "rate_limit"):
        if name in data:
            setattr(target, name, data[name] if name != "base_url" else data[name] or "")
    target.options = checked
    if "secret_headers" in data:
        box = secret_box()
        secrets = box.open(target.secret_headers_sealed)
        for header, value in (data["secret_headers"] or {}).items():
            if value is None:
                secrets.pop(header, None)
            else:
                secrets[header] = value
        target.secret_headers_sealed = box.seal(secrets)
        target.secret_header_names = sorted(secrets)

    def changes() -> dict[str, list[Any]]:
        after = snapshot(target)
        changed = {k: [before[k], after[k]] for k in after if before[k] != after[k]}
        if "secret_headers" in data:  # values sent: recorded by name even when the names stay the same
            changed.setdefault("secret_headers", [before["secret_headers"], after["secret_headers"]])
        return changed

    return _save(target, AuditAction.UPDATE, changes, actor)


def _save(target: Target, action: str, changes: Callable[[], dict[str, Any]], actor: str) -> Target:
    """Save the target and its audit event together; a name the tenant has already is a 409."""
    try:
        with transaction.atomic():
            target.save()
            audit_record(
                tenant=target.tenant, action=action, object_type=EvaluationAuditObject.TARGET, object_id=target.name, actor=actor,
                changes=changes(),
            )  # fmt: skip
    except IntegrityError:
        raise EvalsiteError(
            "target-exists",
            f"name: a target named {target.name!r} exists.",
            details={"field": "name"},
            status=409,
        ) from None
    return target


def target_delete(*, target: Target, actor: str) -> None:
    with transaction.atomic():
        audit_record(
            tenant=target.tenant, action=AuditAction.DELETE, object_type=EvaluationAuditObject.TARGET, object_id=target.name, actor=actor,
            changes=snapshot(target),
        )  # fmt: skip
        target.delete()


def target_test(*, target: Target, query: str, top_k: int = 10) -> dict[str, Any]:
    """One query through the target: the mapped ids and scores beside the start of its JSON answer (as much as
    EVALSITE_TARGET_TEST_ECHO_CHARS lets a tenant read), or the exact error (the mapping expression and what it
    found, or the HTTP failure)."""
    started = time.perf_counter()
    out: dict[str, Any] = {"query": query, "top_k": top_k, "ok": False, "results": [], "error": "", "raw": ""}
    try:
        with target_client(target) as client:
            if target.kind == PYTHON:
                hits = client.search(query, top_k, "test")
            else:
                payload, latency_ms, attempts, raw = client.call(query, top_k, "test")
                out["raw"] = raw[: settings.EVALSITE_TARGET_TEST_ECHO_CHARS]  # what the operator lets be read
                if target.kind in RETRIEVAL_KINDS:
                    hits = read_hits(client.spec, payload, top_k, latency_ms, attempts)
                else:  # an answering target: its answer and the passages it used
                    hits = None
                    rag = read_answer(client.spec, payload, latency_ms, attempts)
                    out["answer"] = {
                        "text": rag.text,
                        "refused": rag.refused,
                        "passage_ids": rag.passage_ids,
                        "cited_ids": rag.cited_ids,
                    }
                    out["latency_ms"] = round(latency_ms, 1)
        if hits is not None:
            out["results"] = [
                {"rank": i + 1, "document_id": doc, "score": None if hits.scores is None else hits.scores[i]}
                for i, doc in enumerate(hits.ids)
            ]
            out["latency_ms"] = round(hits.latency_ms, 1)
        out["ok"] = True
    except TargetRefused as exc:  # the URL's host resolved to an address the policy refuses: nothing was sent
        raise EvalsiteError(
            "url-not-allowed", exc.problem, details={"field": "base_url", "rule": exc.rule}
        ) from None
    except TargetError as exc:
        out["error"] = exc.problem
    out["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return out
