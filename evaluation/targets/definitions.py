"""What a target's definition may hold, checked before it is stored or used: each kind's options, the request
template and response mapping, headers (names are HTTP tokens, values visible ASCII), JMESPath expressions and
the `id_transform` (RE2: linear time), all within LIMITS. Every refusal is a 400 naming the field.
A tenant's regular expression runs on RE2, whose time is linear in the id's length (Python's re backtracks:
``^(a+)+$`` doubles its time with each character); a `python` target loads only a callable the operator listed. Plain Python:
no Django import (evaluation.targets.services stores the definitions, evaluation.targets.callers calls them)."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jmespath
import re2
from jmespath.exceptions import JMESPathError

from evalsite.errors import EvalsiteError
from evaluation.targets.kinds import ELASTICSEARCH, HTTP, KINDS, LMKIT, PYTHON, RAG_HTTP

PLACEHOLDERS = ("query", "top_k", "question_id")


PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+|params\.[A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}")
PARAMS_HELP = "an object of named plain values: the defaults of the template's {{params.NAME}} placeholders"


@dataclass(frozen=True)
class Limits:
    """What a target's fields may hold (docs/operations.md, "Limits"); each is named in the 400 that refuses more."""

    options_bytes: int = 64 * 1024  # the options as JSON
    depth: int = 32  # nesting of options (a request template is one of them)
    headers: int = 50  # plain and secret headers together
    header_name_chars: int = 100
    header_value_chars: int = 4000
    expression_chars: int = 1000  # a JMESPath expression or an id_transform pattern
    expression_nesting: int = 50  # brackets, parentheses and braces open at once in an expression
    index_chars: int = 255  # an Elasticsearch index (Elasticsearch's own limit)
    answer_bytes: int = 32 << 20  # what one call may answer, decoded


LIMITS = Limits()


# The options each kind reads; any other is an error naming it (a misspelt option must not be ignored).
KIND_OPTIONS: dict[str, frozenset[str]] = {
    LMKIT: frozenset({"collection_id", "search_type", "cluster_id", "tenant_id", "params", "id_transform"}),
    ELASTICSEARCH: frozenset({"index", "fields", "id_field", "query_template", "params", "id_transform"}),
    HTTP: frozenset({"request_template", "response_mapping", "params", "id_transform"}),
    RAG_HTTP: frozenset({"request_template", "response_mapping", "params", "id_transform"}),
    PYTHON: frozenset({"callable", "id_transform"}),
}


MAPPING_KEYS = {
    HTTP: ("ids", "scores", "texts"),
    RAG_HTTP: (
        "answer",
        "passage_ids",
        "passage_texts",
        "citations",
        "refused",
        "prompt_tokens",
        "completion_tokens",
    ),
}


REQUIRED_MAPPING = {HTTP: ("ids",), RAG_HTTP: ("answer",)}


def refusal(field_path: str, message: str, code: str = "validation-error", **details) -> EvalsiteError:
    return EvalsiteError(code, f"{field_path}: {message}", details={"field": field_path, **details})


def check_options(kind: str, options: Mapping[str, Any], python_allowed: Sequence[str]) -> dict[str, Any]:
    """A kind's options, checked (each error names `options.<key>`); returns them normalized."""
    if kind not in KINDS:
        raise refusal("kind", f"expected one of {', '.join(KINDS)}, got {kind!r}.", allowed=list(KINDS))
    if not isinstance(options, Mapping):
        raise refusal("options", "expected an object.")
    unknown = sorted(set(options) - KIND_OPTIONS[kind])
    if unknown:
        raise refusal(
            f"options.{unknown[0]}", f"not an option of kind {kind}.", allowed=sorted(KIND_OPTIONS[kind])
        )
    _check_size(options)
    out = dict(options)
    if kind in (ELASTICSEARCH, HTTP, RAG_HTTP) and "params" in out:
        out["params"] = _check_params(out["params"])
    if kind == LMKIT:
        for key in ("collection_id", "search_type", "cluster_id", "tenant_id"):
            if key in out and not isinstance(out[key], str):
                raise refusal(f"options.{key}", "expected a string.")
        if not out.get("collection_id"):
            raise refusal(
                "options.collection_id", "required for kind lmkit: the remote collection to search."
            )
        if "params" in out and not isinstance(out["params"], Mapping):
            raise refusal(
                "options.params", "expected an object of extra search fields (fusion, rerank, ...)."
            )
    elif kind == ELASTICSEARCH:
        if not isinstance(out.get("index"), str) or not out["index"].strip():
            raise refusal("options.index", "required for kind elasticsearch: the index (or alias) to search.")
        out["index"] = check_index(out["index"])
        fields = out.get("fields", ["*"])
        if not isinstance(fields, list) or not fields or not all(isinstance(f, str) and f for f in fields):
            raise refusal("options.fields", "expected a non-empty list of field names.")
        out["fields"] = fields
        if "id_field" in out and (not isinstance(out["id_field"], str) or not out["id_field"]):
            raise refusal("options.id_field", "expected a field name of _source (leave it out to use _id).")
        if "query_template" in out:
            _check_template(out["query_template"], "options.query_template", out.get("params") or {})
    elif kind in (HTTP, RAG_HTTP):
        if "request_template" not in out:
            raise refusal("options.request_template", f"required for kind {kind}.")
        _check_template(out["request_template"], "options.request_template", out.get("params") or {})
        out["response_mapping"] = _check_mapping(kind, out.get("response_mapping"))
    elif kind == PYTHON:
        path = out.get("callable")
        if not isinstance(path, str) or not path:
            raise refusal(
                "options.callable", "required for kind python: a dotted path such as package.module.fn."
            )
        if path not in python_allowed:
            raise refusal(
                "options.callable",
                f"{path!r} is not listed in EVALSITE_PYTHON_TARGETS; only the callables listed there may load.",
                code="python-target-not-allowed",
            )
    if "id_transform" in out:
        id_transform_parts(out["id_transform"])  # raises on a bad one
    return out


def _depth(value: Any) -> int:
    """How deeply a JSON value nests (a scalar is 0), without recursion: a value nested past Python's own
    recursion limit is measured, not crashed on."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, level + 1) for v in item)
        else:
            continue
        deepest = max(deepest, level + 1)
    return deepest


def _check_size(options: Mapping[str, Any]) -> None:
    """Options no deeper than LIMITS.depth and no larger, as JSON, than LIMITS.options_bytes."""
    for key, value in options.items():
        if _depth(value) > LIMITS.depth - 1:
            raise refusal(
                f"options.{key}", f"nested more than {LIMITS.depth} levels deep.", limit=LIMITS.depth
            )
    try:
        size = len(json.dumps(options).encode())
    except (TypeError, ValueError):
        raise refusal("options", "expected a JSON object.") from None
    if size > LIMITS.options_bytes:
        raise refusal(
            "options",
            f"{size} bytes as JSON, over the limit of {LIMITS.options_bytes}.",
            limit=LIMITS.options_bytes,
        )


# An Elasticsearch index, alias or pattern list ("logs-*,docs", "remote:docs"): what Elasticsearch accepts in a
# path, and nothing that leaves it ("/", "?", "#", "%", "..").
_INDEX = re.compile(r"^(?:[A-Za-z0-9_-]+:)?(?:_all|[a-z0-9.*][a-z0-9._*+-]*)$")


def check_index(index: str) -> str:
    """An Elasticsearch `index` option, checked part by part (each error names it); returns it stripped."""
    index = index.strip()
    if len(index) > LIMITS.index_chars:
        raise refusal(
            "options.index", f"longer than {LIMITS.index_chars} characters.", limit=LIMITS.index_chars
        )
    for part in index.split(","):
        name = part.rpartition(":")[2]
        if not _INDEX.match(part) or name in (".", "..") or ".." in name:
            raise refusal(
                "options.index",
                f"{part!r} is not an index name: lowercase letters, digits and . _ - + * (a list with commas, "
                "a remote cluster with cluster:index).",
            )
    return index


def check_headers(headers: Mapping[str, Any], secret_headers: Mapping[str, Any]) -> None:
    """Header names (HTTP tokens) and values (visible ASCII and spaces: no CR, LF or other control character,
    nothing the request cannot encode), within LIMITS; a value of None (a secret removed) is not checked."""
    if len(headers) + len(secret_headers) > LIMITS.headers:
        raise refusal(
            "headers", f"more than {LIMITS.headers} headers (plain and secret).", limit=LIMITS.headers
        )
    for where, found in (("headers", headers), ("secret_headers", secret_headers)):
        for name, value in found.items():
            if (
                not isinstance(name, str)
                or not _HEADER_NAME.match(name)
                or len(name) > LIMITS.header_name_chars
            ):
                raise refusal(
                    where,
                    f"{shown(name)} is not a header name (letters, digits and !#$%&'*+.^_`|~- only, at most "
                    f"{LIMITS.header_name_chars}).",
                )
            if value is None and where == "secret_headers":
                continue
            if not isinstance(value, str) or len(value) > LIMITS.header_value_chars:
                raise refusal(
                    f"{where}.{name}",
                    f"expected a text of at most {LIMITS.header_value_chars} characters.",
                    limit=LIMITS.header_value_chars,
                )
            bad = next((i for i, c in enumerate(value) if not (" " <= c <= "~" or c == "\t")), None)
            if (
                bad is not None
            ):  # its position, not the character: a secret value is never echoed, even in part
                raise refusal(
                    f"{where}.{name}",
                    f"holds a control or non-ASCII character at position {bad + 1}: a header value takes visible "
                    "ASCII characters and spaces only.",
                )


def _check_params(params: Any) -> dict[str, Any]:
    """A template's named parameters and their defaults (what a study varies: params.NAME)."""
    if not isinstance(params, Mapping):
        raise refusal("options.params", f"expected {PARAMS_HELP}.")
    for name, value in params.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise refusal(f"options.params.{shown(name)}", "a name of letters, digits and _ (at most 64).")
        if not isinstance(value, str | int | float | bool) or (isinstance(value, float) and value != value):
            raise refusal(f"options.params.{name}", f"expected {PARAMS_HELP}.")
    return dict(params)


def _check_template(template: Any, field_path: str, params: Mapping[str, Any]) -> None:
    """A JSON value whose placeholders are all known: query, top_k, question_id, or params.NAME with a default
    in options.params."""
    try:
        json.dumps(template)
    except (TypeError, ValueError):
        raise refusal(field_path, "expected a JSON value.") from None
    for name in _placeholders(template):
        if name.startswith("params."):
            if name.removeprefix("params.") not in params:
                raise refusal(
                    field_path,
                    f"placeholder {{{{{name}}}}} has no default: set options.params.{name.removeprefix('params.')}.",
                )
        elif name not in PLACEHOLDERS:
            raise refusal(
                field_path,
                f"unknown placeholder {{{{{name}}}}}; known: {', '.join(PLACEHOLDERS)}, params.NAME.",
            )


def _placeholders(template: Any) -> list[str]:
    if isinstance(template, str):
        return PLACEHOLDER.findall(template)
    if isinstance(template, Mapping):
        return [n for v in template.values() for n in _placeholders(v)]
    if isinstance(template, list):
        return [n for v in template for n in _placeholders(v)]
    return []


def _check_mapping(kind: str, mapping: Any) -> dict[str, str]:
    if not isinstance(mapping, Mapping):
        raise refusal(
            "options.response_mapping",
            f"expected an object of JMESPath expressions ({', '.join(MAPPING_KEYS[kind])}).",
        )
    unknown = sorted(set(mapping) - set(MAPPING_KEYS[kind]))
    if unknown:
        raise refusal(
            f"options.response_mapping.{unknown[0]}", "unknown key.", allowed=list(MAPPING_KEYS[kind])
        )
    for key in REQUIRED_MAPPING[kind]:
        if key not in mapping:
            raise refusal(f"options.response_mapping.{key}", "required.")
    if "passage_texts" in mapping and "passage_ids" not in mapping:
        raise refusal(
            "options.response_mapping.passage_ids", "required with passage_texts (one id per text)."
        )
    for key, expression in mapping.items():
        compile_expression(expression, f"options.response_mapping.{key}")
    return dict(mapping)


def _check_expression(expression: str, field_path: str) -> None:
    """An expression within LIMITS: its length, and how many brackets it opens at once (the JMESPath parser
    recurses once per level)."""
    if len(expression) > LIMITS.expression_chars:
        raise refusal(
            field_path, f"longer than {LIMITS.expression_chars} characters.", limit=LIMITS.expression_chars
        )
    level = deepest = 0
    for c in expression:
        level += (c in "([{") - (c in ")]}")
        deepest = max(deepest, level)
    if deepest > LIMITS.expression_nesting:
        raise refusal(
            field_path,
            f"brackets nested more than {LIMITS.expression_nesting} deep.",
            limit=LIMITS.expression_nesting,
        )


def compile_expression(expression: Any, field_path: str):
    if not isinstance(expression, str) or not expression.strip():
        raise refusal(field_path, "expected a JMESPath expression.")
    _check_expression(expression, field_path)
    try:
        return jmespath.compile(expression)
    except (JMESPathError, RecursionError) as exc:
        message = " ".join(str(exc).split())
        raise refusal(
            field_path, f"not a JMESPath expression ({message}).", code="invalid-jmespath"
        ) from None


def _regex_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a tenant's bad pattern is their 400, not a line in the server's log
    options.max_mem = 8 << 20  # RE2 refuses a pattern whose program needs more
    return options


def compile_regex(text: Any, field_path: str):
    """A tenant's pattern on RE2 (linear time; no backreferences or lookaround), or a 400 naming the field."""
    if not isinstance(text, str):
        raise refusal(field_path, "expected a pattern.")
    _check_expression(text, field_path)
    try:
        return re2.compile(text, _regex_options())
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise refusal(
            field_path,
            f"not a regular expression RE2 runs ({detail}); RE2 takes Python's syntax without backreferences "
            "or lookaround, and runs in time linear in the id.",
        ) from None


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def secret_header_lines(text: str) -> dict[str, str | None]:
    """Secret headers typed one "Header-Name: value" per line (the dashboard's and the admin's form): a name
    with nothing after the colon is None (remove it). ValueError naming the line for any other shape."""
    secrets: dict[str, str | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not _HEADER_NAME.match(name.strip()):
            raise ValueError(f"Line {number}: expected “Header-Name: value”.")
        secrets[name.strip()] = value.strip() or None
    return secrets


def shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def id_transform_parts(raw: Any) -> tuple[str, str, Any]:
    """(how, its text, compiled) of an `id_transform` option: ("regex", pattern, an RE2 pattern) or ("jmespath",
    expression, a compiled expression); else a 400 naming the field."""
    if not isinstance(raw, Mapping) or len(raw) != 1 or next(iter(raw)) not in ("regex", "jmespath"):
        raise refusal(
            "options.id_transform", 'expected {"regex": "<pattern>"} or {"jmespath": "<expression>"}.'
        )
    ((how, text),) = raw.items()
    if how == "regex":
        return how, text, compile_regex(text, "options.id_transform.regex")
    return how, text, compile_expression(text, "options.id_transform.jmespath")


def load_callable(path: str, python_allowed: Sequence[str]) -> Callable:
    """The callable at a dotted path listed in EVALSITE_PYTHON_TARGETS (else a 400 naming it)."""
    if path not in python_allowed:
        raise refusal(
            "options.callable",
            f"{path!r} is not listed in EVALSITE_PYTHON_TARGETS; only the callables listed there may load.",
            code="python-target-not-allowed",
        )
    module_name, _, attribute = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise refusal("options.callable", f"cannot load {path!r} ({type(exc).__name__}: {exc}).") from None
    if not callable(found):
        raise refusal("options.callable", f"{path!r} is not callable.")
    return found
