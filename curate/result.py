"""What an operator hands back for one batch, and the one place its answer is read.

A Map's `process`, a Filter's `keep` and a Global's `apply` return a `Result`, or, for the two
plain cases, just its part: a `Verdict` (rows removed, columns unchanged) or a RecordBatch (the
rows, with new or changed columns, none removed). `to_result` turns any of these into a Result
and refuses everything else naming the operator; the engine reads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Union

import numpy as np
import pyarrow as pa

ReasonLike = Union[str, pa.Array, np.ndarray, list, None]


@dataclass
class Verdict:
    """Which rows of a batch stay (`keep`), and for the others a reason and a detail.

    `reason` and `detail` are either one string for every dropped row or one value per
    row of the batch (values at kept rows are ignored).
    """

    keep: np.ndarray
    reason: ReasonLike = None
    detail: ReasonLike = None

    def __post_init__(self):
        if isinstance(self.keep, (pa.Array, pa.ChunkedArray)):
            self.keep = self.keep.to_numpy(zero_copy_only=False)
        self.keep = np.asarray(self.keep, dtype=bool)


class Result(NamedTuple):
    """An operator's answer for one batch.

    `batch`: the rows it hands on (with the columns it added or changed); for a Map with
    `changes_rows`, its children. `verdict`: which rows go to the trace, and why; over `batch`'s
    rows, or, for a Map with `changes_rows`, over its input rows (it must give one). None: every
    row of `batch` stays. A NamedTuple, so `batch, verdict = op.process(...)` reads it."""

    batch: pa.RecordBatch
    verdict: Verdict | None = None


class OperatorBug(RuntimeError):
    """An operator broke the contract of curate/ops.py (the run stops: its output would be wrong).
    `step`: the recipe step (its name and 1-based index) whose operator did it."""

    def __init__(self, step, message: str):
        super().__init__(f"bug in operator {step.name} (steps[{step.index - 1}]): {message}")


def to_result(step, op, batch: pa.RecordBatch, answer: Any) -> Result:
    """`answer`, what `op` returned for `batch`, as a Result checked against the contract; an
    OperatorBug naming `step` for any other shape, a verdict over the wrong rows, a Map that
    changed the row count without `changes_rows`, or children without `_parent_id`."""
    expanding = op.changes_rows
    result = None
    if isinstance(answer, Result) and isinstance(answer.batch, pa.RecordBatch):
        if answer.verdict is None or isinstance(answer.verdict, Verdict):
            result = answer
    elif not expanding and isinstance(answer, Verdict):
        result = Result(batch, answer)
    elif not expanding and isinstance(answer, pa.RecordBatch):
        result = Result(answer)
    if result is None:
        wanted = (
            f"Result(children, Verdict over its {batch.num_rows} input rows)"
            if expanding
            else "a Result(batch, verdict), a Verdict or a RecordBatch"
        )
        raise OperatorBug(
            step, f"{type(op).__name__} returned {_shape(answer)}; it returns {wanted} (curate/result.py)"
        )
    if expanding:
        _check_children(step, batch, result)
    else:
        _check_rows(step, op, batch, result)
    return result


def _check_rows(step, op, batch: pa.RecordBatch, result: Result) -> None:
    if op.kind == "map" and result.batch.num_rows != batch.num_rows:
        raise OperatorBug(
            step,
            f"returned {result.batch.num_rows} rows for {batch.num_rows}; a Map that changes "
            f"the row count sets changes_rows = True and returns a verdict over its input rows",
        )
    if result.verdict is not None and len(result.verdict.keep) != result.batch.num_rows:
        raise OperatorBug(
            step, f"returned a verdict for {len(result.verdict.keep)} rows, the batch has {result.batch.num_rows}"
        )


def _check_children(step, parents: pa.RecordBatch, result: Result) -> None:
    if result.verdict is None:
        raise OperatorBug(
            step,
            f"returned children without a verdict; a step with changes_rows returns "
            f"Result(children, Verdict over its {parents.num_rows} input rows)",
        )
    if len(result.verdict.keep) != parents.num_rows:
        raise OperatorBug(
            step,
            f"returned a verdict over {len(result.verdict.keep)} rows; it got "
            f"{parents.num_rows} input rows and its verdict is over those",
        )
    if "_parent_id" not in result.batch.schema.names:
        raise OperatorBug(
            step, "returned children without a _parent_id column (the _id of the input row each came from)"
        )


def _shape(answer: Any) -> str:
    if isinstance(answer, tuple) and not isinstance(answer, Result):
        return f"a plain tuple ({', '.join(type(a).__name__ for a in answer)})"
    if isinstance(answer, Result):
        return f"Result({type(answer.batch).__name__}, {type(answer.verdict).__name__})"
    return type(answer).__name__
