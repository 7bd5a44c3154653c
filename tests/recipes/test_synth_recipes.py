"""recipes/synth-qa.yaml and recipes/evol-instruct.yaml as shipped, against the loopback mock LLM
(which answers the synth prompts: curate/llm/mock_synth.py): 1 -> n accounting, QDC metrics
before and after generation in the manifest, and `offline_args`, how tests/recipes/offline.py
runs them (the tests that run every recipe)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import write_jsonl

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
DOCS = [{"text": f"Volcano {i} erupted in the year {1800 + i}. Its lava reached village number {i} within days. "
                 f"Scientists measured ash layers of {i + 2} centimetres across the valley."} for i in range(10)]
DOCS += [{"text": DOCS[0]["text"]}, {"text": "This note is [[unparseable]] for the mock."}]
SEEDS = [f"Explain how {topic} affect the daily life of people living nearby." for topic in
         ("rivers", "mountains", "deserts", "forests", "glaciers", "volcanoes", "coastlines", "swamps")]


def offline_args(name: str, tmp: Path, monkeypatch, request) -> list[str]:
    """A mock server, its URL and model in the environment, a small input; the arguments."""
    from tests.curate.llm.mockkit import RunningMock

    server = RunningMock(api_key="k-synth")
    request.addfinalizer(server.stop)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("SYNTH_MODEL", "mock")
    monkeypatch.setenv("OPENAI_API_KEY", "k-synth")  # reaches remote workers: the operators name it (env_vars)
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp / "cache"))
    if name == "synth-qa":
        write_jsonl(tmp / "docs.jsonl", DOCS)
        return ["--input", tmp / "docs.jsonl"]
    write_jsonl(tmp / "seeds.jsonl", [{"instruction": s} for s in SEEDS])
    # embed's model-free hash backend: MiniLM's path is the text-pruning recipe's (and ~25 s here)
    return ["--input", tmp / "seeds.jsonl", "--set", "steps[4].embed.backend=hash",
            *[a for i in (5, 10, 12) for a in ("--set", f"steps[{i}].dataset_metrics.clusters=4")]]


def _run(cli, name, tmp_path, monkeypatch, request):
    args = offline_args(name, tmp_path, monkeypatch, request)
    result = cli("run", RECIPES / f"{name}.yaml", *args, "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    manifest = request.getfixturevalue("manifest_at")(tmp_path / "out")
    return manifest, {s.op + (str(i) if s.op in ("dataset_metrics", "complexity_scores") else ""): s
                      for i, s in enumerate(manifest.steps)}, pq.read_table(tmp_path / "out" / "data").to_pylist()


def test_synth_qa_recipe_as_shipped(cli, tmp_path, monkeypatch, request):
    manifest, steps, rows = _run(cli, "synth-qa", tmp_path, monkeypatch, request)
    qa = steps["generate_qa"]
    assert qa.rows_in == len(DOCS) and qa.expanded == len(DOCS) - 1 and qa.reasons == {"unparseable": 1}
    assert qa.rows_out == 3 * (len(DOCS) - 1)  # a pair per sentence
    dedup = steps["exact_dedup"]
    assert dedup.removed == 3  # the repeated document's questions
    assert len(rows) == manifest.rows_out == qa.rows_out - 3
    assert all(r["quality_llm_judge"] is not None and r["_parent_id"] for r in rows)
    before, after = steps["dataset_metrics2"].summary, steps["dataset_metrics7"].summary
    assert before and after and "quality_llm_judge" in json.dumps(after)
    assert manifest.recipe["steps"][2]["generate_qa"]["llm"]["base_url"] == "${OPENAI_BASE_URL}"


def test_evol_instruct_recipe_as_shipped(cli, tmp_path, monkeypatch, request):
    _, steps, rows = _run(cli, "evol-instruct", tmp_path, monkeypatch, request)
    evol = steps["evol_instruct"]
    assert evol.rows_in == len(SEEDS) and evol.rows_in == evol.expanded + evol.removed
    assert evol.rows_out == evol.counts["evolved"] > len(SEEDS)
    respond, best = steps["respond"], steps["best_of_n"]
    assert respond.rows_in == evol.rows_out == respond.expanded + respond.removed
    assert respond.rows_out == respond.counts["samples_ok"] > 3 * respond.rows_in  # up to 4 each
    assert best.rows_in == respond.rows_out and best.rows_out == respond.expanded
    assert best.reasons == {"best_of_n": best.rows_in - best.rows_out}
    facts = best.summary
    assert facts["groups"] == facts["kept"] == respond.expanded and facts["candidates"] == best.rows_in
    assert facts["mean_quality_llm_judge_kept"] > facts["mean_quality_llm_judge_candidates"]
    selected = steps["qdc_select"]
    assert selected.rows_out == len(rows) == -(-best.rows_out // 2)
    assert all(r["evol_round"] >= 1 and r["response"] and r["response_index"] is not None for r in rows)
    for i in (2, 6, 11, 13):
        assert steps[f"dataset_metrics{i}"].summary, i
