"""Row accounting for Maps that change the row count (`changes_rows = True`: 1 -> n, n -> 1).

Such an operator returns Result(children, Verdict over its *input* rows), checked for shape by
curate/result.py. Every child names the input row it came from in `_parent_id`; an input row the
verdict keeps must have produced children, one it drops must have none and goes to the trace
with its reason. So for the step rows in = input rows that produced children (`expanded`) +
input rows traced (`removed`), and rows out counts the children. The engine, not the operator,
gives children their `_id`: `<parent _id>#<k>`, k numbering that parent's children in the order
returned, so ids are the same whatever the batching or the number of workers.

An operator that breaks these rules (a row dropped without a verdict, a child of an unknown
parent) is a bug in that operator, and the run stops naming it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.ops import Verdict
from curate.result import OperatorBug


def parent_index(step, parents: pa.RecordBatch, children: pa.RecordBatch, verdict: Verdict) -> np.ndarray:
    """For each child, the position of its parent among the input rows; checks that every input
    row is accounted for: kept with children, or dropped by the verdict without any."""
    parent_ids = parents.column("_id")
    of_child = children.column("_parent_id")
    idx = pc.index_in(of_child, value_set=parent_ids)
    if idx.null_count:
        bad = of_child.filter(pc.is_null(idx))[0].as_py()
        raise OperatorBug(step, f"returned a child whose _parent_id {bad!r} is not the _id of any of its input rows")
    idx = idx.to_numpy(zero_copy_only=False).astype(np.int64)
    produced = np.zeros(parents.num_rows, dtype=bool)
    produced[idx] = True
    silent = verdict.keep & ~produced
    if silent.any():
        first = parent_ids[int(np.flatnonzero(silent)[0])].as_py()
        raise OperatorBug(
            step,
            f"dropped {int(silent.sum())} of its {parents.num_rows} input rows without a verdict "
            f"(first: _id {first!r}): an input row it keeps must have children, one it drops "
            f"must be False in its Verdict with a reason",
        )
    orphaned = ~verdict.keep & produced
    if orphaned.any():
        first = parent_ids[int(np.flatnonzero(orphaned)[0])].as_py()
        raise OperatorBug(step, f"returned children of input row {first!r}, which its verdict drops")
    return idx


def child_ids(parents: pa.RecordBatch, idx: np.ndarray) -> pa.Array:
    """`<parent _id>#<k>`: k counts each parent's children in the order they were returned."""
    order = np.argsort(idx, kind="stable")
    grouped = idx[order]
    k = np.empty(len(idx), dtype=np.int64)
    k[order] = np.arange(len(idx)) - np.searchsorted(grouped, grouped, side="left")
    parent = parents.column("_id").cast(pa.string()).take(pa.array(idx))
    return pc.binary_join_element_wise(parent, pa.array(k.astype(str)), "#")


def with_ids(children: pa.RecordBatch, ids: pa.Array) -> pa.RecordBatch:
    """The children with the engine's `_id` first (any `_id` the operator set is replaced); their
    fields keep their metadata (output_formats.JSON_TEXT)."""
    rest = [n for n in children.schema.names if n != "_id"]
    schema = pa.schema([pa.field("_id", ids.type), *(children.schema.field(n) for n in rest)])
    return pa.RecordBatch.from_arrays([ids, *(children.column(n) for n in rest)], schema=schema)
