"""scripts/setup never leaves a newcomer looking at a silent terminal: while pip writes the packages it fetched
(the step that said nothing for 25 s), a line every few seconds says it is still installing.

The script under test is the real one, copied into a folder of its own; the pip it drives is a stand-in that
prints what pip prints and then takes its time, as pip's install step does (a real install needs the network and
a minute)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SLOW_PIP = """#!/usr/bin/env bash
# A stand-in for `.venv/bin/python -m pip install ...`: pip's lines, then a slow, silent install step.
echo "Collecting Django>=5.2"
echo "Collecting numba>=0.60"
echo "Installing collected packages: numba, django"
sleep {seconds}
echo "Successfully installed django-5.2 numba-0.61"
"""


def _project(tmp_path: Path, seconds: float) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup", tmp_path / "scripts" / "setup")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(SLOW_PIP.format(seconds=seconds))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def test_the_install_step_says_it_is_still_installing_until_it_is_done(tmp_path):
    project = _project(tmp_path, seconds=4.5)
    env = {**os.environ, "EVALSITE_SETUP_TICK": "1"}
    started = time.monotonic()
    with subprocess.Popen(
        ["bash", "scripts/setup"], cwd=project, env=env, stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        lines = [(time.monotonic() - started, line.rstrip()) for line in process.stdout]
        assert process.wait(timeout=30) == 0
    texts = [text for _, text in lines]
    assert "  installing 2 packages ..." in texts
    assert texts[-1].startswith("Installed in ")
    # After "installing", no gap of more than two ticks without a line, and the ticks say so.
    first = texts.index("  installing 2 packages ...")
    times = [at for at, _ in lines[first:]]
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) < 2.5, lines
    assert sum(text.startswith("  still installing (") for text in texts) >= 3, texts
    # The ticker is gone with the script: the output ended when the install did.
    assert lines[-1][0] < 4.5 + 2.5
    assert "Successfully installed" in (project / ".venv" / "install.log").read_text()


def test_a_failed_install_stops_the_ticker_and_shows_the_log(tmp_path):
    project = _project(tmp_path, seconds=1)
    python = project / ".venv" / "bin" / "python"
    python.write_text(
        python.read_text().replace('echo "Successfully', 'echo "ERROR: no such package"; exit 1 #')
    )
    done = subprocess.run(
        ["bash", "scripts/setup"],
        cwd=project,
        env={**os.environ, "EVALSITE_SETUP_TICK": "1"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "The install failed" in done.stderr and "ERROR: no such package" in done.stderr
