"""bench/harness/ counts the CPU of a command's whole process tree, orphans included (no timing asserts:
the child burns a fixed amount of CPU time, measured by its own clock)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import harness  # noqa: E402

BURN = """
import os, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
if os.fork() == 0:          # a grandchild that outlives its parent (like a pool's forkserver)
    if os.fork() == 0:
        burn(0.4)
        os._exit(0)
    os._exit(0)
burn(0.2)
"""


def test_cpu_of_orphaned_grandchild_is_counted(tmp_path):
    m = harness.run_measured([sys.executable, "-c", BURN], log=tmp_path / "log")
    assert m.returncode == 0
    assert harness.SUBREAPER
    assert m.cpu_seconds >= 0.6  # 0.2 s in the child + 0.4 s in the orphan


def test_section_body_and_headlines(tmp_path):
    import argparse
    import json

    args = argparse.Namespace(section_out=tmp_path / "s.md")
    harness.emit(args, "body\n", [["a", "1.0x", "2.0x", ""]])
    assert (tmp_path / "s.md").read_text() == "body\n"
    assert json.loads((tmp_path / "s.json").read_text()) == [["a", "1.0x", "2.0x", ""]]


def test_peak_of_one_process_is_at_most_the_tree_and_not_zero(tmp_path):
    m = harness.run_measured([sys.executable, "-c", "import time; x = bytearray(50_000_000); time.sleep(0.5)"],
                             log=tmp_path / "log")
    assert 0.05 <= m.peak_process_gb <= m.peak_rss_gb
