"""The shell blocks the docs mark runnable (`<!-- runnable -->` on the line before a ```bash
fence) run and succeed, so the docs cannot rot. They run as a reader following the site would:
pages in the order of mkdocs.yml's nav, every block in one working directory that has the
repository's recipes/, with the `curate` of this Python on the PATH. Getting started writes the
demo corpus the later blocks read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKER = "<!-- runnable -->"
BLOCK = re.compile(r"^<!-- runnable -->\n```bash\n(.*?)^```$", re.M | re.S)


def nav_pages() -> list[Path]:
    """The pages of mkdocs.yml's nav, in order."""
    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return [DOCS / page for page in walk(nav)]


def runnable_blocks() -> list[tuple[str, str]]:
    """(page, script) of every runnable block, in reading order."""
    blocks = []
    for page in nav_pages():
        text = page.read_text(encoding="utf-8")
        found = BLOCK.findall(text)
        # a marker not followed by a bash fence would silently not run: refuse it
        assert text.count(MARKER) == len(found), f"{page}: a {MARKER} marker not right above a ```bash block"
        blocks += [(str(page.relative_to(DOCS)), script) for script in found]
    return blocks


def test_the_runnable_blocks_pass(tmp_path):
    blocks = runnable_blocks()
    assert len(blocks) >= 3 and blocks[0][0] == "getting-started.md"
    (tmp_path / "recipes").symlink_to(ROOT / "recipes")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "NO_COLOR": "1", "COLUMNS": "120"}
    env.pop("CURATE_LOG_LEVEL", None)
    for page, script in blocks:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{page}: the block\n{script}\nexited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "out" / "quickstart" / "manifest.json").is_file()
