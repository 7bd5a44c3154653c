"""llm_judge: a rating per row from an LLM through the shared backends, parsed to a number on
the scale, the raw answer kept; failures and unparsable answers are null scores, counted."""


import pyarrow.parquet as pq
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from curate_operators.score.llm_judge import parse_score
from tests.conftest import write_jsonl


@pytest.mark.parametrize("answer, expected", [
    ("7", 7.0), ("Score: 8/10", 8.0), ("I'd rate it 6.5 out of 10.", 6.5), ("rating = 3", 3.0),
    ("Out of 10, I give 9", 9.0), ("7 out of 10", 7.0),  # denominators are not scores
    ("42", None), ("no number", None), ("", None), (None, None), ("Score: 0, though 4 is fair", None),
])
def test_parse_score(answer, expected):
    assert parse_score(answer, 1, 10) == expected


@given(st.floats(1, 10, allow_nan=False).map(lambda v: round(v, 2)), st.sampled_from(["{}", "Score: {}", "{}/10"]))
@example(1.0, "{}")
@example(10.0, "Score: {}")
def test_a_number_on_the_scale_is_read_back(value, shape):
    assert parse_score(shape.format(value), 1, 10) == value


def test_llm_judge_scores_rows_through_curate_run(cli, tmp_path, monkeypatch, manifest_at):
    from tests.curate.llm.mockkit import RunningMock

    server = RunningMock(api_key="k-9")
    try:
        monkeypatch.setenv("JUDGE_KEY", "k-9")
        monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
        # The mock answers with the words of the prompt's last paragraph reversed: "8 good" -> "good 8".
        docs = write_jsonl(tmp_path / "in.jsonl", [{"text": t} for t in ("good 8", "fine 5", "42", "no digits", "")])
        recipe = tmp_path / "judge.yaml"
        recipe.write_text(f"input: {{path: '{docs}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\nsteps:\n"
                          f"  - llm_judge: {{llm: {{model: mock, base_url: '{server.url}', api_key_env: JUDGE_KEY}}}}\n")
        result = cli("run", recipe, "-w", "1", "--no-report")
        assert result.exit_code == 0, result.output
        asked = sum(server.llm.received.values())
    finally:
        server.stop()
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    assert [r["quality_llm_judge"] for r in rows] == [8.0, 5.0, None, None, None]  # every row kept
    assert "8" in rows[0]["quality_llm_judge_raw"]  # the raw answer, kept for audit
    step = manifest_at(tmp_path / "out").steps[1]
    assert step.removed == 0
    assert step.counts["judge_unparsed"] == 2 and step.counts["judge_no_text"] == 1
    assert asked == 4  # the row with no text is not sent
