"""The conservation check: rows in = rows out + removed within each step, and each step gets
exactly what the step before it gave."""

import pytest
from hypothesis import example, given, strategies as st

from curate.trace import check_conservation


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


def test_operator_counts_add_up_over_tasks_and_survive_a_done_marker():
    from dataclasses import asdict

    from curate.trace import StepStats

    total = StepStats()
    for task in ({"tokens": 10, "redacted_email": 1}, {"tokens": 5}, {}):
        done = asdict(StepStats(rows_in=1, rows_out=1, counts=task))  # what a task's done marker holds
        total.add(StepStats(**done))
    assert total.counts == {"tokens": 15, "redacted_email": 1}
