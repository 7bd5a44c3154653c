"""The conservation check: rows in = rows out + removed within each step, and each step gets
exactly what the step before it gave."""

import pytest
from hypothesis import example, given, strategies as st

from curate.errors import CurateError
from curate.trace import check_conservation, check_not_emptied


def funnel(rows: int, removals: list[int]) -> list[dict]:
    steps, left = [], rows
    for i, removed in enumerate(removals):
        removed = min(removed, left)
        steps.append({"step": f"{i:02d}", "rows_in": left, "rows_out": left - removed, "removed": removed})
        left -= removed
    return steps


counts = st.tuples(st.integers(0, 10**6), st.lists(st.integers(0, 10**5), min_size=1, max_size=6))


@given(counts)
@example((0, [0]))  # an empty input
@example((5, [5, 0]))  # every row removed by the first step
def test_a_conserving_funnel_passes(case):
    check_conservation(funnel(*case))


@given(counts, st.data())
@example((1, [0]), None)  # one row, off by one
def test_any_off_by_one_count_is_caught(case, data):
    steps = funnel(*case)
    i = data.draw(st.integers(0, len(steps) - 1)) if data else 0
    key = data.draw(st.sampled_from(["rows_in", "rows_out", "removed"])) if data else "rows_out"
    delta = data.draw(st.sampled_from([-1, 1])) if data else 1
    steps[i][key] += delta
    with pytest.raises(RuntimeError, match="conservation violated"):
        check_conservation(steps)


def test_a_step_that_changes_rows_may_emit_more_than_it_read_but_must_hand_them_on():
    steps = [{"step": "00_read", "rows_in": 3, "rows_out": 3, "removed": 0},
             {"step": "01_chunk", "rows_in": 3, "rows_out": 9, "removed": 0, "expanded": 3},
             {"step": "02_filter", "rows_in": 9, "rows_out": 4, "removed": 5}]
    check_conservation(steps)
    steps[2].update(rows_in=8, rows_out=3)
    with pytest.raises(RuntimeError, match="conservation violated before 02_filter"):
        check_conservation(steps)


def test_a_step_that_changes_rows_accounts_for_every_input_row():
    steps = [{"step": "00_read", "rows_in": 3, "rows_out": 3, "removed": 0},
             {"step": "01_chunk", "rows_in": 3, "rows_out": 9, "removed": 1, "expanded": 2}]
    check_conservation(steps)
    steps[1]["expanded"] = 1  # a row neither expanded nor traced
    with pytest.raises(RuntimeError, match="conservation violated at 01_chunk: 3 in != 1 expanded"):
        check_conservation(steps)


def manifest_steps(*counts: tuple[int, int], reasons=None) -> list[dict]:
    """The manifest's steps: a read step, then recipe steps, from (rows in, rows out) pairs."""
    return [{"step": f"{i:02d}_{'read' if i == 0 else 'op'}", "op": "read" if i == 0 else f"op{i}",
             "kind": "read" if i == 0 else "filter", "rows_in": n_in, "rows_out": n_out, "removed": n_in - n_out,
             "reasons": (reasons or {}).get(i, {})} for i, (n_in, n_out) in enumerate(counts)]


def test_a_run_whose_steps_remove_every_row_stops_unless_allowed():
    emptied = manifest_steps((5, 5), (5, 2), (2, 0), (0, 0), reasons={2: {"too_short": 1, "low_score": 1}})
    with pytest.raises(CurateError, match=r"^steps\[1\]\.op2 removed the last 2 rows \(too_short \(1\), "
                                          r"low_score \(1\)\), so the output would be empty.*allow_empty: true"):
        check_not_emptied(emptied, allow_empty=False)
    check_not_emptied(emptied, allow_empty=True)
    check_not_emptied(manifest_steps((5, 5), (5, 1)), allow_empty=False)  # a row is left
    check_not_emptied(manifest_steps((0, 0), (0, 0)), allow_empty=False)  # nothing came in: nothing removed
    with pytest.raises(CurateError, match=r"^reading the input removed the last 3 rows \(unparseable \(3\)\), so "
                                          r"the output would be empty. Check the input files"):
        check_not_emptied(manifest_steps((3, 0), (0, 0), reasons={0: {"unparseable": 3}}), allow_empty=False)


def test_operator_counts_add_up_over_tasks_and_survive_a_done_marker():
    from dataclasses import asdict

    from curate.trace import StepStats

    total = StepStats()
    for task in ({"tokens": 10, "redacted_email": 1}, {"tokens": 5}, {}):
        done = asdict(StepStats(rows_in=1, rows_out=1, counts=task))  # what a task's done marker holds
        total.add(StepStats(**done))
    assert total.counts == {"tokens": 15, "redacted_email": 1}


def test_a_steps_trace_parts_are_merged_into_few_row_groups(tmp_path, monkeypatch):
    """A part per task (1,000 WARC files: 1,000 parts of a row or two) must not make a row group
    each: the merged file's groups hold MERGED_GROUP_ROWS rows (or MERGED_GROUP_BYTES), cut
    between parts, and the rows are the parts' in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate import trace

    parts = []
    for i in range(300):
        part = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"_id": [f"{i}-{j}" for j in range(i % 3 + 1)], "reason": ["r"] * (i % 3 + 1)}), part)
        parts.append(part)
    rows = trace.merge_shards(parts, tmp_path / "all.parquet")
    merged = pq.ParquetFile(tmp_path / "all.parquet")
    assert rows == merged.metadata.num_rows == 600 and merged.metadata.num_row_groups == 1
    assert merged.read().column("_id").to_pylist() == [f"{i}-{j}" for i in range(300) for j in range(i % 3 + 1)]
    monkeypatch.setattr(trace, "MERGED_GROUP_ROWS", 100)
    trace.merge_shards(parts, tmp_path / "cut.parquet")
    groups = [g.num_rows for g in (pq.ParquetFile(tmp_path / "cut.parquet").metadata.row_group(k)
                                   for k in range(pq.ParquetFile(tmp_path / "cut.parquet").num_row_groups))]
    assert sum(groups) == 600 and all(100 <= n <= 102 for n in groups[:-1]) and groups[-1] <= 102


def test_the_trace_schema_is_unify_schemas_of_the_parts_without_holding_their_schemas(tmp_path, monkeypatch):
    """trace_schema folds the parts' schemas one at a time: the schema unify_schemas gives the
    whole list (columns in order of first sight, types promoted, struct fields merged, the first
    part's metadata), and no part's schema is still alive once the next part is read (a list of
    them held 2.5 KB a part in the run's driver: 1,500 parts for 1,000 WARC files). Columns
    whose types cannot be unified give None, as does no part."""
    import weakref

    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate import trace

    tables = [
        pa.table({"_id": ["a"], "row": [{"url": "u", "n": 1}]}).replace_schema_metadata({"first": "1"}),
        pa.table({"_id": ["b"], "reason": ["r"], "row": [{"text": "t"}]}),
        pa.table({"_id": ["c"], "row": pa.array([{"n": 2**40, "score": 0.5}])}),
        pa.table({"_id": ["d"], "detail": pa.array([None], pa.null()), "row": [{"url": "v"}]}),
        pa.table({"_id": ["e"], "detail": ["x"], "reason": ["s"]}),
    ]
    parts = []
    for i, table in enumerate(tables * 3):
        parts.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(table, parts[-1])
    expected = pa.unify_schemas([pq.read_schema(p) for p in parts], promote_options="permissive")

    alive: list[weakref.ref] = []
    read = pq.read_schema

    def read_schema(path):
        assert sum(r() is not None for r in alive) <= 1, "the parts' schemas read before are held"
        schema = read(path)
        alive.append(weakref.ref(schema))
        return schema

    monkeypatch.setattr(trace.pq, "read_schema", read_schema)
    schema = trace.trace_schema(iter(parts))
    assert schema is not None and schema.equals(expected, check_metadata=True) and len(alive) == len(parts)
    monkeypatch.undo()
    clash = tmp_path / "clash.parquet"
    pq.write_table(pa.table({"_id": ["f"], "reason": [1.5]}), clash)
    assert trace.trace_schema([*parts, clash]) is None
    assert trace.trace_schema([]) is None
