"""The deletion planner: every plan is valid; the integer program is optimal (checked by
enumeration on small graphs) and never worse than greedy."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from curate_lake.planner import PlanInput, allowed_edges, is_valid, objective, solve


@st.composite
def plan_inputs(draw, max_tables: int = 7):
    n = draw(st.integers(2, max_tables))
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    return PlanInput(
        names=[f"t{i}" for i in range(n)],
        bytes=draw(st.lists(st.integers(1, 10_000), min_size=n, max_size=n)),
        formats=draw(st.lists(st.sampled_from(["parquet", "parquet", "csv"]), min_size=n, max_size=n)),
        frequency=draw(st.lists(st.floats(0, 10), min_size=n, max_size=n)),
        edges=edges,
        latency_bound=draw(st.sampled_from([float("inf"), 20.0, 50.0])),
        lam=draw(st.sampled_from([0.0, 10.0, 500.0])),
        scan_rate=200.0,
    )


def best_by_enumeration(inp: PlanInput) -> float:
    into = allowed_edges(inp)
    best = objective(inp, {})
    cands = sorted(into)
    for choice in itertools.product(*[[None, *into[i]] for i in cands]):
        deletions = {i: j for i, j in zip(cands, choice) if j is not None}
        if is_valid(inp, deletions):
            best = min(best, objective(inp, deletions))
    return best


@settings(max_examples=40, deadline=None)
@given(plan_inputs())
def test_milp_is_valid_and_optimal(inp):
    plan = solve(inp, method="milp")
    assert plan.solver == "milp" and plan.optimal
    assert is_valid(inp, plan.deletions)
    assert abs(plan.objective - best_by_enumeration(inp)) <= 1e-6 * max(1.0, plan.objective)


@settings(max_examples=60, deadline=None)
@given(plan_inputs(max_tables=12))
def test_greedy_is_valid_and_never_better_than_milp(inp):
    greedy = solve(inp, method="greedy")
    exact = solve(inp, method="milp")
    assert greedy.solver == "greedy" and not greedy.optimal
    assert is_valid(inp, greedy.deletions)
    assert exact.objective <= greedy.objective + 1e-6 * max(1.0, greedy.objective)


def test_auto_switches_to_greedy_above_max_exact():
    inp = PlanInput(
        names=["a", "b", "c"], bytes=[100, 10, 10], formats=["parquet"] * 3, frequency=[1.0] * 3,
        edges=[(0, 1), (0, 2)],
    )
    assert solve(inp, max_exact=1).solver == "greedy"
    assert "2 candidate tables > 1" in solve(inp, max_exact=1).note
    plan = solve(inp)
    assert plan.solver == "milp" and plan.deletions == {1: 0, 2: 0}


def test_mutual_copies_keep_one():
    inp = PlanInput(names=["a", "b"], bytes=[10, 10], formats=["parquet"] * 2, frequency=[1.0] * 2, edges=[(0, 1), (1, 0)])
    for method in ("milp", "greedy"):
        assert len(solve(inp, method=method).deletions) == 1


def test_latency_bound_and_formats_limit_deletions():
    # rebuilding from the 1 GB container takes 5 s at 200 MB/s
    inp = PlanInput(
        names=["big", "small", "csv"], bytes=[10**9, 10**6, 10**6], formats=["parquet", "parquet", "csv"],
        frequency=[1.0] * 3, edges=[(0, 1), (0, 2)], latency_bound=1.0, scan_rate=200e6,
    )
    assert solve(inp).deletions == {}
    inp.latency_bound = 10.0
    assert solve(inp).deletions == {1: 0}  # the CSV table is never deleted


def test_access_cost_can_outweigh_storage():
    inp = PlanInput(
        names=["a", "b"], bytes=[200e6, 1000], formats=["parquet"] * 2, frequency=[1.0, 50.0], edges=[(0, 1)],
        lam=100.0, scan_rate=200e6,
    )
    # deleting b frees 1000 bytes but costs 100 * 50 accesses * 1 s
    assert solve(inp).deletions == {}
    inp.frequency = [1.0, 1.0]
    inp.lam = 1.0
    assert solve(inp).deletions == {1: 0}
