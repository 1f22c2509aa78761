"""One owner per vocabulary: a value set the product stores or defaults to is written once, where it is owned,
and imported everywhere else. A default written out again by hand fails here, named by file and line."""

from __future__ import annotations

import re
from pathlib import Path

from evaluation.configs import DEFAULT_KS, DEFAULT_KS_TEXT, parse_ks

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
