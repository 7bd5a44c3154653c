"""Run decontaminate's fit and apply directly on a few texts (no runner): fast enough for property tests."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa

from curate.ops import Verdict
from curate_operators.decon.decontaminate import Decontaminate


def run(items: list[str], docs: list[str], batch_rows: int = 3, extra: dict | None = None, **params):
    """(results per doc, state): a result is None when dropped, else the row's dict after the step;
    plus the trace details of dropped rows."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bench = tmp / "bench.jsonl"
        bench.write_text("".join(json.dumps({"id": f"i{k}", "q": t, **(extra or {})}) + "\n" for k, t in enumerate(items)))
        op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "b", "path": str(bench), "columns": ["q"],
                                                              "id_column": "id"}], **params))
        table = pa.table({"text": docs, "_id": [str(i) for i in range(len(docs))], "_ord": list(range(len(docs)))})
        batches = table.to_batches(max_chunksize=batch_rows)
        state = op.fit(iter(batches), tmp / "work")
        rows, details = [], {}
        for batch in batches:
            out = op.apply(batch, state)
            verdict = out if isinstance(out, Verdict) else (out[1] if isinstance(out, tuple) else None)
            out_batch = out[0] if isinstance(out, tuple) else (batch if isinstance(out, Verdict) else out)
            for r, row in enumerate(out_batch.to_pylist()):
                if verdict is not None and not verdict.keep[r]:
                    details[row["_ord"]] = verdict.detail if isinstance(verdict.detail, str) else verdict.detail[r]
                    rows.append(None)
                else:
                    rows.append(row)
        return rows, details, state
