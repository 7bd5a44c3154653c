"""The operator contract: Map, Filter and Global operators over pyarrow.RecordBatch.

An operator is a class with a pydantic `Params` model, the columns it `requires` and
`provides`, and the `resources` it needs. It never knows which engine runs it.

- Map.process(batch) -> batch: adds or transforms columns.
- Filter.keep(batch) -> Verdict: which rows stay; the engine traces the others with the reason.
- Global.fit(batches, workdir) -> state, then Global.apply(batch, state) -> Verdict | batch,
  for decisions that need the whole dataset (dedup, clustering, pruning).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Union

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every operator's parameters; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(BaseModel):
    """What one instance of the operator needs; the engine sizes its workers from this."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    cpus: float = 1.0
    gpus: float = 0.0
    memory_gb: float | None = None


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


class Operator:
    """Base of all operators. Subclasses set `name`, `Params` and, as needed, the rest."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params
    resources: ClassVar[Resources] = Resources()
    # Where the engine runs it: "cpu" inside every task process; "model" in a model worker pool
    # (one process per visible GPU, else CPU model workers) that loads the model once.
    # Operators declaring `resources.gpus > 0` are "model" whatever this says.
    resource_class: ClassVar[str] = "cpu"
    # Columns the operator reads and writes; instances may compute them from params.
    requires: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()

    def __init__(self, params: Params | None = None, *, seed: int = 0, text_column: str = "text"):
        self.params = params if params is not None else self.Params()
        self.seed = seed
        self.text_column = text_column

    def setup(self) -> None:
        """Load what the operator needs once per worker (models, tables). Default: nothing."""

    def teardown(self) -> None:
        """Free what `setup` loaded (models, GPU memory) when its stage is done. Default: nothing."""

    def take_counts(self) -> dict[str, int]:
        """Counts the operator kept since the last call (e.g. redactions per kind, tokens), then
        forgets them; the engine sums them over tasks into the manifest's step entry. Default: none."""
        return {}

    @classmethod
    def runs_on(cls) -> str:
        """The resource class the engine gives the operator: "cpu" or "model"."""
        return "model" if cls.resources.gpus > 0 else cls.resource_class

    # Preflight (curate.preflight) walks the steps with these before any data is processed.
    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The columns after this step, given those it gets. Default: they pass through, and each
        of `provides` not among them is added with the type `null` (its type shows only in data)."""
        for name in self.provides:
            if name not in schema.names:
                schema = schema.append(pa.field(name, pa.null()))
        return schema

    def check_schema(self, schema: pa.Schema) -> None:
        """Check the parameters against the columns this step will get (their names and types);
        raise RecipeError(parameter name, message). Default: nothing to check beyond `requires`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params!r})"


class Map(Operator):
    """`process` returns the new batch, or (batch, Verdict) to send rows it cannot handle (of
    the returned batch) to the trace with a reason."""

    kind = "map"
    # True when the operator may emit more or fewer rows than it got (then it sets _parent_id).
    changes_rows: ClassVar[bool] = False

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        raise NotImplementedError


class Filter(Operator):
    """`keep` returns a Verdict, or (batch, Verdict) to also add columns (e.g. the scores it
    measured) to the rows it keeps."""

    kind = "filter"

    def keep(self, batch: pa.RecordBatch) -> Verdict | tuple[pa.RecordBatch, Verdict]:
        raise NotImplementedError


class Global(Operator):
    """Sees the whole dataset in `fit`, then decides batch by batch in `apply`.

    Batches given to `fit` and `apply` carry `_id` and `_ord` (the row's position in the
    stage input, 0..n-1, the same in both passes) besides the columns in `requires`.
    `fit` may write large state under `workdir`; the state it returns must pickle.
    """

    kind = "global"
    # Input columns `fit` reads besides what `prepare` made; None means `requires`.
    fit_columns: tuple[str, ...] | None = None

    def prepare(self, batch: pa.RecordBatch) -> dict[str, pa.Array] | None:
        """Optional per-row work for `fit` (hashing, signatures), run in parallel by the workers
        of the stage before, as each batch is written. The columns returned are stored with the
        rows and handed to `fit` under the same names, so `fit` need not read the text again."""
        return None

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path) -> Any:
        raise NotImplementedError

    def apply(self, batch: pa.RecordBatch, state: Any) -> Verdict | pa.RecordBatch:
        raise NotImplementedError
