"""respond and best_of_n: n samples per instruction (seeds seed..seed+n-1), 1 -> n accounting with
failed samples counted and an instruction without any usable answer traced; best_of_n keeping the
best-scored answer of each instruction and tracing the others with their scores; a run through
`curate run` against the loopback mock (n answers sampled by seed, judged, the best kept, a 30%
faulty server losing no row), kill + `--resume` sending no answered request again, and the
transformers backend on a tiny local model."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.llm import Answer
from curate_operators.synth.best_of_n import BestOfN, BestOfNParams
from curate_operators.synth.respond import Respond, RespondParams
from tests.conftest import write_jsonl
from tests.operators.synth.scripted import Scripted

LLM = {"model": "m", "base_url": "http://x", "temperature": 0.7}


class BySeed(Scripted):
    """Scripted answers that see the whole request (the sample's seed)."""

    async def generate(self, requests, on_answer=None):
        self.asked += requests
        return [self.reply(r) for r in requests]


def _respond(reply, **params):
    op = Respond(RespondParams(llm=LLM, **params), seed=10)
    op.backend = BySeed(reply)
    return op


def test_n_samples_one_row_each_and_every_instruction_accounted():
    def reply(r):
        prompt = r.messages[-1]["content"]
        k = r.seed - 10
        if "[[dead]]" in prompt:
            return Answer(error="timeout", detail="no answer")
        if "[[shaky]]" in prompt and k == 1:
            return Answer("cut", "length", 1, 1)
        if "[[shaky]]" in prompt and k == 2:
            return Answer("I'm sorry, but I can't help with that.", "stop", 1, 8)
        return Answer(f"Answer {k} to {prompt}", "stop", 1, 4)

    texts = ["Do A.", "Do B [[shaky]].", None, "Do C [[dead]].", " "]
    batch = pa.RecordBatch.from_pydict({"_id": [f"r{i}" for i in range(5)], "text": texts, "lang": ["en"] * 5})
    op = _respond(reply, n=3)
    children, verdict = asyncio.run(op.process(batch))
    assert verdict.keep.tolist() == [True, True, False, False, False]
    assert [verdict.reason[i] for i in (2, 3, 4)] == ["no_text", "no_response", "no_text"]
    assert verdict.detail[3].count("llm_timeout") == 3 and verdict.detail[3].startswith("sample 0: llm_timeout")
    rows = children.to_pylist()
    assert [(r["_parent_id"], r["response_index"]) for r in rows] == [("r0", 0), ("r0", 1), ("r0", 2), ("r1", 0)]
    assert rows[1]["response"] == "Answer 1 to Do A." and rows[0]["text"] == "Do A." and rows[0]["lang"] == "en"
    assert {r["synth_model"] for r in rows} == {"m"}
    # the n requests of an instruction differ by seed only: each one cached on its own
    seeds = [(q.messages[-1]["content"], q.seed) for q in op.backend.asked]
    assert seeds[:3] == [("Do A.", 10), ("Do A.", 11), ("Do A.", 12)] and len(seeds) == 9
    assert op.take_counts() == {"samples_ok": 4, "sample_truncated": 1, "sample_refused": 1, "sample_llm_timeout": 3}


def test_template_system_pair_column_and_sampling_required(tmp_path):
    (tmp_path / "t.txt").write_text("Answer briefly: {instruction}")
    op = _respond(lambda r: Answer("Fine.", "stop", 1, 1), n=1, template=f"@{tmp_path}/t.txt", system="Be kind.",
                  instruction_column="instruction", pair_column="pair", output_column="answer")
    batch = pa.RecordBatch.from_pydict({"_id": ["a"], "text": ["ignored"], "instruction": ["Say hi."]})
    children, _ = asyncio.run(op.process(batch))
    assert op.backend.asked[0].messages == ({"role": "system", "content": "Be kind."},
                                            {"role": "user", "content": "Answer briefly: Say hi."})
    row = children.to_pylist()[0]
    assert row["answer"] == "Fine." and row["pair"] == "Say hi.\n\nFine." and "response" not in row
    assert op.provides == ("response_index", "synth_model", "answer", "pair")
    with pytest.raises(ValueError, match="temperature"):
        RespondParams(n=4, llm={"model": "m", "base_url": "http://x"})
    with pytest.raises(ValueError, match="no {instruction}"):
        RespondParams(template="no slot", llm=LLM)
    assert RespondParams(n=1, llm={"model": "m", "base_url": "http://x"}).n == 1  # one greedy answer is fine


def _fit(rows, **params):
    op = BestOfN(BestOfNParams(**params))
    batch = pa.RecordBatch.from_pylist([{**r, "_ord": i} for i, r in enumerate(rows)])
    return op, batch


def test_best_of_n_keeps_the_argmax_of_each_group_and_traces_the_rest(tmp_path):
    rows = [{"_id": "a#0", "_parent_id": "a", "q": 5.0}, {"_id": "a#1", "_parent_id": "a", "q": 8.0},
            {"_id": "a#2", "_parent_id": "a", "q": 8.0}, {"_id": "a#3", "_parent_id": "a", "q": None},
            {"_id": "b#0", "_parent_id": "b", "q": None}, {"_id": "b#1", "_parent_id": "b", "q": float("nan")},
            {"_id": "c#0", "_parent_id": "c", "q": 2.0}, {"_id": "x", "_parent_id": None, "q": 1.0},
            {"_id": "y", "_parent_id": None, "q": 0.0}]
    op, batch = _fit(rows, score="q")
    state = op.fit([batch.slice(0, 4), batch.slice(4)], tmp_path)
    verdict = op.apply(batch, state)
    kept = [r["_id"] for r, k in zip(rows, verdict.keep) if k]
    assert kept == ["a#1", "b#0", "c#0", "x", "y"]  # ties and missing scores: the first; no group: alone
    detail = {r["_id"]: d for r, d in zip(rows, verdict.detail.to_pylist()) if d}
    assert detail["a#2"] == "rank 2 of 4: q 8.0 < 8.0 of a#1" and detail["a#0"] == "rank 3 of 4: q 5.0 < 8.0 of a#1"
    assert detail["a#3"] == "rank 4 of 4: q no score < 8.0 of a#1"
    assert detail["b#1"] == "rank 2 of 2: q no score < no score of b#0"
    assert verdict.reason == "best_of_n" and state.removed == 4
    assert state.summary() == {"groups": 5, "candidates": 9, "kept": 5, "groups_unscored": 1,
                               "mean_q_candidates": round((5 + 8 + 8 + 2 + 1 + 0) / 6, 4),
                               "mean_q_kept": round((8 + 2 + 1 + 0) / 4, 4)}


def test_best_of_n_keep_two_lowest_first_and_a_column_of_its_own(tmp_path):
    rows = [{"_id": f"r{i}", "g": "one", "loss": float(v)} for i, v in enumerate((3, 1, 2, 4))]
    op, batch = _fit(rows, score="loss", group="g", keep=2, order="asc")
    assert op.requires == ("loss", "g")
    verdict = op.apply(batch, op.fit([batch], tmp_path))
    assert verdict.keep.tolist() == [False, True, True, False]
    with pytest.raises(ValueError):
        BestOfNParams(score="q", keep=0)


MOCK_INSTRUCTIONS = [f"Explain how tides number {i} shape the coast." for i in range(10)]


def _recipe(tmp_path, mock, n=4, extra="", concurrency=256):
    write_jsonl(tmp_path / "in.jsonl", [{"instruction": s} for s in MOCK_INSTRUCTIONS] + [{"instruction": ""}])
    path = tmp_path / "respond.yaml"
    llm = (f"{{model: mock, base_url: '{mock.url}', temperature: 0.7, timeout_s: 5, backoff_s: 0.01, max_retries: 8, "
           f"concurrency: {concurrency}}}")
    path.write_text(f"""
input: {{path: '{tmp_path}/in.jsonl', text_column: instruction, batch_rows: 4}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - respond: {{n: {n}, llm: {llm}}}
  - llm_judge:
      template: "Rate how well the response follows the instruction. Instruction: {{instruction}}
        Response: {{response}}"
      llm: {{model: mock, base_url: '{mock.url}', max_tokens: 8}}
      output_column: judge{extra}
  - best_of_n: {{score: judge}}
""")
    return path


@pytest.mark.parametrize("mock_llm", [{"fault_rate": 0.3, "faults": ["429", "500", "malformed"],
                                       "retry_after": 0.01}], indirect=True)
def test_curate_run_best_of_n_against_the_mock_loses_no_row(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    result = cli("run", _recipe(tmp_path, mock_llm), "--workers", "1")
    assert result.exit_code == 0, result.output
    manifest = manifest_at(tmp_path / "out")
    respond, judge, best = manifest.steps[1:4]
    n_in = len(MOCK_INSTRUCTIONS) + 1
    assert respond.rows_in == n_in and respond.expanded == 10 and respond.reasons == {"no_text": 1}
    samples = respond.counts["samples_ok"]
    assert samples + respond.counts.get("sample_refused", 0) == 40  # the mock refuses now and then
    assert respond.rows_out == samples == judge.rows_out == best.rows_in
    assert best.rows_out == 10 and best.reasons == {"best_of_n": samples - 10}
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    assert len(rows) == len({r["_parent_id"] for r in rows}) == 10
    trace = pq.read_table(tmp_path / "out" / "trace").to_pylist()
    losers = [t for t in trace if t["reason"] == "best_of_n"]
    assert len(losers) == samples - 10 and all(" < " in t["detail"] for t in losers)
    # the kept answer is its instruction's best-judged one
    best_of = {}
    for t in losers:
        best_of.setdefault(t["detail"].rsplit(" of ", 1)[1], []).append(t)
    kept = {r["_id"]: r for r in rows}
    for keeper, lost in best_of.items():
        assert keeper in kept
        assert all(x["row"]["judge"] is None or x["row"]["judge"] <= kept[keeper]["judge"] for x in lost)
    # the mock sampled: an instruction's answers differ
    assert len({t["row"]["response"] for t in losers} | {r["response"] for r in rows}) > 10
    assert mock_llm.llm.injected  # faults were met and retried away


def test_kill_then_resume_sends_no_answered_request_again(tmp_path, mock_llm, monkeypatch):
    """SIGKILL once 12 answers are cached, then --resume: no answered request (respond's samples, the
    judge's ratings) is sent again, and the output equals an uninterrupted run's, byte for byte. The
    server counts by messages, so an instruction's n samples (same messages, seeds apart) count there
    together: each prompt is checked against the requests it stands for."""
    import sqlite3

    from curate import recipe as recipes
    from curate.llm.cache import FILE
    from curate.llm.mock_server import prompt_key
    from tests.curate.engine import faultkit
    from tests.operators.synth.test_rephrase_resume import _stopped

    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    path = _recipe(tmp_path, mock_llm, n=3, concurrency=4)
    proc = faultkit.start(path, failpoint="llm-answer@12", workers=2)
    assert _stopped(proc), proc.stderr.read().decode()
    faultkit.kill(proc, whole_group=True)
    answered = {k for (k,) in sqlite3.connect(tmp_path / "cache" / FILE).execute("SELECT key FROM answers")}
    sent_before = dict(mock_llm.llm.received)
    assert 12 <= len(answered) and not (tmp_path / "out" / "manifest.json").exists()
    resumed = faultkit.start(path, "--resume", workers=2)
    assert resumed.wait() == 0, resumed.stderr.read().decode()

    r = recipes.load(path)
    respond, judge = r.steps[0].build(r), r.steps[1].build(r)
    answers = pq.read_table(tmp_path / "out" / "data").to_pylist()
    answers += [t["row"] for t in pq.read_table(tmp_path / "out" / "trace").to_pylist() if t["reason"] == "best_of_n"]
    requests = [respond.request(s, k) for s in MOCK_INSTRUCTIONS for k in range(3)]
    requests += [judge.request(a) for a in answers]
    by_key = {q.key("openai", "mock"): prompt_key(list(q.messages)) for q in requests}
    assert answered <= set(by_key) and len(answered) < len(by_key)
    stands_for: dict[str, list[str]] = {}
    for key, prompt in by_key.items():
        stands_for.setdefault(prompt, []).append(key)
    for prompt, keys in stands_for.items():
        if set(keys) <= answered:  # all its requests answered before the kill: none sent again
            assert mock_llm.llm.received[prompt] == sent_before[prompt] == len(keys)
    # at most the requests in flight at the kill were sent twice (2 processes x 4 in flight)
    assert sum(mock_llm.llm.received.values()) - len(by_key) <= 8
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache-ref"))
    ref = faultkit.start(path, "--output", tmp_path / "ref", workers=2)
    assert ref.wait() == 0
    assert faultkit.digest(tmp_path / "out") == faultkit.digest(tmp_path / "ref")


def test_a_local_transformers_model(tmp_path):
    """The transformers backend on a tiny random LM: n sampled answers per instruction, each a row or
    counted as a failed sample, and an instruction with none traced."""
    pytest.importorskip("transformers")
    from tests.curate.llm.tiny_lm import build

    model = build(tmp_path / "tiny-lm")
    op = Respond(RespondParams(n=3, llm={"backend": "transformers", "model": str(model), "max_tokens": 8,
                                         "temperature": 1.0, "cache_dir": str(tmp_path)}))
    op.setup()
    batch = pa.RecordBatch.from_pydict({"_id": ["a", "b"], "text": ["give me a question", "the answer is one"]})
    children, verdict = asyncio.run(op.process(batch))
    counts = op.take_counts()
    assert counts["cache_misses"] == 6
    assert children.num_rows == counts.get("samples_ok", 0)
    assert sum(v for k, v in counts.items() if k.startswith("sample")) == 6
    for i, row_id in enumerate(["a", "b"]):
        mine = [r for r in children.to_pylist() if r["_parent_id"] == row_id]
        assert bool(mine) == bool(verdict.keep[i])
        assert all(r["response_index"] in (0, 1, 2) for r in mine)
