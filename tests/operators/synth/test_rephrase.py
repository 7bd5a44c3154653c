"""rephrase through `curate run` against the loopback mock LLM: the real:synthetic ratio, the
columns, trace reasons, 30% injected faults, duplicate prompts in batches in flight at once, bad
endpoints, keys and models, a local model."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import recipe as recipes
from curate.errors import RecipeError
from curate.llm.mock_server import prompt_key, reply_to
from curate_operators.synth.prompts import PROMPTS, TEMPLATE
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit
from tests.curate.llm.mockkit import RunningMock

DOCS = [{"text": f"Doc {i} starts here. It has a second sentence. And a third one, number {i}."} for i in range(24)]


def recipe_text(tmp_path: Path, llm: str, rephrase: str = "styles: [medium, qa]", docs=DOCS, batch_rows: int = 5) -> Path:
    write_jsonl(tmp_path / "in.jsonl", docs)
    path = tmp_path / "wrap.yaml"
    path.write_text(f"""
input: {{path: '{tmp_path}/in.jsonl', batch_rows: {batch_rows}}}
output: {{path: '{tmp_path}/out', keep_columns: [_parent_id]}}
steps:
  - chunk: {{max_tokens: 8}}
  - rephrase: {{{rephrase}, llm: {{{llm}}}}}
""")
    return path


def _llm(mock, **extra) -> str:
    options = {"model": "mock", "base_url": mock.url, "timeout_s": 5, "backoff_s": 0.01, **extra}
    return ", ".join(f"{k}: '{v}'" if isinstance(v, str) else f"{k}: {v}" for k, v in options.items())


def _rows(out: Path) -> list[dict]:
    return pq.read_table(out / "data").to_pylist()


def _trace(out: Path, step: str = "02_rephrase") -> list[dict]:
    path = out / "trace" / f"{step}.parquet"
    return pq.read_table(path).to_pylist() if path.exists() else []


def test_one_original_and_one_rephrasing_per_chunk_by_default(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-written")
    result = cli("run", recipe_text(tmp_path, _llm(mock_llm)), "--workers", "2")
    assert result.exit_code == 0, result.output
    rows = _rows(tmp_path / "out")
    by_parent: dict[str, list[dict]] = {}
    for row in rows:
        by_parent.setdefault(row["_parent_id"], []).append(row)
    manifest = manifest_at(tmp_path / "out")
    chunk, rephrase = manifest.steps[1], manifest.steps[2]
    assert len(by_parent) == chunk.rows_out == rephrase.rows_in == rephrase.expanded
    assert rephrase.rows_out == len(rows) == 2 * len(by_parent)
    styles = set()
    for parent, children in by_parent.items():
        original, synthetic = sorted(children, key=lambda r: r["synth_style"] is not None)
        assert original["synth_style"] is None and original["synth_model"] is None
        assert synthetic["synth_model"] == "mock" and synthetic["synth_style"] in ("medium", "qa")
        assert synthetic["text"] == " ".join(reversed(original["text"].split()))  # the mock's answer, cleaned
        styles.add(synthetic["synth_style"])
    assert styles == {"medium", "qa"}  # styles taken in turn
    counters = rephrase.counts  # chunks repeated across docs are sent once
    assert counters["cache_misses"] + counters.get("cache_hits", 0) + counters.get("duplicates", 0) == len(by_parent)
    pairs = {(o["text"], s["synth_style"]) for o, s in (sorted(c, key=lambda r: r["synth_style"] is not None)
                                                        for c in by_parent.values())}
    assert len(pairs) <= counters["cache_misses"] < len(by_parent)  # two workers may both miss one prompt
    assert counters["tokens_out"] > 0
    for path in (tmp_path / "out").rglob("*"):  # the key is read from the environment, written nowhere
        assert not path.is_file() or b"sk-secret" not in path.read_bytes()
    assert b"sk-secret" not in (tmp_path / "cache" / "llm-requests.sqlite").read_bytes()
    # the same run again: every request from the cache, none sent
    sent = sum(mock_llm.llm.received.values())
    again = cli("run", recipe_text(tmp_path, _llm(mock_llm)), "--output", tmp_path / "again", "--workers", "2")
    assert again.exit_code == 0, again.output
    assert sum(mock_llm.llm.received.values()) == sent
    assert sorted(map(str, _rows(tmp_path / "again"))) == sorted(map(str, rows))


def test_synthetic_only_in_every_style(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    text = recipe_text(tmp_path, _llm(mock_llm), "styles: [easy, hard, mine], ratio: '0:1', "
                                                 "prompts: {mine: 'Say it as a pirate:'}")
    assert cli("run", text).exit_code == 0
    rows = _rows(tmp_path / "out")
    manifest = manifest_at(tmp_path / "out")
    assert len(rows) == 3 * manifest.steps[2].rows_in
    assert {r["synth_style"] for r in rows} == {"easy", "hard", "mine"}


def test_failed_answers_send_their_row_to_the_trace_with_the_reason(cli, tmp_path, mock_llm, monkeypatch):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    docs = [{"text": "A fine row."}, {"text": "[[refuse]] this."}, {"text": "[[empty]] this."},
            {"text": "[[long]] this."}, {"text": "[[bad]] this."}, {"text": "Another fine row."}]
    result = cli("run", recipe_text(tmp_path, _llm(mock_llm), docs=docs))
    assert result.exit_code == 0, result.output
    traced = {t["row"]["text"]: t for t in _trace(tmp_path / "out")}
    assert {k: v["reason"] for k, v in traced.items()} == {
        "[[refuse]] this.": "refused", "[[empty]] this.": "empty", "[[long]] this.": "truncated",
        "[[bad]] this.": "llm_bad_request"}
    assert traced["[[long]] this."]["detail"].startswith("style medium: cut at max_tokens")
    assert {r["text"] for r in _rows(tmp_path / "out") if r["synth_style"] is None} == {"A fine row.", "Another fine row."}


@pytest.mark.parametrize("mock_llm", [{"fault_rate": 0.3, "retry_after": 0, "stall_s": 3, "seed": 7}], indirect=True)
def test_with_30_percent_faults_every_row_is_rephrased_or_traced(cli, tmp_path, mock_llm, monkeypatch, manifest_at):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    docs = [{"text": f"Row {i} says something. It goes on for a bit."} for i in range(60)]
    result = cli("run", recipe_text(tmp_path, _llm(mock_llm, max_retries=1, timeout_s=0.5), docs=docs), "--workers", "2")
    assert result.exit_code == 0, result.output
    assert set(mock_llm.llm.injected) == {"timeout", "429", "500", "malformed", "truncated"}
    step = manifest_at(tmp_path / "out").steps[2]
    chunks = pq.read_table(tmp_path / "out" / "data").to_pylist()
    rephrased = {r["_parent_id"] for r in chunks if r["synth_style"] is None}
    traced = _trace(tmp_path / "out")
    assert step.removed == len(traced) > 0 and step.expanded == len(rephrased) > 0
    assert step.rows_in == len(rephrased) + len(traced)  # every chunk: rephrased, or traced with a reason
    assert not rephrased & {t["_id"] for t in traced}
    assert {t["reason"] for t in traced} <= {"llm_timeout", "llm_http_429", "llm_http_500", "llm_malformed",
                                            "llm_truncated_body"}
    assert all(t["detail"].startswith("style ") and "after 2 attempts" in t["detail"] for t in traced)


@pytest.mark.parametrize("mock_llm", [{"api_key": "right"}], indirect=True)
def test_bad_endpoint_key_or_model_exit_2_before_any_row(cli, tmp_path, mock_llm, monkeypatch):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    cases = [(_llm(mock_llm), "refused the API key (401"),
             (_llm(mock_llm, base_url="http://127.0.0.1:9/v1"), "cannot reach the LLM endpoint http://127.0.0.1:9/v1"),
             (_llm(mock_llm, model="gpt-9"), "does not serve model 'gpt-9'")]
    for i, (llm, message) in enumerate(cases):
        if i:
            monkeypatch.setenv("OPENAI_API_KEY", "right")
        result = cli("run", recipe_text(tmp_path, llm))
        assert result.exit_code == 2 and message in result.output, result.output
        assert not (tmp_path / "out").exists()
    assert not mock_llm.llm.received  # no chat request was sent


def test_ratio_styles_and_template_are_checked_when_the_recipe_loads(tmp_path):
    for rephrase, message in [("styles: [medium], ratio: '1:2'", "ratio 1:2: each row gives one original"),
                              ("styles: [medium, qa], ratio: '2:1'", "ratio 2:1"),
                              ("styles: [medium], ratio: 'half'", "ratio must be real:synthetic"),
                              ("styles: [poetic]", "unknown style 'poetic'; known: easy, medium, hard, qa"),
                              ("template: 'no text here'", "template must contain {text}")]:
        with pytest.raises(RecipeError, match=message.replace("(", r"\(").replace("{", r"\{")):
            recipes.load(recipe_text(tmp_path, "model: m, base_url: 'http://x'", rephrase))
    with pytest.raises(RecipeError, match="the openai backend needs base_url"):
        recipes.load(recipe_text(tmp_path, "model: m"))


def test_a_local_transformers_model_runs_end_to_end_on_the_model_workers(cli, tmp_path, monkeypatch, manifest_at):
    pytest.importorskip("transformers")
    from tests.curate.llm.tiny_lm import build

    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    model = build(tmp_path / "tiny")
    docs = [{"text": "the doc one. a paraphrase of the paragraph."}, {"text": "two three. the same english."}]
    text = recipe_text(tmp_path, f"backend: transformers, model: '{model}', max_tokens: 6, batch_size: 4",
                       "styles: [medium], ratio: '0:1'", docs=docs)
    result = cli("run", text, "--dry-run")
    assert "model workers" in result.output, result.output
    result = cli("run", text, "--set", "allow_empty=true")  # random weights may give no usable answer
    assert result.exit_code == 0, result.output
    step = manifest_at(tmp_path / "out").steps[2]
    rows, traced = _rows(tmp_path / "out") if step.rows_out else [], _trace(tmp_path / "out")
    assert len(rows) + len(traced) == step.rows_in == 2  # random weights: an answer, or a reason
    assert all(r["synth_model"] == str(model) for r in rows)
    assert step.counts["cache_misses"] == 2


FLAKY = {"fault_rate": 0.5, "faults": ["429", "500", "malformed", "truncated"], "retry_after": 0, "seed": 3}


@pytest.mark.parametrize("mock_llm", [FLAKY], indirect=True)
def test_duplicate_prompts_in_batches_in_flight_share_one_request_sequence(cli, tmp_path, mock_llm, monkeypatch):
    """Six texts, each in eight rows spread over the batches the io stage keeps in flight at once,
    against a server failing half its requests: each prompt is sent as one request sequence, a
    traced row's attempt count is the server's count for its prompt, and the output is the same
    bytes at concurrency 1."""
    docs = [{"text": f"Row {i % 6} says something."} for i in range(48)]
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    path = recipe_text(tmp_path, _llm(mock_llm, concurrency=256, max_retries=2, backoff_s=0.001),
                       "styles: [medium]", docs=docs, batch_rows=4)
    result = cli("run", path, "--workers", "1")
    assert result.exit_code == 0, result.output
    traced = _trace(tmp_path / "out")
    assert 0 < len(traced) < len(docs)
    for row in traced:  # every failed prompt's row says how many requests the server got for it
        messages = [{"role": "user", "content": TEMPLATE.format(prompt=PROMPTS["medium"], text=row["row"]["text"])}]
        attempts = int(re.search(r"after (\d+) attempts", row["detail"]).group(1))
        assert attempts == mock_llm.llm.received[prompt_key(messages)] == 3, row["detail"]
    assert len(mock_llm.llm.received) == 6 and max(mock_llm.llm.received.values()) <= 3

    fresh = RunningMock(**FLAKY)
    try:
        monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache-1"))
        path = recipe_text(tmp_path, _llm(fresh, concurrency=1, max_retries=2, backoff_s=0.001),
                           "styles: [medium]", docs=docs, batch_rows=4)
        result = cli("run", path, "--workers", "1", "--output", tmp_path / "one-at-a-time")
        assert result.exit_code == 0, result.output
    finally:
        fresh.stop()
    assert faultkit.digest(tmp_path / "one-at-a-time") == faultkit.digest(tmp_path / "out")
