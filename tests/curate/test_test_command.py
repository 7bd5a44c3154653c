"""The README's (and CI's) test command ends with the counts, and says why tests were skipped."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_test_command_prints_counts_and_skip_reasons(tmp_path):
    (tmp_path / "test_x.py").write_text("import pytest\n\ndef test_a():\n    pass\n\n"
                                        "@pytest.mark.skip(reason='needs a GPU')\ndef test_b():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), str(tmp_path / "test_x.py")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout
    assert "needs a GPU" in done.stdout
