"""Every file of this repository that the code, the tests, the scripts and the docs name by path exists.

A reader sent to a page that is not there (a design page the repo never had) has no way to tell a stale pointer
from a missing document. Paths outside the repository (`../shared/...`, the tools' own files) are not ours to hold.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A page of ours named in text: one under docs/ (`docs/api.md`), or one of the capitalised pages a folder holds
# (`README.md`, `demo/clapnq/SOURCE.md`). Lowercase names elsewhere are the tests' made-up uploads (`notes.md`).
PAGE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*(?:[A-Z][A-Z_]*|(?<=docs/)[\w-]+)\.md)\b")
SUFFIXES = (".py", ".md", ".html", ".js", ".css", ".toml", ".sh", ".txt", "")


def _tracked() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    return [ROOT / name for name in names if name and Path(name).suffix in SUFFIXES]


def _exists(name: str, where: Path) -> bool:
    return (ROOT / name).exists() or (where.parent / name).exists()


def test_every_page_the_repository_names_is_in_it():
    missing = []
    for path in _tracked():
        if not path.is_file() or "fixtures" in path.parts:
            continue  # the tools' files are theirs, as written
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for name in PAGE.findall(line):
                if "../shared/" in line or "shared/" + name in line:
                    continue  # the workplace's shared folder, beside the repository
                if not _exists(name, path):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {name}")
    assert missing == [], "\n".join(missing)
