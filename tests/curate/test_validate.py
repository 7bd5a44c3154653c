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


def write_parquet(path, columns: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def three_parquet_files(tmp_path):
    return [write_parquet(tmp_path / "in" / f"{name}.parquet", {"text": [f"row {i} of {name}" for i in range(20)]})
            for name in "abc"]


@pytest.mark.parametrize("steps", ["", "  - exact_dedup: {}\n"])
@pytest.mark.parametrize("damage", ["footer", "truncated"])
def test_a_damaged_parquet_file_after_the_first_is_named(cli, tmp_path, damage, steps):
    # Opened first by planning or the progress bars' row count, it was "internal error: OSError:
    # Couldn't deserialize thrift" with no file named; a recipe reading no column must find it too.
    bad = three_parquet_files(tmp_path)[1]
    data = bytearray(bad.read_bytes())
    if damage == "footer":  # the footer's metadata overwritten; its length and magic bytes intact
        size = int.from_bytes(data[-8:-4], "little")
        data[-8 - size:-8] = b"\xff" * size
    else:
        data = data[:5]
    bad.write_bytes(bytes(data))
    check_all_commands(cli, recipe(tmp_path, steps, str(tmp_path / "in")), f"{bad}: not a readable Parquet file")


def test_an_output_path_that_is_a_file_is_refused(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, "  - exact_dedup: {}\n")
    (tmp_path / "out").write_text("not a directory")
    for output, expected in ((tmp_path / "out", f"output.path: {tmp_path / 'out'} is an existing file"),
                             (tmp_path / "out" / "run", f"{tmp_path / 'out'} is a file, so no directory")):
        for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
            res = cli(*args, "--output", output)
            assert res.exit_code == 2, (args, res.output)
            assert expected in one_line(res.stderr)
    assert (tmp_path / "out").read_text() == "not a directory"


@pytest.mark.parametrize("inp", ["in", "in/**/*.jsonl", "in/*/x.jsonl"])
def test_an_output_inside_a_directory_the_input_searches_is_refused(cli, tmp_path, inp):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    write_jsonl(tmp_path / "in" / "sub" / "x.jsonl", DOCS)
    r = recipe(tmp_path, "  - exact_dedup: {}\n", str(tmp_path / inp))
    for args in (("validate", r), ("run", r, "--dry-run"), ("run", r, "-w", "1")):
        res = cli(*args, "--output", tmp_path / "in" / "sub" / "out")
        assert res.exit_code == 2, (args, res.output)
        assert (f"output.path: {tmp_path / 'in' / 'sub' / 'out'} is inside {tmp_path / 'in'}, which the input "
                f"({tmp_path / inp}) is read from") in one_line(res.stderr)
    assert not (tmp_path / "in" / "sub" / "out").exists()


def test_an_output_beside_files_a_glob_reads_is_allowed(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    r = recipe(tmp_path, "  - exact_dedup: {}\n")  # in/*.jsonl: never looks into in/out
    res = cli("run", r, "-w", "1", "--output", tmp_path / "in" / "out")
    assert res.exit_code == 0, res.output


def test_a_parquet_file_whose_text_column_has_another_type_is_named(cli, tmp_path):
    # It was "normalize_text: column 'text' must be text, it is int64", from a worker, no file named.
    write_parquet(tmp_path / "in" / "a.parquet", {"text": ["some words here"] * 5})
    bad = write_parquet(tmp_path / "in" / "b.parquet", {"text": pa.array([1, 2, 3], pa.int64())})
    check_all_commands(cli, recipe(tmp_path, "  - normalize_text: {}\n  - gopher_quality: {}\n", str(tmp_path / "in")),
                       f"{bad}: column 'text' is int64, but string in the first input file "
                       f"({tmp_path / 'in' / 'a.parquet'}), and steps[0].normalize_text reads it")


def test_a_jsonl_file_whose_text_column_has_another_type_is_named(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", DOCS)
    bad = write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": 7, "n": 1}])
    check_all_commands(cli, recipe(tmp_path, "  - gopher_quality: {}\n"),
                       f"{bad}: column 'text' is int64, but string in the first input file")


def test_columns_an_sql_predicate_reads_are_compared_too(cli, tmp_path):
    write_parquet(tmp_path / "in" / "a.parquet", {"text": ["x"] * 3, "score": [0.1, 0.7, 0.9]})
    bad = write_parquet(tmp_path / "in" / "b.parquet", {"text": ["y"] * 3, "score": ["low", "high", "high"]})
    check_all_commands(cli, recipe(tmp_path, "  - sql_filter: {where: 'score > 0.5'}\n", str(tmp_path / "in")),
                       f"{bad}: column 'score' is string, but double in the first input file")


def test_a_later_parquet_file_without_a_column_read_is_named(cli, tmp_path):
    write_parquet(tmp_path / "in" / "a.parquet", {"text": ["x"] * 3})
    bad = write_parquet(tmp_path / "in" / "b.parquet", {"body": ["y"] * 3})
    check_all_commands(cli, recipe(tmp_path, "  - exact_dedup: {}\n", str(tmp_path / "in")),
                       f"{bad}: no column 'text', which steps[0].exact_dedup reads")


def test_types_of_one_kind_may_differ_between_files(cli, tmp_path):
    write_parquet(tmp_path / "in" / "a.parquet", {"text": ["a b"] * 3, "score": pa.array([1, 2, 3], pa.int32())})
    write_parquet(tmp_path / "in" / "b.parquet", {"text": pa.array(["c d"] * 3, pa.large_string()),
                                                  "score": [0.5, 2.5, 3.5]})
    res = cli("run", recipe(tmp_path, "  - normalize_text: {}\n  - sql_filter: {where: 'score > 1'}\n",
                            str(tmp_path / "in")), "-w", "1")
    assert res.exit_code == 0, res.output
    assert sum(pq.read_metadata(f).num_rows for f in (tmp_path / "out" / "data").iterdir()) == 4


def test_columns_no_step_reads_may_differ_in_type_and_are_carried_as_text(cli, tmp_path):
    write_parquet(tmp_path / "in" / "a.parquet", {"text": ["a b", "long enough"] * 3, "other": ["p", "q"] * 3})
    write_parquet(tmp_path / "in" / "b.parquet", {"text": ["c d", "long enough"] * 3, "other": [1, 2] * 3})
    r = recipe(tmp_path, "  - sql_filter: {where: 'length(text) > 5'}\n", str(tmp_path / "in"))
    res = cli("validate", r)
    assert res.exit_code == 0, res.output
    # A string in one file and an integer in another: the input's type is text, decided before the
    # run, so the removed rows of both files meet in one trace file and the shards read as one
    # dataset (this was "internal error: ArrowTypeError: Unable to merge" at the end of the run).
    res = cli("run", r, "-w", "1")
    assert res.exit_code == 0, res.output
    data = pq.read_table(tmp_path / "out" / "data")
    assert data.schema.field("other").type == pa.string()
    assert sorted(data.column("other").to_pylist()) == ["2", "2", "2", "q", "q", "q"]
    trace = pq.read_table(tmp_path / "out" / "trace")
    assert sorted(trace.column("row").combine_chunks().field("other").to_pylist()) == ["1", "1", "1", "p", "p", "p"]
