"""recipes/decontaminate.yaml over the demo corpus, with benchmarks made of some of its documents."""

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq

from curate.demo import generate

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "decontaminate.yaml"


def write_benchmarks(demo: Path, bench: Path) -> set[str]:
    """Two benchmarks: gsm8k's items are slices of some demo documents (the question, words 5..20, the
    answer, words 20..30: found across the join), mmlu's never appear. The ids of the documents used."""
    rows = [json.loads(line) for f in sorted(demo.glob("*.jsonl.gz")) for line in gzip.open(f, "rt")]
    used = [r for r in rows if len(r["text"].split()) > 40][:5:2]
    bench.mkdir()
    (bench / "gsm8k.jsonl").write_text("".join(
        json.dumps({"question": " ".join(r["text"].split()[5:20]), "answer": " ".join(r["text"].split()[20:30])}) + "\n"
        for r in used))
    (bench / "mmlu.jsonl").write_text("".join(
        json.dumps({"id": f"m{i}", "question": f"zebra quokka {i} axolotl", "answer": "B"}) + "\n" for i in range(4)))
    return {str(r["id"]) for r in used}


def test_decontaminate_recipe_drops_the_documents_holding_items_and_reports(cli, tmp_path, monkeypatch, manifest_at):
    generate(tmp_path / "demo", docs=600, files=2, seed=0)
    used = write_benchmarks(tmp_path / "demo", tmp_path / "bench")
    monkeypatch.setenv("BENCH_DIR", str(tmp_path / "bench"))
    out = tmp_path / "out"
    res = cli("run", RECIPE, "--input", f"{tmp_path}/demo/*.jsonl.gz", "--output", out, "-w", "2")
    assert res.exit_code == 0, res.output
    step = manifest_at(out).steps[1]
    gsm, mmlu = step.summary["benchmarks"]
    assert (gsm["items"], gsm["items_found"], mmlu["items"], mmlu["items_found"], mmlu["documents"]) == (3, 3, 4, 0, 0)
    assert gsm["documents"] == step.removed >= 3  # the demo corpus plants copies of some documents
    trace = pq.read_table(out / "trace" / "01_decontaminate.parquet")
    assert used <= set(trace.column("_id").to_pylist())
    assert set(trace.column("reason").to_pylist()) == {"contaminated"}
    assert "gsm8k item" in (out / "report.html").read_text()
