"""Preflight: `validate`, `run --dry-run` and `run` refuse, before any worker starts, what the run
would fail on later: inputs that match nothing, missing columns, SQL that does not bind to the
input's columns, and parameter values outside their meaning."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import write_jsonl


def one_line(text: str) -> str:
    return " ".join(text.split())


def recipe(tmp_path, steps: str, inp: str | None = None):
    p = tmp_path / "r.yaml"
    p.write_text(f"input: {{path: '{inp or tmp_path / 'in' / '*.jsonl'}'}}\n"
                 f"output: {{path: '{tmp_path / 'out'}'}}\nsteps:\n{steps}")
    return p


DOCS = [{"text": "the cat sat on the mat and that was that", "n": i} for i in range(5)]


def check_all_commands(cli, r, expected: str, *extra: str):
    """validate, run --dry-run and run all stop with exit 2 and `expected`, and nothing is written."""
    for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
        res = cli(*args, *extra)
        assert res.exit_code == 2, (args, res.output)
        assert expected in one_line(res.stderr), (args, res.stderr)
        assert "Traceback" not in res.output
    assert not (r.parent / "out").exists()


def test_an_input_glob_matching_nothing_is_refused(cli, tmp_path):
    (tmp_path / "in").mkdir()
    check_all_commands(cli, recipe(tmp_path, "  - exact_dedup: {}\n"), f"no input files match {tmp_path / 'in' / '*.jsonl'}")


def test_a_missing_text_column_is_refused_before_workers_start(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"body": d["text"]} for d in DOCS])
    check_all_commands(cli, recipe(tmp_path, "  - normalize_text: {}\n  - exact_dedup: {}\n"),
                       "steps[0].normalize_text needs column 'text' (input.text_column)")


def test_a_column_an_earlier_step_drops_is_missing(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, "  - select: {columns: [n]}\n  - gopher_quality: {}\n")
    check_all_commands(cli, r, "after steps[0].select: steps[1].gopher_quality needs column 'text'")


def test_columns_that_earlier_steps_provide_are_there(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"body": d["text"]} for d in DOCS])
    r = recipe(tmp_path, "  - rename: {columns: {body: text}}\n  - gopher_quality: {scores: true, min_words: 1}\n"
                         "  - sql_filter: {where: 'quality_gopher_word_count > 3 AND length(text) > 0'}\n")
    res = cli("validate", r)
    assert res.exit_code == 0, res.output
    assert "a.jsonl" in res.stdout  # says what it checked the columns against
    assert cli("run", r, "-w", "1").exit_code == 0


@pytest.mark.parametrize("where, expected", [
    ("lenght(text) > 3", 'steps[0].sql_filter.where: Catalog Error: Scalar Function with name lenght does not exist! '
                         'Did you mean "length"?'),
    ("txt <> ''", 'steps[0].sql_filter.where: Binder Error: Referenced column "txt" not found'),
    ("text > 3", "steps[0].sql_filter.where: Binder Error: Cannot compare values of type VARCHAR"),
])
def test_sql_is_bound_to_the_input_schema(cli, tmp_path, where, expected):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    check_all_commands(cli, recipe(tmp_path, f"  - sql_filter: {{where: \"{where}\"}}\n"), expected)


def test_sql_sees_the_column_types_of_parquet_input(cli, tmp_path):
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"text": ["a b c"], "score": pa.array([0.5], pa.float32())}), tmp_path / "in" / "a.parquet")
    r = recipe(tmp_path, "  - sql_filter: {where: \"score > 0.2\"}\n", str(tmp_path / "in"))
    assert cli("validate", r).exit_code == 0
    r = recipe(tmp_path, "  - sql_filter: {where: \"score LIKE 'x%'\"}\n", str(tmp_path / "in"))
    check_all_commands(cli, r, "steps[0].sql_filter.where")


def test_thresholds_outside_their_meaning_are_refused_at_load(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    check_all_commands(cli, recipe(tmp_path, "  - normalize_text: {}\n  - gopher_quality: {min_words: -10}\n"),
                       "steps[1].gopher_quality.min_words: Input should be greater than or equal to 0 (got -10)")


def test_validate_without_data(cli, tmp_path):
    r = recipe(tmp_path, "  - exact_dedup: {}\n")  # the input does not exist here
    res = cli("validate", r, "--no-data")
    assert res.exit_code == 0 and "input not checked" in one_line(res.stdout)
    res = cli("validate", r)
    assert res.exit_code == 2 and "--no-data" in one_line(res.stderr)


def test_validate_takes_the_input_and_output_from_the_command_line(cli, tmp_path):
    write_jsonl(tmp_path / "elsewhere.jsonl", DOCS)
    p = tmp_path / "r.yaml"
    p.write_text("steps:\n  - gopher_quality: {}\n")
    res = cli("validate", p, "--input", tmp_path / "elsewhere.jsonl", "--output", tmp_path / "o")
    assert res.exit_code == 0, res.output
    res = cli("validate", p, "--input", tmp_path / "elsewhere.jsonl", "--output", tmp_path / "o", "--set",
              "input.text_column=body")
    assert res.exit_code == 2 and "needs column 'body'" in one_line(res.stderr)


def test_preflight_is_callable_from_python(tmp_path):
    from curate import preflight, recipe as recipe_module
    from curate.errors import CurateError

    write_jsonl(tmp_path / "a.jsonl", DOCS)
    r = recipe_module.load(text=f"input: {{path: '{tmp_path}/a.jsonl'}}\noutput: {{path: '{tmp_path}/o'}}\n"
                                "steps:\n  - exact_dedup: {}\n")
    checked = preflight.check(r)
    assert [s.name for s in checked.sources] == ["a.jsonl"]
    assert {"text", "n", "_id"} <= set(checked.schema.names)
    with pytest.raises(CurateError, match="needs column 'body'"):
        preflight.check(recipe_module.load(text=f"input: {{path: '{tmp_path}/a.jsonl', text_column: body}}\n"
                                                f"output: {{path: '{tmp_path}/o'}}\nsteps:\n  - exact_dedup: {{}}\n"))
