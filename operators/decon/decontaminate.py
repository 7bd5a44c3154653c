"""decontaminate: documents that contain benchmark items, found by exact n-gram overlap.

A Global step, because the deliverable is a dataset-level report (per benchmark: items, items
found, documents affected, the most matched items) and because the index is built once per run:
`fit` builds it under the step's work directory (memory-mapped by every worker), scans every
document against it in the run's parallel pieces and keeps, per contaminated document, the item
the trace names. `apply` then drops, marks or redacts (re-finding the spans of the few contaminated
documents of its batch), so the output never depends on the number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import Field

from curate.columns import put
from curate.errors import RecipeError
from curate.fit_state import ROW_GROUP_ROWS
from curate.ops import SERIAL, FitState, Global, Parallel, Params, Result, Verdict, reads_column
from curate_operators.decon import benchmarks as bm
from curate_operators.decon import index as idx
from curate_operators.decon.match import best, find, joined, pairs
from curate_operators.decon.redact import redact
from curate_operators.decon.text import word_spans

REASON = "contaminated"
MARK_COLUMNS = {"contamination_benchmark": pa.string(), "contamination_item": pa.string(),
                "contamination_ngrams": pa.int64(), "contamination_offset": pa.int64(),
                "contamination_items": pa.int64()}


class DecontaminateParams(Params):
    benchmarks: list[bm.Benchmark] = Field(..., min_length=1, description="The benchmarks: {name, path, columns, id_column}; one index holds them all.")
    columns: list[str] | None = reads_column(None, "The columns checked, joined in order (e.g. [instruction, response]); default: the text column.", instead_of_text=True)
    ngram: int = Field(13, ge=1, le=1000, description="n of the word n-grams (GPT-3: 13); an item shorter than n words matches as a whole.")
    min_overlap: float | None = Field(None, gt=0.0, le=1.0, description="None: any one of an item's n-grams contaminates (GPT-3). f: at least this fraction of the item's n-grams (Llama-style containment).")
    mode: Literal["drop", "redact", "mark"] = Field("drop", description="drop: to the trace as `contaminated`; redact: cut the matched spans (GPT-3); mark: add contamination_* columns, remove nothing.")
    margin: int = Field(200, ge=0, description="redact: characters cut on either side of each matched span (GPT-3: 200).")
    max_pieces: int = Field(10, ge=1, description="redact: a document cut into more pieces than this is dropped (GPT-3: 10).")
    min_piece: int = Field(200, ge=0, description="redact: pieces shorter than this many characters are discarded (GPT-3: 200).")
    count_column: str = Field("contamination_redactions", description="redact: the spans cut out of each document (0 for the others).")
    top_items: int = Field(10, ge=0, description="The report's most matched items per benchmark.")


@dataclass(frozen=True)
class _Scan:
    """What each parallel piece of the scan needs (it pickles)."""

    index_dir: str
    columns: tuple[str, ...]
    min_overlap: float | None


@dataclass
class DeconState(FitState):
    index_dir: str
    decisions: str  # Parquet: _ord, item, ngrams, offset, items; sorted by _ord
    report: dict

    def files(self) -> list[str]:
        d = Path(self.index_dir)
        return [self.decisions, *(str(p) for p in sorted(d.iterdir()))]

    def summary(self) -> dict:
        return self.report

    def lookup(self, ords: np.ndarray) -> tuple[np.ndarray, pa.Table]:
        """For each ord, whether it is contaminated, and its row of the decisions (row 0 for clean ones)."""
        t = pq.read_table(self.decisions, filters=[("_ord", ">=", int(ords.min())), ("_ord", "<=", int(ords.max()))]) \
            if len(ords) else None
        if t is None or not t.num_rows:
            return np.zeros(len(ords), bool), None
        known = t.column("_ord").to_numpy()
        at = np.minimum(np.searchsorted(known, ords), len(known) - 1)
        hit = known[at] == ords
        return hit, t.take(pa.array(np.where(hit, at, 0)))


class Decontaminate(Global):
    """Drop, redact or mark documents that contain benchmark items (exact word n-gram overlap)."""

    name = "decontaminate"
    Params = DecontaminateParams

    def computed_provides(self) -> tuple[str, ...]:
        if self.params.mode == "mark":
            return tuple(MARK_COLUMNS)
        return (self.params.count_column,) if self.params.mode == "redact" else ()

    @property
    def checked(self) -> list[str]:
        return list(self.params.columns or [self.text_column])

    def preflight(self) -> None:
        names = [b.name for b in self.params.benchmarks]
        if len(set(names)) != len(names):
            raise RecipeError("benchmarks", f"benchmark names must differ: {', '.join(names)}")
        for i, bench in enumerate(self.params.benchmarks):
            bm.check(bench, f"benchmarks[{i}]")

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> DeconState:
        p = self.params
        workdir = Path(workdir)
        index_dir = workdir / "index"
        built = idx.build(list(p.benchmarks), p.ngram, index_dir)
        scan = _Scan(str(index_dir), tuple(self.checked), p.min_overlap)
        index = idx.load(str(index_dir))
        path = str(workdir / "decisions.parquet")
        tally = _Tally(index)
        # The pieces come back in batch order, so in _ord order: written as they come, nothing
        # of the scan is held but the benchmark-sized tally and a row group in the making.
        with pq.ParquetWriter(path, _decisions([], [], [], [], []).schema) as writer:
            pending: list[pa.Table] = []
            last = -1
            for decisions, pair_ords, pair_items in parallel.stream(partial(scan_batch, scan), batches):
                ords = decisions.column("_ord").to_numpy()
                if len(ords) and ords[0] <= last:
                    raise RuntimeError(f"{self.name}: fit batches must come in _ord order (_ord {ords[0]} after {last})")
                last = int(ords[-1]) if len(ords) else last
                tally.add(decisions.num_rows, pair_ords, pair_items)
                pending.append(decisions)
                if sum(t.num_rows for t in pending) >= ROW_GROUP_ROWS:
                    writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
                    pending = []
            writer.write_table(pa.concat_tables(pending or [_decisions([], [], [], [], [])]))
        report = _report(index, built, tally, p.top_items)
        report.update({"mode": p.mode, "ngram": p.ngram, "min_overlap": p.min_overlap, "index_ngrams": built["keys"],
                       "index_bytes": built["bytes"]})
        return DeconState(str(index_dir), path, report)

    def apply(self, batch: pa.RecordBatch, state: DeconState):
        ords = batch.column("_ord").to_numpy().astype(np.int64)
        hit, rows = state.lookup(ords)
        index = idx.load(state.index_dir)
        if self.params.mode == "mark":
            return _mark(batch, hit, rows, index)
        if self.params.mode == "drop":
            return Verdict(~hit, REASON, _details(hit, rows, index, self.params.ngram))
        return self._redact(batch, hit, rows, index)

    def _redact(self, batch: pa.RecordBatch, hit: np.ndarray, rows: pa.Table | None, index: idx.Index):
        p = self.params
        keep = np.ones(batch.num_rows, bool)
        cuts = np.zeros(batch.num_rows, np.int64)
        detail: list[str | None] = [None] * batch.num_rows
        flagged = np.flatnonzero(hit)
        new = {c: batch.column(c) for c in self.checked}
        if len(flagged):
            sub = batch.take(pa.array(flagged))
            texts = joined(sub, self.checked)
            hits = find(texts, index)
            _, accepted = pairs(hits, index, p.min_overlap)
            values = {c: pc.cast(sub.column(c), pa.string()).fill_null("").to_pylist() for c in self.checked}
            replaced = {c: batch.column(c).to_pylist() for c in self.checked}
            base = _details(hit, rows, index, p.ngram)
            for j, row in enumerate(flagged):
                mine = accepted & (hits.doc == j)
                starts, ends = word_spans(texts[j].as_py())
                spans = list(zip(starts[hits.start[mine]].tolist(),
                                 ends[hits.start[mine] + hits.length[mine] - 1].tolist()))
                out = redact([values[c][j] for c in self.checked], spans, p.margin, p.min_piece)
                cuts[row] = out.cuts
                if out.pieces > p.max_pieces or not any(out.values):
                    keep[row] = False
                    why = f"cut into {out.pieces} pieces > max_pieces {p.max_pieces}" if out.pieces > p.max_pieces \
                        else "nothing left after redaction"
                    detail[row] = f"{base[row]}; {why}"
                for c, v in zip(self.checked, out.values):
                    replaced[c][row] = v
            new = {c: pa.array(replaced[c], pa.string()) for c in self.checked}
        for c, values in new.items():
            batch = batch.set_column(batch.schema.get_field_index(c), c, values)
        batch = put(batch, p.count_column, pa.array(cuts), pa.int64())
        return Result(batch, Verdict(keep, REASON, detail))


def scan_batch(scan: _Scan, batch: pa.RecordBatch) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """One piece of the fit: the batch's contaminated documents (the pair the trace names, with its
    first character offset), and the ord and item of every accepted (document, item) pair."""
    index = idx.load(scan.index_dir)
    texts = joined(batch, list(scan.columns))
    p, _ = pairs(find(texts, index), index, scan.min_overlap)
    chosen, count = best(p, batch.num_rows)
    docs = np.flatnonzero(chosen >= 0)
    ords = batch.column("_ord").to_numpy().astype(np.int64)
    offsets = [int(word_spans(texts[int(d)].as_py())[0][p.first[chosen[d]]]) for d in docs]
    pick = chosen[docs]
    return _decisions(ords[docs], p.item[pick], p.ngrams[pick], offsets, count[docs]), ords[p.doc], p.item


def _decisions(ords, items, ngrams, offsets, counts) -> pa.Table:
    return pa.table({"_ord": pa.array(np.asarray(ords, np.int64)), "item": pa.array(np.asarray(items, np.int64)),
                     "ngrams": pa.array(np.asarray(ngrams, np.int64)), "offset": pa.array(np.asarray(offsets, np.int64)),
                     "items": pa.array(np.asarray(counts, np.int64))})


def _details(hit: np.ndarray, rows: pa.Table | None, index: idx.Index, n: int) -> list[str | None]:
    out: list[str | None] = [None] * len(hit)
    if rows is None:
        return out
    cols = {c: rows.column(c).to_numpy() for c in ("item", "ngrams", "offset", "items")}
    for r in np.flatnonzero(hit):
        item = int(cols["item"][r])
        bench, item_id = index.item_label(item)
        total = int(index.item_ngrams[item])
        others = int(cols["items"][r]) - 1
        out[r] = (f"{bench} item {item_id}: {cols['ngrams'][r]} of {total} {n}-grams, first at char {cols['offset'][r]}"
                  + (f" (+{others} more item{'s' if others > 1 else ''})" if others else ""))
    return out


def _mark(batch: pa.RecordBatch, hit: np.ndarray, rows: pa.Table | None, index: idx.Index) -> pa.RecordBatch:
    labels = [index.item_label(int(i)) for i in rows.column("item").to_numpy()] if rows is not None else []
    values = {
        "contamination_benchmark": [labels[r][0] if h else None for r, h in enumerate(hit)],
        "contamination_item": [labels[r][1] if h else None for r, h in enumerate(hit)],
    }
    for name, column in (("contamination_ngrams", "ngrams"), ("contamination_offset", "offset"), ("contamination_items", "items")):
        data = rows.column(column).to_numpy() if rows is not None else np.zeros(len(hit), np.int64)
        values[name] = pa.array(data, mask=~hit)
    for name, type_ in MARK_COLUMNS.items():
        batch = put(batch, name, pa.array(values[name], type_), type_)
    return batch


class _Tally:
    """What the report counts, piece by piece: documents per item, documents per benchmark (a
    document is in one piece only), documents contaminated."""

    def __init__(self, index: idx.Index):
        self.index = index
        self.docs_per_item = np.zeros(len(index.item_bench), np.int64)
        self.docs_per_bench = np.zeros(len(index.names), np.int64)
        self.contaminated = 0

    def add(self, contaminated: int, pair_ords: np.ndarray, pair_items: np.ndarray) -> None:
        self.contaminated += contaminated
        self.docs_per_item += np.bincount(pair_items, minlength=len(self.docs_per_item))
        benches = self.index.item_bench[pair_items]
        pairs = np.unique(np.stack([benches, pair_ords]), axis=1) if len(pair_ords) else np.zeros((2, 0), np.int64)
        self.docs_per_bench += np.bincount(pairs[0], minlength=len(self.docs_per_bench))


def _report(index: idx.Index, built: dict, tally: _Tally, top: int) -> dict:
    """Per benchmark: items, items found, documents affected (by any of its items), the most matched
    items with the number of documents each is in."""
    rows = []
    for b, info in enumerate(built["benchmarks"]):
        mine = np.flatnonzero(index.item_bench == b)
        counts = tally.docs_per_item[mine]
        order = np.lexsort((mine, -counts))[:top]
        top_items = [f"{index.ids[b][int(mine[i] - mine[0])]} ({int(counts[i])})" for i in order if counts[i]]
        rows.append({"benchmark": info["benchmark"], "items": info["items"], "items_found": int((counts > 0).sum()),
                     "documents": int(tally.docs_per_bench[b]),
                     "ngrams": info["ngrams"], "top_items": ", ".join(top_items)})
    return {"benchmarks": rows, "documents_contaminated": int(tally.contaminated)}
