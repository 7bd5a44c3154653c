"""evol_instruct: the prompts verbatim, each elimination rule, per-round lineage, 1 -> n
accounting, determinism, and a run through `curate run` against the mock LLM."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.llm import Answer
from curate_operators.synth.evol_instruct import EvolInstruct, EvolInstructParams
from curate_operators.synth.instruct import (EVOL_BREADTH, EVOL_DEPTH, EVOL_EQUAL, copies_prompt, evolved_text,
                                      judged_equal, only_stop_words, refuses)
from tests.conftest import write_jsonl
from tests.operators.synth.scripted import Scripted

LONG_SORRY = "I am sorry to hear that, but here is a full answer. " + "More detail follows here. " * 20


def test_prompts_and_rules():
    assert EVOL_DEPTH.startswith("I want you act as a Prompt Rewriter.\n")
    assert EVOL_DEPTH.endswith("#The Given Prompt#:\n{instruction}\n#Rewritten Prompt#:\n")
    assert EVOL_BREADTH.startswith("I want you act as a Prompt Creator.\n") and "{instruction}" in EVOL_BREADTH
    assert "requirments" in EVOL_EQUAL and EVOL_EQUAL.endswith("No need to explain the reason.):")
    assert evolved_text("#Rewritten Prompt#:\n Do X in Y.") == "Do X in Y."
    assert copies_prompt("Rewrite the given prompt so it is harder") and copies_prompt("#Created Prompt# do x")
    assert not copies_prompt("Explain photosynthesis to a child")
    assert refuses("Sorry, I can't help with that.") and not refuses(LONG_SORRY)
    assert only_stop_words("the, of and... a!") and not only_stop_words("the cat")
    assert judged_equal("Equal") and judged_equal("equal.") and not judged_equal("Not Equal")


def reply(prompt: str):
    """The scripted LLM: evolves by appending the method's words; answers; judges."""
    if prompt.rstrip().endswith("#Rewritten Prompt#:") or prompt.rstrip().endswith("#Created Prompt#:"):
        given = prompt.split("Prompt#:\n", 1)[1].rsplit("\n#", 1)[0]
        if "COPY" in given:
            return "#Rewritten Prompt#: the rewritten prompt of " + given
        if "FAILEVOLVE" in given:
            return Answer(error="timeout", detail="slow")
        if "SAME" in given:
            return given
        return given + (" plus a constraint." if "Rewriter" in prompt else " in a rarer field.")
    if prompt.startswith("Here are two Instructions"):
        return "Equal" if "JUDGEEQUAL" in prompt else "Not Equal"
    if "REFUSE" in prompt:
        return "Sorry, I cannot answer that."
    if "LONGSORRY" in prompt:
        return LONG_SORRY
    if "STOPWORDS" in prompt:
        return "the, of and... a!"
    return "A good answer about " + prompt[:40]


def _run(texts, **params):
    op = EvolInstruct(EvolInstructParams(llm={"model": "m", "base_url": "http://x"}, **params))
    op.backend = Scripted(reply)
    batch = pa.RecordBatch.from_pydict({"_id": [f"r{i}" for i in range(len(texts))], "text": texts})
    children, verdict = asyncio.run(op.process(batch))
    return op, children.to_pylist(), verdict


def test_each_elimination_rule():
    texts = ["Explain tides.", "Do SAME thing.", "Say REFUSE now.", "Do COPY here.", "List STOPWORDS please.",
             "Write LONGSORRY text.", "Tell JUDGEEQUAL story.", "Try FAILEVOLVE it.", None]
    op, rows, verdict = _run(texts, rounds=2, keep_original=False)
    counts = op.take_counts()
    by_parent = {}
    for r in rows:
        by_parent.setdefault(r["_parent_id"], []).append(r)
    assert set(by_parent) == {"r0", "r5"}  # evolved; LONGSORRY's long "sorry" answer is no refusal
    assert verdict.keep.tolist() == [True, False, False, False, False, True, False, False, False]
    reason = {i: verdict.detail[i] for i in range(len(texts)) if not verdict.keep[i]}
    assert verdict.reason[1] == "evol_eliminated" and verdict.reason[8] == "no_text"
    assert "no_gain" in reason[1] and "refusal" in reason[2] and "copied_prompt" in reason[3]
    assert "no_content" in reason[4] and "no_gain" in reason[6] and "evolve_llm_timeout" in reason[7]
    assert reason[1].count("round") == 2  # each round's reason
    assert counts["evolved"] == 4 and counts["eliminated_no_gain"] == 4 and counts["eliminated_refusal"] == 2


def test_lineage_over_rounds_and_original_kept():
    _, rows, verdict = _run(["Explain tides.", "Say REFUSE now."], rounds=3)
    assert verdict.keep.all()
    first = [r for r in rows if r["_parent_id"] == "r0"]
    assert [r["evol_round"] for r in first] == [0, 1, 2, 3]
    assert first[0]["text"] == "Explain tides." and first[0]["evol_operation"] is None
    for before, after in zip(first, first[1:]):
        assert after["evol_previous"] == before["text"] and after["evol_from_round"] == before["evol_round"]
        assert after["evol_lineage"] == before["evol_lineage"] + [after["evol_operation"]]
        assert after["response"].startswith("A good answer about") and after["synth_model"] == "m"
    refused = [r for r in rows if r["_parent_id"] == "r1"]
    assert [r["evol_round"] for r in refused] == [0]  # only the original: every evolution eliminated


def test_operations_are_deterministic_and_uniform():
    op = EvolInstruct(EvolInstructParams(llm={"model": "m", "base_url": "http://x"}), seed=3)
    picks = [op.operation(f"row{i}", r) for i in range(400) for r in (1, 2)]
    assert picks == [op.operation(f"row{i}", r) for i in range(400) for r in (1, 2)]
    assert all(70 < picks.count(o) < 250 for o in ("constraints", "deepening", "concretizing", "reasoning", "breadth"))
    with pytest.raises(ValueError):
        EvolInstructParams(operations=["bogus"], llm={"model": "m", "base_url": "http://x"})
    own = EvolInstruct(EvolInstructParams(operations=["simplify"], methods={"simplify": "Use plainer words."},
                                          llm={"model": "m", "base_url": "http://x"}))
    assert "Use plainer words." in own.evolve_prompt("Do X.", own.operation("r", 1))


def test_curate_run_against_the_mock(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    seeds = [{"instruction": f"Explain how plants number {i} use sunlight to grow."} for i in range(8)]
    seeds += [{"instruction": "Repeat this [[same]] sentence exactly."}, {"instruction": "Rewrite [[copy]] now please."}]
    write_jsonl(tmp_path / "seeds.jsonl", seeds)
    recipe = tmp_path / "evol.yaml"
    recipe.write_text(f"""
input: {{path: '{tmp_path}/seeds.jsonl', text_column: instruction, batch_rows: 4}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - evol_instruct: {{rounds: 2, operations: [constraints, reasoning], keep_original: false,
                     llm: {{model: mock, base_url: '{mock_llm.url}'}}}}
""")
    result = cli("run", recipe)
    assert result.exit_code == 0, result.output
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    step = manifest_at(tmp_path / "out").steps[1]
    assert step.rows_in == 10 and step.expanded == 8 and step.removed == 2
    assert step.rows_out == len(rows) == 16 and step.reasons == {"evol_eliminated": 2}
    assert step.counts["eliminated_no_gain"] == 2 and step.counts["eliminated_copied_prompt"] == 2
    assert all(len(r["instruction"]) > len(r["evol_previous"]) for r in rows)
