"""The README's examples run as written: every ``console`` block's commands, in a fresh
directory holding the files the README tells the reader to save, print what it shows.

A ``console`` block is ``$ COMMAND`` lines, each followed by its expected output (stdout
and stderr together). ``<…>`` in an expected line matches any text within that line
(timings, speeds). A file is a fenced block right after a line that says "Save this as
`NAME`" (or "as `NAME`", for the launch file); the test writes it before running anything.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def saved_files(text: str) -> dict[str, str]:
    """name -> content of every fenced block the prose before it says to save."""
    files = {}
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip().splitlines()[-3:]
        named = re.findall(r"as `([\w.]+)`", " ".join(before))
        if named and m.group(1) in ("cuda", "json"):
            files[named[-1]] = m.group(2)
    return files


def console_examples(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of every ``$`` line in the console blocks."""
    examples = []
    for m in FENCE.finditer(text):
        if m.group(1) != "console":
            continue
        for chunk in re.split(r"^\$ ", m.group(2), flags=re.M)[1:]:
            command, *expected = chunk.rstrip("\n").split("\n")
            examples.append((command, expected))
    return examples


def matches(expected: str, got: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("<…>"))
    return re.fullmatch(pattern, got) is not None


EXAMPLES = console_examples(README)


def test_the_readme_has_examples_and_files():
    files = saved_files(README)
    assert {"scale.cu", "half.cu", "scale.json"} <= set(files)
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("command,expected", EXAMPLES, ids=[c.split()[2] + " " + c.split()[1] for c, _ in EXAMPLES])
def test_readme_example(command, expected, tmp_path):
    for name, content in saved_files(README).items():
        (tmp_path / name).write_text(content)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    argv = shlex.split(command)
    assert argv[0] == "qwengpu-mlx"
    env = dict(os.environ, COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "qwengpu_mlx", *argv[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    got = (done.stdout + done.stderr).rstrip("\n").split("\n")
    assert len(got) == len(expected), f"{command}\n--- README\n" + "\n".join(expected) + "\n--- got\n" + "\n".join(got)
    for want, line in zip(expected, got):
        assert matches(want, line), f"{command}\n README: {want}\n got:    {line}"
