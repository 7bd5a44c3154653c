"""generate_qa: every answer shape parsed, 1 -> n accounting (each document gave pairs or is
traced with the raw answer), the presets verbatim, and a run through `curate run` against the
loopback mock LLM (with 30% injected faults losing no row)."""

from __future__ import annotations

import asyncio
import re

import hypothesis as hyp
import hypothesis.strategies as st
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.llm import Answer
from curate_operators.synth import instruct
from curate_operators.synth.generate_qa import GenerateQA, GenerateQAParams
from curate_operators.synth.instruct import DIVERSE_QA, QA_PRESETS, parse_qa
from curate_operators.synth.prompts import PROMPTS
from tests.conftest import write_jsonl
from tests.operators.synth.scripted import Scripted

SHAPES = {
    "tagged": "Here are the questions and answers based on the provided text:\n"
              "- Question: What is A? Answer: A is B.\n- Question: Why is it so? Answer: Because of C.",
    "tagged_multiline": "**Question 1:** What is A?\n**Answer:** A is B\nover two lines.\n\n"
                        "**Question 2:** Why is it so?\n**Answer:** Because of C.",
    "tagged_short": "Q: What is A? A: A is B.\nQ: Why is it so? A: Because of C.",
    "numbered": "1. What is A? A is B.\n2. Why is it so? - Because of C.",
    "tagged_numbered": "1. Question: What is A? Answer: A is B.\n2. Question: Why is it so? Answer: Because of C.",
    "json_list": '[{"question": "What is A?", "answer": "A is B."}, {"q": "Why is it so?", "a": "Because of C."}]',
    "json_fenced": 'Sure:\n```json\n{"pairs": [{"Question": "What is A?", "Answer": "A is B."}, '
                   '{"question": "Why is it so?", "answer": "Because of C."}]}\n```',
    "json_lines": '{"question": "What is A?", "answer": "A is B."}\n{"question": "Why is it so?", "answer": "Because of C."}',
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_answer_shape_gives_the_same_pairs(shape):
    pairs, found = parse_qa(SHAPES[shape])
    assert [q for q, _ in pairs] == ["What is A?", "Why is it so?"]
    assert pairs[0][1] in ("A is B.", "A is B over two lines.") and pairs[1][1] == "Because of C."
    assert found == shape.split("_")[0]


# Pieces of tagged answers, and of near misses: tags without a space after the colon or glued to a
# word, other words before a colon, bullets, numbers, brackets, Unicode spaces, the long s that
# (?i) matches to s, colons in a row.
_PIECES = ["Question", "question", "QUESTION", "Q", "q", "Answer", "answer", "A", "a", "que\u017ftion", "Questions",
           ":", ": ", ":  ", "::", "\n", " ", "\t", "\u00a0", "\u2003", "- ", "-", "* ", "\u2022", "1.", "2)", "(3)",
           "[4]", "[5", "12", "\u0663", ".", ")", "(", "[", "]", "x", "what?", "**", "#", "`", "\"", "'", "aa", "Qa"]


@hyp.settings(max_examples=3000, deadline=None)
@hyp.given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_tags_are_found_as_the_tag_pattern_finds_them(text):
    """The colon-first search for tags (operators/synth/instruct.py: _tags) gives what trying the
    pattern at every character gives, and _clean what its regex definition gives."""
    assert instruct._tags(text) == [(m.start(), m.end(), m.group(1).lower()[0]) for m in instruct._TAG.finditer(text)]
    assert instruct._clean(text) == re.sub(r"\s+", " ", text).strip().strip("\"'").strip()


def test_prose_and_preamble_only_are_unparseable():
    assert parse_qa("I read the text; it is interesting.") == ([], "none")
    assert parse_qa("Here are the questions:\n") == ([], "none")
    assert parse_qa("Question: only a question?") == ([], "none")


def test_presets_are_the_papers():
    assert "Read the text, ask questions and answer them." in DIVERSE_QA and "{document}" in DIVERSE_QA
    assert DIVERSE_QA.endswith("- Question: [second question] Answer: [second answer]\n....")
    assert QA_PRESETS["qa_from_text"][0] == PROMPTS["qa"] + "\n\n{document}"
    with pytest.raises(ValueError):
        GenerateQAParams(preset="nope", llm={"model": "m", "base_url": "http://x"})
    with pytest.raises(ValueError):
        GenerateQAParams(template="no slot", llm={"model": "m", "base_url": "http://x"})


def _op(reply, **params):
    op = GenerateQA(GenerateQAParams(llm={"model": "m", "base_url": "http://x"}, **params))
    op.backend = Scripted(reply)
    return op


def test_one_row_per_pair_and_every_document_accounted():
    def reply(prompt):
        if "[[fail]]" in prompt:
            return Answer(error="timeout", detail="no answer")
        if "[[cut]]" in prompt:
            return Answer("Question: a? Answer: b", "length", 1, 1)
        if "[[prose]]" in prompt:
            return "Just some prose about the text."
        return SHAPES["json_list"] if "json" in prompt else SHAPES["tagged"]

    texts = ["doc one", "doc json", None, "doc [[fail]]", "doc [[cut]]", "doc [[prose]]", "  "]
    batch = pa.RecordBatch.from_pydict({"_id": [f"r{i}" for i in range(len(texts))], "text": texts,
                                        "lang": ["en"] * len(texts)})
    op = _op(reply, max_pairs=8)
    children, verdict = asyncio.run(op.process(batch))
    assert verdict.keep.tolist() == [True, True, False, False, False, False, False]
    reasons = {texts[i]: verdict.reason[i] for i in range(len(texts)) if not verdict.keep[i]}
    assert reasons == {None: "no_text", "doc [[fail]]": "llm_timeout", "doc [[cut]]": "truncated",
                       "doc [[prose]]": "unparseable", "  ": "no_text"}
    assert verdict.detail[5] == "Just some prose about the text."  # the raw answer traced
    rows = children.to_pylist()
    assert [r["_parent_id"] for r in rows] == ["r0", "r0", "r1", "r1"]
    assert [r["qa_index"] for r in rows] == [0, 1, 0, 1]
    assert rows[0]["text"] == "Question: What is A?\nAnswer: A is B." and rows[0]["lang"] == "en"
    assert {r["synth_prompt"] for r in rows} == {"diverse_qa"} and rows[0]["synth_model"] == "m"
    counts = op.take_counts()
    assert counts["parsed_tagged"] == 1 and counts["parsed_json"] == 1 and counts["parsed_none"] == 1
    # the DiverseQA prompt with Nemotron-CC's system message, the document in its slot
    request = op.backend.asked[0]
    assert request.messages[0]["role"] == "system" and "doc one" in request.messages[1]["content"]


def test_max_pairs_and_a_template_from_a_file(tmp_path):
    (tmp_path / "p.txt").write_text("Make Q&A from: {document}")
    op = _op(lambda p: SHAPES["tagged"], template=f"@{tmp_path}/p.txt", max_pairs=1)
    batch = pa.RecordBatch.from_pydict({"_id": ["a"], "text": ["hello"]})
    children, verdict = asyncio.run(op.process(batch))
    assert children.num_rows == 1 and verdict.keep.all()
    assert op.backend.asked[0].messages == ({"role": "user", "content": "Make Q&A from: hello"},)
    assert children.column("synth_prompt").to_pylist() == ["template"]


DOCS = [{"text": f"Doc {i} talks about volcanoes. Lava flows downhill slowly. Ash clouds travel far number {i}."}
        for i in range(12)] + [{"text": "This one is [[unparseable]] on purpose."}, {"text": "[[bad]] request here."}]


def _recipe(tmp_path, mock, fault_rate=0.0):
    write_jsonl(tmp_path / "in.jsonl", DOCS)
    path = tmp_path / "qa.yaml"
    path.write_text(f"""
input: {{path: '{tmp_path}/in.jsonl', batch_rows: 4}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - generate_qa: {{llm: {{model: mock, base_url: '{mock.url}', timeout_s: 5, backoff_s: 0.01, max_retries: 8}}}}
""")
    return path


@pytest.mark.parametrize("mock_llm", [{"fault_rate": 0.3, "faults": ["429", "500", "malformed"],
                                       "retry_after": 0.01}], indirect=True)
def test_curate_run_against_the_mock_loses_no_row(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    result = cli("run", _recipe(tmp_path, mock_llm), "--workers", "1")
    assert result.exit_code == 0, result.output
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    manifest = manifest_at(tmp_path / "out")
    step = manifest.steps[1]
    assert step.rows_in == len(DOCS) and step.expanded == 12 and step.removed == 2
    assert step.reasons == {"unparseable": 1, "llm_bad_request": 1}
    assert step.rows_out == len(rows) == 12 * 3
    assert all(r["question"].startswith("What does the text say about") for r in rows)
    assert len({r["_parent_id"] for r in rows}) == 12
    trace = pq.read_table(tmp_path / "out" / "trace" / "01_generate_qa.parquet").to_pylist()
    assert {t["reason"] for t in trace} == {"unparseable", "llm_bad_request"}
    assert any("interesting" in t["detail"] for t in trace)  # the raw answer
    assert mock_llm.llm.injected  # faults were met and retried away


def test_kill_then_resume_sends_no_answered_request_again(tmp_path, mock_llm, monkeypatch):
    """SIGKILL once 12 answers are cached, then --resume: no answered request is sent again and the
    output equals an uninterrupted run's, byte for byte."""
    import sqlite3

    from curate import recipe as recipes
    from curate.llm.cache import FILE
    from curate.llm.mock_server import prompt_key
    from tests.curate.engine import faultkit
    from tests.operators.synth.test_rephrase_resume import _stopped

    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    docs = [{"text": f"Doc {i} is about tides. The moon pulls water number {i}. Coasts flood twice a day."}
            for i in range(40)]
    write_jsonl(tmp_path / "in.jsonl", docs)
    path = tmp_path / "qa.yaml"
    path.write_text(f"""
input: {{path: '{tmp_path}/in.jsonl', batch_rows: 4}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - generate_qa: {{llm: {{model: mock, base_url: '{mock_llm.url}', concurrency: 4}}}}
""")
    proc = faultkit.start(path, failpoint="llm-answer@12", workers=2)
    assert _stopped(proc), proc.stderr.read().decode()
    faultkit.kill(proc, whole_group=True)
    answered = {k for (k,) in sqlite3.connect(tmp_path / "cache" / FILE).execute("SELECT key FROM answers")}
    sent_before = dict(mock_llm.llm.received)
    assert 12 <= len(answered) < len(docs) and not (tmp_path / "out" / "manifest.json").exists()
    resumed = faultkit.start(path, "--resume", workers=2)
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    r = recipes.load(path)
    op = r.steps[0].build(r)
    by_key = {q.key("openai", "mock"): prompt_key(list(q.messages)) for q in (op.request(d["text"]) for d in docs)}
    assert answered <= set(by_key)
    for key in answered:
        assert mock_llm.llm.received[by_key[key]] == sent_before[by_key[key]] == 1
    assert sum(mock_llm.llm.received.values()) - len(docs) <= 8  # at most those in flight at the kill
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache-ref"))
    ref = faultkit.start(path, "--output", tmp_path / "ref", workers=2)
    assert ref.wait() == 0
    assert faultkit.digest(tmp_path / "out") == faultkit.digest(tmp_path / "ref")


def test_a_local_transformers_model(tmp_path):
    """The transformers backend on a tiny random LM: whatever it writes, every document is accounted
    for (pairs, or traced with its raw answer)."""
    pytest.importorskip("transformers")
    from tests.curate.llm.tiny_lm import build

    model = build(tmp_path / "tiny-lm")
    op = GenerateQA(GenerateQAParams(preset="qa_from_text", llm={"backend": "transformers", "model": str(model),
                                                                 "max_tokens": 24, "cache_dir": str(tmp_path)}))
    op.setup()
    texts = ["doc one is the question", "doc two is a answer", "three of the paragraph"]
    batch = pa.RecordBatch.from_pydict({"_id": ["a", "b", "c"], "text": texts})
    children, verdict = asyncio.run(op.process(batch))
    produced = set(children.column("_parent_id").to_pylist())
    for i, row_id in enumerate(["a", "b", "c"]):
        assert (row_id in produced) == bool(verdict.keep[i])
        if not verdict.keep[i]:
            assert verdict.reason[i] in ("unparseable", "truncated", "empty", "refused") and verdict.detail[i]
    assert op.take_counts()["cache_misses"] == 3


def test_a_missing_or_slotless_prompt_file_is_a_recipe_error(cli, tmp_path):
    (tmp_path / "p.txt").write_text("no slot here")
    write_jsonl(tmp_path / "in.jsonl", [{"text": "x"}])
    for template, said in ((f"@{tmp_path}/missing.txt", "cannot read the prompt file"), (f"@{tmp_path}/p.txt",
                                                                                        "has no {document}")):
        path = tmp_path / "r.yaml"
        path.write_text(f"""
input: {{path: '{tmp_path}/in.jsonl'}}
output: {{path: '{tmp_path}/out'}}
steps:
  - generate_qa: {{template: '{template}', llm: {{model: m, base_url: 'http://127.0.0.1:1/v1'}}}}
""")
        result = cli("validate", path, "--no-data")
        assert result.exit_code != 0 and said in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("template", [
    "Question: {question}\nAnswer: {answer}",  # the default: joined by Arrow
    "{answer} <- {question}", "Q{{uoted}}: {question}", "{question}{question}",
    "{question!r}: {answer}", "{question:>40}|{answer}", "no field at all",  # str.format's
])
def test_each_pair_is_rendered_as_str_format_renders_the_template(template):
    op = GenerateQA(GenerateQAParams(llm={"model": "mock", "base_url": "http://x/v1"}, text_template=template))
    questions, answers = ["What is A?", "Ünïcode {x}?", ""], ["A is B.", "Yes; {y}", "none"]
    rendered = op.render(pa.array(questions, pa.string()), pa.array(answers, pa.string()))
    assert rendered.to_pylist() == [template.format(question=q, answer=a) for q, a in zip(questions, answers)]
