import pytest

from curate.manifest import read as read_manifest
from curate.report.scan import Run
from tests.curate.report.small_run import build


@pytest.fixture(scope="session")
def small_dir(tmp_path_factory):
    pytest.importorskip("tokenizers")
    return build(tmp_path_factory.mktemp("small"))


@pytest.fixture
def small(small_dir) -> Run:
    return Run.open(small_dir, read_manifest((small_dir / "manifest.json").read_bytes(), "manifest.json"))
