"""The floors the code keeps (the import contract): the golden-set app never reaches into evaluation, and the
pure cores (search and ranking, metrics, the quality gate, the heuristic judge, the file formats, the text
vocabularies, the outbound-call guard) load without Django, so they run and are tested as plain Python.

A module listed in PURE that starts importing Django, or any goldenset module importing evaluation, fails here
with the chain that does it. A new pure module is added to PURE by hand; one whose docstring (or its package's)
says it imports no Django and is missing from PURE fails too."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("django", "rest_framework", "django_q", "drf_spectacular")

PURE = [
    "evalsite.bounded_json",
    "evalsite.connection_shares",
    "evalsite.egress",
    "evalsite.errors",
    "evalsite.tenancy.roles",
    "evalsite.http_retries",
    "evalsite.llm.client",
    "evalsite.llm.json_replies",
    "evaluation.answers.configs",
    "evaluation.answers.judge",
    "evaluation.answers.judge_identity",
    "evaluation.answers.judge_llm",
    "evaluation.answers.judge_support",
    "evaluation.answers.judge_votes",
    "evaluation.answers.verdicts",
    "evaluation.answers.writer",
    "evaluation.configs",
    "evaluation.dashboard.chart_html",
    "evaluation.dashboard.charts",
    "evaluation.dashboard.count_charts",
    "evaluation.dashboard.study_charts",
    "evaluation.request_fields",
    "evaluation.judgments.agreement",
    "evaluation.judgments.clicks",
    "evaluation.judgments.assessors",
    "evaluation.judgments.grades",
    "evaluation.judgments.highlight",
    "evaluation.judgments.judgment_files",
    "evaluation.judgments.pooling",
    "evaluation.judgments.rater_agreement",
    "evaluation.judgments.labels",
    "evaluation.judgments.lexical",
    "evaluation.reports.diagnosis",
    "evaluation.reports.gate",
    "evaluation.reports.report_formats",
    "evaluation.retrieval.completeness",
    "evaluation.retrieval.metrics",
    "evaluation.retrieval.run_files",
    "evaluation.retrieval.similarity",
    "evaluation.retrieval.search",
    "evaluation.retrieval.search.bm25",
    "evaluation.retrieval.search.build",
    "evaluation.retrieval.search.corpus",
    "evaluation.retrieval.search.embeddings",
    "evaluation.retrieval.search.engine",
    "evaluation.retrieval.search.explain",
    "evaluation.retrieval.search.fusion",
    "evaluation.retrieval.search.id_table",
    "evaluation.retrieval.search.index_format",
    "evaluation.retrieval.search.kernels",
    "evaluation.retrieval.search.postings",
    "evaluation.retrieval.search.rerank",
    "evaluation.retrieval.search.vectors",
    "evaluation.runs.slices",
    "evaluation.runs.stats",
    "evaluation.studies",
    "evaluation.studies.confirm",
    "evaluation.studies.importance",
    "evaluation.studies.inert",
    "evaluation.watch.cadence",
    "evaluation.watch.gate",
    "evaluation.studies.request",
    "evaluation.studies.search",
    "evaluation.studies.space",
    "evaluation.studies.split",
    "evaluation.targets.callers",
    "evaluation.targets.definitions",
    "evaluation.targets.kinds",
    "evaluation.targets.secret_box",
    "goldenset.beir",
    "goldenset.clear_sentences",
    "goldenset.drift",
    "goldenset.duplicates",
    "goldenset.fluency",
    "goldenset.import_warnings",
    "goldenset.formats",
    "goldenset.formats.json_rows",
    "goldenset.formats.tabular",
    "goldenset.formats.trec",
    "goldenset.formats.yaml_tests",
    "goldenset.formats.tool_cells",
    "goldenset.generation",
    "goldenset.golden_files",
    "goldenset.lexical",
    "goldenset.passage_phrasing",
    "goldenset.quality",
    "goldenset.sample",
    "goldenset.temporal",
    "goldenset.text",
    "goldenset.vocabulary",
    "goldenset.vocabulary.chunks",
    "goldenset.vocabulary.golden_fields",
    "goldenset.vocabulary.grade_scales",
    "goldenset.vocabulary.groundedness",
    "goldenset.vocabulary.metric_names",
    "goldenset.vocabulary.sentences",
    "goldenset.vocabulary.stopwords",
]

# Imports every module named in argv, then prints the framework modules loaded, by the module that loaded them.
PROBE = f"""
import importlib, json, sys
FRAMEWORKS = {FRAMEWORKS!r}
found = {{}}
for name in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(name)
    loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in FRAMEWORKS)
    if loaded:
        found[name] = loaded[:3]
print(json.dumps(found))
"""


def test_the_pure_cores_load_without_django():
    # One interpreter for all (each module charged with what it loads first); no settings configured.
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, *PURE],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {}, probe.stdout


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, inside functions too; relative ones resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
            else:
                found.append((node.lineno, node.module or ""))
    return found


def test_the_golden_set_app_never_imports_evaluation():
    crossing = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "goldenset").rglob("*.py"))
        for line, module in _imports(path)
        if module == "evaluation" or module.startswith("evaluation.")
    ]
    assert crossing == []


def test_the_probe_sees_a_module_that_loads_django():
    """The check above can fail: a module that loads Django is named with what it loaded."""
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, "evalsite.errors", "django.conf"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = json.loads(probe.stdout)
    assert list(found) == ["django.conf"] and found["django.conf"][0].startswith("django"), probe.stdout


def _modules() -> dict[str, Path]:
    found = {}
    for app in ("evalsite", "goldenset", "evaluation"):
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found[name.removesuffix(".__init__")] = path
    return found


SAYS_PURE = re.compile(r"no django import|imports? no django|importing no django", re.IGNORECASE)


def test_a_module_that_says_it_imports_no_django_is_checked_as_pure():
    """What a docstring promises is held: a module, or every module of a package, whose docstring says it imports
    no Django is in PURE, so the probe above checks it."""
    modules = _modules()
    claimed = set()
    for name, path in modules.items():
        if SAYS_PURE.search(ast.get_docstring(ast.parse(path.read_text())) or ""):
            claimed.add(name)
            if path.name == "__init__.py":
                claimed.update(other for other in modules if other.startswith(f"{name}."))
    assert sorted(claimed - set(PURE)) == []


def _module_level_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The app modules a module imports when it is loaded (its top level, under `if` and `try` too, so
    `if TYPE_CHECKING:` counts): `from package import module` names the module, not the package."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    named: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    named.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    found = set()
    for module in named:
        parts = module.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        if parts and ".".join(parts) != name:
            found.add(".".join(parts))
    return found


def test_no_module_imports_itself_back_through_others():
    """No circle of imports among the app modules as they load (what an import inside a function defers is
    left out: those are listed and argued where they stand)."""
    modules = _modules()
    graph = {name: _module_level_imports(name, path, modules) for name, path in modules.items()}
    circles = []
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for following in sorted(graph[node]):
                if following == start:
                    circles.append(" -> ".join([*trail, start]))
                elif following not in seen and following > start:  # each circle once, from its least module
                    seen.add(following)
                    stack.append((following, [*trail, following]))
    assert circles == []


# The project level of evalsite/: what wires the apps together, so it may name them. Every other module under
# evalsite/ is the platform floor (docs/architecture.md), which knows no domain.
PROJECT = {
    "evalsite.settings",  # INSTALLED_APPS and the ENUM names of the schema
    "evalsite.settings_test",
    "evalsite.settings_access",
    "evalsite.urls",  # the apps' URLs, the dashboard's home
    "evalsite.wsgi",
    "evalsite.asgi",
    "evalsite.gunicorn_hooks",  # the production server warms the evaluation indexes up in its master
    "evalsite.middleware",  # reads whether index builds are off (evaluation.retrieval.indexes.builds_off)
    "evalsite.api.schema",  # documents the apps' serializers and base view
    "evalsite.management.commands.serve",
}


def _platform(modules: dict[str, Path]) -> list[str]:
    return sorted(
        n for n in modules if n.split(".")[0] == "evalsite" and n not in PROJECT and n != "evalsite"
    )


def test_the_platform_knows_no_domain():
    modules = _modules()
    reaching = [
        f"{name}:{line} imports {module}"
        for name in _platform(modules)
        for line, module in _imports(modules[name])
        if module.split(".")[0] in ("goldenset", "evaluation")
    ]
    assert reaching == []
    assert {"evalsite.tenancy.models", "evalsite.jobs.services", "evalsite.audit.services"} <= set(
        _platform(modules)
    )


# Evaluation's rooms, lowest first, as docs/architecture.md draws them: each imports only rooms before it.
ROOMS = ("targets", "runs", "retrieval", "answers", "judgments", "studies", "reports", "workbench", "watch")
FACES = ("evaluation.api", "evaluation.dashboard", "evaluation.management")


def test_evaluations_rooms_know_none_of_its_faces():
    """The rooms (the domain's work) serve the faces (REST API, dashboard, commands), never the other way: a room
    module importing a face fails, so a face can be rewritten without touching what it shows."""
    modules = _modules()
    rooms = [name for name in modules if name.split(".")[:2] in ([["evaluation", room] for room in ROOMS])]
    reaching = [
        f"{name}:{line} imports {module}"
        for name in rooms
        for line, module in _imports(modules[name])
        if module.startswith(FACES)
    ]
    assert reaching == []
    assert {
        "evaluation.reports.presenter",
        "evaluation.retrieval.metrics",
        "evaluation.answers.verdicts",
    } <= set(rooms)


def test_every_package_of_evaluation_is_a_room_or_a_face():
    """A new package under evaluation/ is named here, as a room or a face, so the rules on rooms hold it too."""
    packages = {p.parent.name for p in (ROOT / "evaluation").glob("*/__init__.py")} - {"migrations"}
    assert sorted(packages) == sorted([*ROOMS, *(face.split(".")[1] for face in FACES)])


def _room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "evaluation" and parts[1] in ROOMS else None


def _room_imports() -> dict[tuple[str, str], list[str]]:
    """(room, room it imports) -> each import that does it, as file:line. Every import counts: at the top, under
    `if TYPE_CHECKING:` and inside functions alike (a deferred import is still a dependency). `from evaluation
    import runs` and `from evaluation.runs import store` both name the room runs."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, path in sorted(_modules().items()):
        room = _room_of(name)
        if room is None:
            continue
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                named = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            for other in sorted({str(_room_of(m)) for m in named if _room_of(m) not in (None, room)}):
                found.setdefault((room, other), []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of the graph, each once from its least node, shortest first."""
    found: list[list[str]] = []

    def walk(start: str, trail: list[str]) -> None:
        for following in sorted(graph.get(trail[-1], ())):
            if following == start:
                found.append(trail)
            elif following > start and following not in trail:
                walk(start, [*trail, following])

    for start in sorted(graph):
        walk(start, [start])
    return sorted(found, key=lambda trail: (len(trail), trail))


def _said(circle: list[str]) -> str:
    """ "a <-> b" for two rooms that import each other, "a -> b -> c -> a" for a longer circle."""
    return " <-> ".join(circle) if len(circle) == 2 else " -> ".join([*circle, circle[0]])


def test_no_two_rooms_import_each_other():
    """Evaluation's rooms stand in an order (docs/architecture.md): each imports only rooms below it, so no two
    rooms import each other, directly or round a circle of rooms. Every import counts, inside functions and under
    TYPE_CHECKING too. A circle fails with the imports that close it."""
    edges = _room_imports()
    graph: dict[str, set[str]] = {}
    for room, other in edges:
        graph.setdefault(room, set()).add(other)
    circles = _circles(graph)
    closing = sorted(
        {pair for circle in circles for pair in zip(circle, [*circle[1:], circle[0]], strict=True)}
    )
    where = [
        f"{a} -> {b}: {', '.join(edges[a, b][:3])}{' ...' if len(edges[a, b]) > 3 else ''}"
        for a, b in closing
    ]
    said = [_said(circle) for circle in circles]
    assert said == [], "\n".join([*said, "made by:", *where])


def test_each_room_imports_only_rooms_under_it():
    """ROOMS lists the rooms lowest first, as docs/architecture.md draws them: a room importing one listed after
    it fails, so the drawn order stays the code's (the order, once held, rules out every circle too)."""
    upward = [
        f"{room} -> {other}: {where[0]}"
        for (room, other), where in sorted(_room_imports().items())
        if ROOMS.index(other) > ROOMS.index(room)
    ]
    assert upward == []


def test_the_room_circle_check_can_fail():
    graph = {"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert [_said(circle) for circle in _circles(graph)] == ["a <-> b", "c -> d -> e -> c"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# --- imports inside functions, and sizes -----------------------------------------------------------------------


def _unexplained_inner_imports(source: str, path: str) -> list[str]:
    """Imports inside a function with no comment saying why: on their line, or just above their group."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if not isinstance(inner, ast.Import | ast.ImportFrom):
                continue
            if "#" in lines[inner.lineno - 1] or "#" in lines[inner.end_lineno - 1]:
                continue
            above = inner.lineno - 2
            while above >= 0 and (
                not lines[above].strip()
                or lines[above].strip().startswith(("from ", "import ", ")"))
                or lines[above].strip().endswith(",")
            ):
                above -= 1
            if above < 0 or not lines[above].strip().startswith("#"):
                found.append(f"{path}:{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    return found


def test_an_import_inside_a_function_says_why():
    """An import deferred into a function hides a dependency (often a circle); each says why it is there."""
    unexplained = [
        hit
        for name, path in sorted(_modules().items())
        for hit in _unexplained_inner_imports(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert unexplained == []


def test_the_inner_import_check_can_fail():
    source = "def f():\n    x = 1\n    import json\n    return json\n"
    assert _unexplained_inner_imports(source, "m.py") == ["m.py:3: import json"]
    explained = "def f():\n    x = 1\n    # late: a reason\n    import json\n\n    from os import path\n"
    assert _unexplained_inner_imports(explained, "m.py") == []


UNPICKLERS = {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}


def _code_that_can_run_on_load(source: str, path: str) -> list[str]:
    """Imports of a module that loads Python objects by running code (pickle and its kin), and numpy asked to
    (`allow_pickle=True`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Call):
            names = []
            if any(
                k.arg == "allow_pickle" and getattr(k.value, "value", False) is not False
                for k in node.keywords
            ):
                found.append(f"{path}:{node.lineno}: allow_pickle")
        else:
            continue
        found += [f"{path}:{node.lineno}: import {n}" for n in names if n.split(".")[0] in UNPICKLERS]
    return found


def test_nothing_the_product_reads_is_unpickled():
    """Index files and published indexes (and anything else read from disk or the database) are JSON and plain
    arrays: a file or a row written by anything but evalsite must never run code in the process that reads it."""
    found = [
        hit
        for name, path in sorted(_modules().items())
        for hit in _code_that_can_run_on_load(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == []
    planted = "import json\nimport pickle\nfrom marshal import loads\nnp.load(f, allow_pickle=True)\n"
    assert _code_that_can_run_on_load(planted, "m.py") == [
        "m.py:2: import pickle",
        "m.py:3: import marshal",
        "m.py:4: allow_pickle",
    ]


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80
# Hot loops compiled by numba: one kernel per loop keeps numba's view of the data (and its speed); split, each
# part would need its arrays passed again and its own compilation.
KERNELS = {"evaluation.retrieval.search.kernels.top_documents"}


def _too_long() -> dict[str, int]:
    found = {}
    for name, path in _modules().items():
        source = path.read_text()
        if len(source.splitlines()) > MAX_MODULE_LINES:
            found[name] = len(source.splitlines())

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}.{child.name}")
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = child.end_lineno - child.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        found[f"{prefix}.{child.name}"] = length
                    visit(child, f"{prefix}.{child.name}")

        visit(ast.parse(source), name)
    return found


def test_modules_and_functions_stay_short():
    """No app module over 500 lines, no function over 80 (the numba kernels excepted, with the reason above)."""
    assert sorted(set(_too_long()) - KERNELS) == []


def test_the_drawn_map_names_every_platform_app_and_room():
    """docs/architecture.md draws the floors; its drawing names each platform app and each evaluation room (in
    their order), and each of those exists with a docstring saying what it owns."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    drawing = text[text.index("```") : text.index("```", text.index("```") + 3)]
    platform = sorted(p.parent.name for p in (ROOT / "evalsite").glob("*/apps.py"))
    rooms = list(ROOMS)
    assert platform == ["audit", "jobs", "llm", "tenancy"]
    for name in [*platform, *rooms]:
        assert name in drawing, name
    # The rooms are drawn highest first: each over the rooms it may import.
    assert sorted(rooms, key=drawing.index) == rooms[::-1]
    for room in rooms:
        assert ast.get_docstring(ast.parse((ROOT / "evaluation" / room / "__init__.py").read_text())), room
    for app in platform:
        assert ast.get_docstring(ast.parse((ROOT / "evalsite" / app / "__init__.py").read_text())), app
