"""SIGKILL in the middle of a rephrase run (a worker stopped right after an answer was cached),
then `--resume` at a differently written endpoint: no request answered and cached before the
kill is sent again, and the output equals an uninterrupted run's."""

from __future__ import annotations

import sqlite3
import time

from curate import recipe as recipes
from curate.llm.cache import FILE
from curate.llm.mock_server import prompt_key
from tests.curate.engine import faultkit
from tests.operators.synth.test_rephrase import _llm, recipe_text

DOCS = [{"text": f"Row {i} opens. Row {i} goes on. Row {i} ends here for good."} for i in range(40)]


def _stopped(proc, timeout: float = 120) -> bool:
    """Wait until the run, or a worker below it, stops at its failpoint (an io stage runs in the
    main process on small machines, in workers on larger ones)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(faultkit._state(p) == "T" for p in [proc.pid, *faultkit.descendants(proc.pid)]):
            return True
        time.sleep(0.01)
    return False


def _cached_keys(cache_dir) -> set[str]:
    return {k for (k,) in sqlite3.connect(cache_dir / FILE).execute("SELECT key FROM answers")}


def test_kill_then_resume_sends_no_cached_request_again(tmp_path, mock_llm, monkeypatch):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    path = recipe_text(tmp_path, _llm(mock_llm, concurrency=8), "styles: [medium, qa]", docs=DOCS, batch_rows=4)
    proc = faultkit.start(path, failpoint="llm-answer@30", workers=2)
    assert _stopped(proc), proc.stderr.read().decode()
    below = faultkit.kill(proc, whole_group=True)
    assert faultkit.alive(below) == []
    answered = _cached_keys(tmp_path / "cache")
    sent_before = dict(mock_llm.llm.received)
    assert 30 <= len(answered) < 120 and not (tmp_path / "out" / "manifest.json").exists()

    # the same server, its URL written another way: the endpoint is not part of the fingerprint
    other_url = mock_llm.url.replace("127.0.0.1", "localhost")
    resumed = faultkit.start(path, "--resume", "--set", f"steps[1].rephrase.llm.base_url={other_url}", workers=2)
    assert resumed.wait() == 0, resumed.stderr.read().decode()

    r = recipes.load(path)
    op = r.steps[1].build(r)
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    originals = {r["_parent_id"]: r["text"] for r in rows if r["synth_style"] is None}
    requests = [op.request(originals[row["_parent_id"]], row["synth_style"]) for row in rows if row["synth_style"]]
    by_key = {q.key("openai", "mock"): prompt_key(list(q.messages)) for q in requests}
    assert answered <= set(by_key)
    for key in answered:
        assert mock_llm.llm.received[by_key[key]] == sent_before[by_key[key]] == 1
    # at most the requests in flight at the kill were sent twice (up to 2 processes x 8 in flight)
    assert sum(mock_llm.llm.received.values()) - len(set(by_key.values())) <= 16

    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache-ref"))
    ref = faultkit.start(path, "--output", tmp_path / "ref", workers=2)
    assert ref.wait() == 0
    assert faultkit.digest(tmp_path / "out") == faultkit.digest(tmp_path / "ref")
