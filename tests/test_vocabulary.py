"""One owner per vocabulary: a value set the product stores or defaults to is written once, where it is owned,
and imported everywhere else. A default written out again by hand fails here, named by file and line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evaluation.request_fields import DEFAULT_KS, DEFAULT_KS_TEXT, parse_ks

ROOT = Path(__file__).resolve().parent.parent
APPS = ("evalsite", "goldenset", "evaluation")

# The default cutoffs given as a value (a default=, an initial=, a return, an argument), not in prose ("e.g.").
DEFAULT_KS_SPELLED = re.compile(
    r"""(?:default\s*=|initial\s*=|return|ks\s*=|["']ks["']\s*:)\s*[\[("']\s*1\s*,\s*5\s*,\s*10\b"""
)


def app_sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_the_default_cutoffs_are_written_once():
    assert (parse_ks(None), parse_ks(DEFAULT_KS_TEXT)) == (list(DEFAULT_KS), list(DEFAULT_KS))
    spelled = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in app_sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if DEFAULT_KS_SPELLED.search(line)
    ]
    assert spelled == []


def test_the_pattern_finds_a_default_written_by_hand():
    for line in ('parser.add_argument("--ks", default="1,5,10")', "    return [1, 5, 10]",
                 'initial=lambda: {"ks": "1,5,10"}', "evaluate(ks=[1, 5, 10])"):  # fmt: skip
        assert DEFAULT_KS_SPELLED.search(line), line
    assert not DEFAULT_KS_SPELLED.search('help_text="Comma-separated, e.g. 1,5,10."')


# --- stored value sets ---------------------------------------------------------------------------------------


def _vocabularies() -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Field name -> the value sets stored under it, each with the module that owns it."""
    from evalsite.audit.models import AuditAction, PlatformAuditObject
    from evalsite.jobs.models import JobStatus
    from evaluation.answers import verdicts
    from evaluation.models import EvaluationAuditObject, EvaluationJobKind, LabelLevel, RunKind, RunStatus
    from evaluation.reports import diagnosis
    from evaluation.targets import kinds
    from goldenset.models import GoldenAuditObject, GoldenJobKind, Origin

    def owned(values, owner: str) -> tuple[str, frozenset[str]]:
        return owner, frozenset(str(v) for v in values)

    models = lambda app: f"{app}/models.py"  # noqa: E731
    return {
        "status": [owned(RunStatus.values, models("evaluation")), owned(JobStatus.values, "evalsite/jobs/models.py")],
        "kind": [
            owned(RunKind.values, models("evaluation")),
            owned(kinds.KINDS, "evaluation/targets/kinds.py"),
            owned(EvaluationJobKind.values, models("evaluation")),
            owned(GoldenJobKind.values, models("goldenset")),
        ],
        "target_kind": [owned(kinds.KINDS, "evaluation/targets/kinds.py")],
        "origin": [owned(Origin.values, "goldenset/vocabulary/golden_fields.py")],
        "level": [owned(LabelLevel.values, "evaluation/judgments/labels.py")],
        "action": [owned(AuditAction.values, "evalsite/audit/models.py")],
        "object_type": [
            owned(PlatformAuditObject.values, "evalsite/audit/models.py"),
            owned(GoldenAuditObject.values, models("goldenset")),
            owned(EvaluationAuditObject.values, models("evaluation")),
        ],
        "diagnosis": [
            owned(verdicts.DIAGNOSES, "evaluation/answers/verdicts.py"),
            owned(diagnosis.RETRIEVAL_DIAGNOSES, "evaluation/reports/diagnosis.py"),
        ],
    }  # fmt: skip


def _field(node: ast.AST) -> str | None:
    """The stored field a node reads: `run.status`, `row["status"]`, `row.get("status")`, `status`."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        first = node.args[0] if node.args else None
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    return node.id if isinstance(node, ast.Name) else None


def _strings(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for element in node.elts for c in _strings(element)]
    return []


def stored_values_spelled(source: str, path: str, vocabularies) -> list[str]:
    """Lines where a stored value is written as a string where its field is compared, filtered, passed or built
    (`run.status == "failed"`, `filter(kind="answers")`, `{"diagnosis": "pass"}`), outside the module that owns
    its value set; and lists written out of several values of one set (`choices=["complete", "partial"]`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str | None, list[ast.Constant]]] = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            # A form's or a request's own "action" (a bulk delete) is not the audit trail's.
            pairs += [
                (_field(a), _strings(b)) for a in sides for b in sides if a is not b and _field(a) != "action"
            ]
        elif isinstance(node, ast.keyword) and node.arg:
            pairs.append((node.arg.split("__")[0], _strings(node.value)))
        elif isinstance(node, ast.Dict):
            pairs += [
                (k.value, _strings(v))
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant)
            ]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
            values = {c.value for c in _strings(node)}
            if len(values) == len(node.elts):
                for sets in vocabularies.values():
                    for owner, members in sets:
                        if values <= members and owner != path and len(values) >= 2:
                            found.append(
                                f"{path}:{node.lineno}: {sorted(values)} spelled out (owned by {owner})"
                            )
        for field, constants in pairs:
            for owner, members in vocabularies.get(field, []) if isinstance(field, str) else []:
                found += [
                    f"{path}:{c.lineno}: {field} {c.value!r} (owned by {owner})"
                    for c in constants
                    if c.value in members and owner != path
                ]
    return sorted(set(found))


def test_stored_values_are_written_once_where_they_are_owned():
    vocabularies = _vocabularies()
    spelled = [
        hit
        for path in app_sources()
        for hit in stored_values_spelled(path.read_text(), str(path.relative_to(ROOT)), vocabularies)
    ]
    assert spelled == []


def test_the_check_finds_a_stored_value_written_by_hand():
    vocabularies = _vocabularies()
    for line in ('if run.status == "failed": pass', 'runs.filter(kind="answers")', 'row = {"diagnosis": "pass"}',
                 'if summary.get("status") in ("complete", "partial"): pass', 'x = ["miss", "partial", "pass"]',
                 'audit_record(object_type="target")'):  # fmt: skip
        assert stored_values_spelled(line, "evaluation/somewhere.py", vocabularies), line
    assert not stored_values_spelled('if action == "delete": pass', "evaluation/somewhere.py", vocabularies)
    assert not stored_values_spelled("x = RunStatus.FAILED", "evaluation/somewhere.py", vocabularies)
