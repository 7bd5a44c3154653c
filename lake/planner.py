"""The deletion plan: which contained tables to delete.

Minimize storage(kept) + lambda * sum_{i deleted} f_i * r_i subject to: every deleted
table is rebuilt from a confirmed container that is kept, and its rebuild time r_i (the
scan cost of that container) is at most the latency bound L. Containment is transitive
and the scan tests every pair, so a table deep in a chain already has a direct edge from
the chain's top: "a kept direct container" is enough.

Exact: a 0-1 integer program solved by HiGHS (scipy.optimize.milp), with x_i = delete i
and y_ji = rebuild i from j. Above `max_exact` candidate tables: a greedy pass by benefit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

# Only Parquet tables are deleted: their rebuild is exact at the Arrow level (rows, order,
# schema with metadata); a CSV/JSONL file cannot be rewritten byte for byte.
DELETABLE_FORMATS = ("parquet",)


@dataclass
class PlanInput:
    names: list[str]
    bytes: list[int]
    formats: list[str]
    frequency: list[float]
    # confirmed edges (container index, contained index)
    edges: list[tuple[int, int]]
    latency_bound: float = float("inf")  # seconds
    lam: float = 0.0  # storage bytes worth one second of rebuild per unit of access frequency
    scan_rate: float = 200e6  # bytes/second a rebuild scans a container at


@dataclass
class Plan:
    solver: str  # "milp" | "greedy"
    optimal: bool
    note: str
    # contained index -> container index it is rebuilt from
    deletions: dict[int, int] = field(default_factory=dict)
    objective: float = 0.0


def rebuild_seconds(inp: PlanInput, container: int) -> float:
    return inp.bytes[container] / inp.scan_rate


def allowed_edges(inp: PlanInput) -> dict[int, list[int]]:
    """Deletable table -> containers it may be rebuilt from within the latency bound."""
    into: dict[int, list[int]] = defaultdict(list)
    for a, b in inp.edges:
        if inp.formats[b] in DELETABLE_FORMATS and rebuild_seconds(inp, a) <= inp.latency_bound:
            into[b].append(a)
    return dict(into)


def objective(inp: PlanInput, deletions: dict[int, int]) -> float:
    kept = sum(s for i, s in enumerate(inp.bytes) if i not in deletions)
    return kept + inp.lam * sum(inp.frequency[i] * rebuild_seconds(inp, j) for i, j in deletions.items())


def is_valid(inp: PlanInput, deletions: dict[int, int]) -> bool:
    edges = set(inp.edges)
    return all(
        (j, i) in edges and j not in deletions and rebuild_seconds(inp, j) <= inp.latency_bound
        and inp.formats[i] in DELETABLE_FORMATS
        for i, j in deletions.items()
    )


def solve(inp: PlanInput, method: str = "auto", max_exact: int = 3000, time_limit: float = 60.0) -> Plan:
    into = allowed_edges(inp)
    if method == "greedy" or (method == "auto" and len(into) > max_exact):
        why = "requested" if method == "greedy" else f"{len(into)} candidate tables > {max_exact}"
        plan = _greedy(inp, into)
        plan.note = f"greedy ({why}); not proven optimal"
        return plan
    return _milp(inp, into, time_limit)


def _milp(inp: PlanInput, into: dict[int, list[int]], time_limit: float) -> Plan:
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    cand = sorted(into)
    if not cand:
        return Plan("milp", True, "milp (HiGHS): no table can be deleted", {}, objective(inp, {}))
    xi = {i: k for k, i in enumerate(cand)}
    pairs = [(j, i) for i in cand for j in into[i]]
    n_x = len(cand)
    n = n_x + len(pairs)
    # maximize bytes freed minus the weighted rebuild cost == minimize its negation
    c = np.zeros(n)
    for i, k in xi.items():
        c[k] = -inp.bytes[i]
    for e, (j, i) in enumerate(pairs):
        c[n_x + e] = inp.lam * inp.frequency[i] * rebuild_seconds(inp, j)
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    # each deleted table picks exactly one container: sum_j y_ji - x_i = 0
    first_pair: dict[int, list[int]] = defaultdict(list)
    for e, (j, i) in enumerate(pairs):
        first_pair[i].append(e)
    for i in cand:
        rows += [r] * (len(first_pair[i]) + 1)
        cols += [n_x + e for e in first_pair[i]] + [xi[i]]
        vals += [1.0] * len(first_pair[i]) + [-1.0]
        lo.append(0.0)
        hi.append(0.0)
        r += 1
    # that container is kept: y_ji + x_j <= 1
    for e, (j, i) in enumerate(pairs):
        if j in xi:
            rows += [r, r]
            cols += [n_x + e, xi[j]]
            vals += [1.0, 1.0]
            lo.append(-np.inf)
            hi.append(1.0)
            r += 1
    a = coo_array((vals, (rows, cols)), shape=(r, n)).tocsr()
    res = milp(
        c,
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if res.x is None:
        plan = _greedy(inp, into)
        plan.note = f"greedy (HiGHS found no solution: {res.message})"
        return plan
    x = np.round(res.x).astype(int)
    deletions = {i: j for e, (j, i) in enumerate(pairs) if x[n_x + e]}
    optimal = res.status == 0
    note = "milp (HiGHS): optimal" if optimal else f"milp (HiGHS): stopped early, best found ({res.message})"
    return Plan("milp", optimal, note, deletions, objective(inp, deletions))


def _greedy(inp: PlanInput, into: dict[int, list[int]]) -> Plan:
    """Largest net benefit first; a table used as a container is pinned as kept."""

    def net(i: int, j: int) -> float:
        return inp.bytes[i] - inp.lam * inp.frequency[i] * rebuild_seconds(inp, j)

    order = sorted(into, key=lambda i: -max(net(i, j) for j in into[i]))
    deleted: dict[int, int] = {}
    pinned: set[int] = set()
    for i in order:
        if i in pinned:
            continue
        options = [j for j in into[i] if j not in deleted]
        if not options:
            continue
        j = max(options, key=lambda j: (net(i, j), j in pinned))
        if net(i, j) <= 0:
            continue
        deleted[i] = j
        pinned.add(j)
    return Plan("greedy", False, "greedy", deleted, objective(inp, deleted))
