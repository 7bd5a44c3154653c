"""self_instruct: the bulk ROUGE-L equals rouge_score's, every kept instruction is below the
threshold against the whole pool (checked directly), the paper's filters, determinism, and a
run through `curate run` against the mock (seeds + new rows, a rerun sends nothing)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rouge_score import rouge_scorer

from curate.llm import Answer
from curate_operators.synth.instruct import instruction_filter, self_instruct_prompt, split_instructions
from curate_operators.synth.self_instruct import Pool, SelfInstruct, SelfInstructParams
from tests.conftest import write_jsonl
from tests.operators.synth.scripted import Scripted

SEEDS = ["Give three tips for staying healthy.", "Translate the sentence into French.",
         "Write a haiku about the autumn sea.", "Summarize the news article in two sentences.",
         "Classify the sentiment of the review as positive or negative.", "Explain why the sky is blue to a child.",
         "Suggest a name for a new coffee shop.", "List the prime numbers below twenty.",
         "Rewrite the paragraph in a formal tone.", "Find the grammatical errors in the text."]
WORDS = "river mountain ledger violin harvest lantern orbit canyon pepper quartz saddle tundra".split()


def test_bulk_rouge_l_equals_rouge_score():
    rng = np.random.default_rng(0)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    texts = [" ".join(rng.choice(WORDS, rng.integers(1, 12))) for _ in range(60)] + ["", "Hello, world!"]
    pool = Pool()
    for t in texts[:40]:
        pool.add(pool.tokens(t))
    for candidate in texts[40:]:
        from curate_operators.synth.self_instruct import rouge_l_against

        bulk = rouge_l_against(pool.tokens(candidate), pool.ids, pool.lengths)
        direct = [scorer.score(p, candidate)["rougeL"].fmeasure for p in texts[:40]]
        np.testing.assert_allclose(bulk, direct, atol=1e-12)


def test_prompt_split_and_filters():
    prompt = self_instruct_prompt(["Do  this\nnow:", "And that."])
    assert prompt == "Come up with a series of tasks:\n1. Do this now\n2. And that.\n3."
    assert split_instructions(" write a poem about rivers.\n4. name five birds of prey please\n5 . x", 3) == [
        "Write a poem about rivers.", "Name five birds of prey please", "X"]
    assert instruction_filter("Too short here") == "length"
    assert instruction_filter("Draw the outline of a cat for me") == "unsuitable_word"
    assert instruction_filter("Look at the image and describe it") == "unsuitable_word"
    assert instruction_filter("Write a program that sorts numbers quickly") == "program"
    assert instruction_filter("- List the colors of the rainbow") == "bad_start"
    assert instruction_filter("Describe the water cycle in simple words") is None


def reply(prompt: str) -> str:
    """New instructions from the prompt: some novel, one near-copy of an in-context one, one blocked."""
    given = re.findall(r"(?m)^\d+\. (.*)$", prompt)
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    picks = [WORDS[(h >> (4 * k)) % len(WORDS)] for k in range(8)]
    novel = [f"Tell a story where a {picks[0]} meets a {picks[1]} near the {picks[2]}",
             f"Explain how {picks[3]} and {picks[4]} relate to {picks[5]} economics"]
    near_copy = given[0].rstrip(".") + " quickly."
    lines = [*novel, near_copy, "Draw a map of the town"]
    return " " + "\n".join(f"{len(given) + 1 + j}. {t}" if j else t for j, t in enumerate(lines))


def _fit(seed=0, **params):
    op = SelfInstruct(SelfInstructParams(llm={"model": "m", "base_url": "http://x"}, **params), seed=seed)
    op.backend = Scripted(reply)
    batch = pa.RecordBatch.from_pydict({"_id": [f"s{i}" for i in range(len(SEEDS))], "text": SEEDS,
                                        "_ord": list(range(len(SEEDS)))})
    return op, op.fit(iter([batch]), None)


def test_kept_instructions_are_novel_against_the_whole_pool():
    op, state = _fit(num_instructions=8, max_rounds=10, prompts_per_round=3)
    kept = [(t, r) for children in state.children.values() for t, r, _ in children]
    report = state.summary()
    assert report["kept"] == len(kept) == 8
    assert report["rejected"]["rouge_l"] > 0 and report["rejected"]["unsuitable_word"] > 0
    assert report["candidates"] == report["kept"] + sum(v for k, v in report["rejected"].items())
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    pooled = list(SEEDS)
    for text, _ in sorted(kept, key=lambda x: x[1]):  # rounds in order; within one, any order is checked below
        assert max(scorer.score(p, text)["rougeL"].fmeasure for p in pooled if p != text) < 0.7
        pooled.append(text)
    everything = SEEDS + [t for t, _ in kept]
    for i, a in enumerate(everything):  # pairwise: no two pooled instructions >= 0.7 (seeds aside)
        for b in everything[max(i + 1, len(SEEDS)):]:
            assert scorer.score(a, b)["rougeL"].fmeasure < 0.7, (a, b)
    # machine-made instructions enter later prompts (2 per prompt once there are some)
    assert any(sum(k in r.messages[0]["content"] for k, _ in kept) >= 1 for r in op.backend.asked[3:])


def test_deterministic_given_the_seed():
    _, a = _fit(seed=1, num_instructions=8, max_rounds=5)
    _, b = _fit(seed=1, num_instructions=8, max_rounds=5)
    _, c = _fit(seed=2, num_instructions=8, max_rounds=5)
    assert a.children == b.children and a.report == b.report
    assert a.children != c.children


def test_round_limit_and_failed_answers():
    op = SelfInstruct(SelfInstructParams(llm={"model": "m", "base_url": "http://x"}, num_instructions=1000,
                                         max_rounds=2, prompts_per_round=2))
    op.backend = Scripted(lambda p: Answer(error="http_500", detail="x") if "haiku" in p else reply(p))
    batch = pa.RecordBatch.from_pydict({"_id": ["a", "b"], "text": ["Write a haiku about the sea today.",
                                                                    "Name a bird that cannot fly."], "_ord": [0, 1]})
    state = op.fit(iter([batch]), None)
    assert state.report["rounds"] == 2 and state.report["requests"] == 4
    assert state.report["rejected"]["llm_http_500"] == 4  # every prompt holds the haiku seed


def test_apply_lays_out_seeds_and_children():
    op, state = _fit(num_instructions=5, max_rounds=5)
    batch = pa.RecordBatch.from_pydict({"_id": [f"s{i}" for i in range(len(SEEDS))], "text": SEEDS,
                                        "output": [f"out{i}" for i in range(len(SEEDS))],
                                        "_ord": list(range(len(SEEDS)))})
    children, verdict = op.apply(batch, state)
    assert verdict.keep.all() and children.num_rows == len(SEEDS) + 5
    rows = children.to_pylist()
    new = [r for r in rows if r["synth_round"] > 0]
    assert len(new) == 5 and all(r["output"] is None and r["synth_model"] == "m" for r in new)
    assert [r["text"] for r in rows if r["synth_round"] == 0] == SEEDS
    op.params = op.params.model_copy(update={"keep_seeds": False})
    children, verdict = op.apply(batch, state)
    assert children.num_rows == 5 and (~verdict.keep).sum() == len(SEEDS) - len(state.children)


def test_curate_run_against_the_mock(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    write_jsonl(tmp_path / "seeds.jsonl", [{"instruction": s} for s in SEEDS])
    recipe = tmp_path / "si.yaml"
    recipe.write_text(f"""
input: {{path: '{tmp_path}/seeds.jsonl', text_column: instruction}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - self_instruct: {{num_instructions: 20, max_rounds: 10, llm: {{model: mock, base_url: '{mock_llm.url}',
                     temperature: 0.7, top_p: 0.5, max_tokens: 1024}}}}
""")
    result = cli("run", recipe)
    assert result.exit_code == 0, result.output
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    manifest = manifest_at(tmp_path / "out")
    step = manifest.steps[1]
    assert step.rows_in == len(SEEDS) and step.rows_out == len(rows) == len(SEEDS) + 20
    assert step.expanded == len(SEEDS) and step.added == 20
    assert step.summary["kept"] == 20 and step.summary["rejected"].get("rouge_l", 0) > 0
    sent = sum(mock_llm.llm.received.values())
    first = sorted(pq.read_table(tmp_path / "out" / "data").column("instruction").to_pylist())
    result = cli("run", recipe, "--overwrite")
    if True:  # a rerun: same rows, no request sent
        assert result.exit_code == 0, result.output
        assert sum(mock_llm.llm.received.values()) == sent  # every answer came from the cache
        assert sorted(pq.read_table(tmp_path / "out" / "data").column("instruction").to_pylist()) == first
