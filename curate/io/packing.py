"""Packed Parquet (`output.pack`): the token ids of a Parquet part's documents, back to back, cut
into rows of exactly `seq_len` ids, for Hugging Face trainers that take fixed-length sequences.

A document may span rows; each row records where its pieces lie:
- `input_ids`: seq_len ids;
- `position_ids`: each id's position in its piece, from 0 at every piece (what flash-attention's
  packed path and transformers' DataCollatorWithFlattening use to keep documents apart);
- `cu_seqlens`: the offsets where the row's pieces start, then where its real ids end;
- `doc_ids`: the `_id` of each piece's document;
- `continued`: the row's first piece continues the previous row's last document.
Joining the pieces of equal documents in row order gives every non-empty document back (an empty
one has no ids to pack). Packing is per part, so the parts convert in parallel and the bytes do
not depend on the worker count; the last, partial row of a part is dropped (`last: drop`) or
filled with `pad_id` (`last: pad`; its padding is a piece of its own in position_ids, after the
end cu_seqlens gives).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError
from curate.io.megatron import TOKENS, token_lists, token_type


def packed_schema(value_type: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            (TOKENS, pa.list_(value_type)),
            ("position_ids", pa.list_(pa.int32())),
            ("cu_seqlens", pa.list_(pa.int32())),
            ("doc_ids", pa.list_(pa.string())),
            ("continued", pa.bool_()),
        ]
    )


def offsets(counts: np.ndarray) -> pa.Array:
    out = np.zeros(len(counts) + 1, np.int32)
    np.cumsum(counts, out=out[1:])
    return pa.array(out)


class Packer:
    """Documents in, full rows out; the ids of the row not yet full are carried to the next call."""

    def __init__(self, seq_len: int, value_type: pa.DataType):
        self.seq_len = seq_len
        self.value_type = value_type
        self.tokens = np.zeros(0, value_type.to_pandas_dtype())
        self.docs = np.zeros(0, np.int64)  # each carried id's document, an index into self.ids
        self.starts = np.zeros(0, np.int64)  # each carried id's document's first id, counted from the part's start
        self.ids = pa.array([], pa.string())  # `_id` of the carried documents
        self.base = 0  # where self.tokens[0] is, counted from the part's start

    def add(self, ids: np.ndarray, lengths: np.ndarray, doc_ids: pa.Array) -> pa.Table | None:
        """The full rows that documents (`ids` back to back, `lengths` each, `doc_ids`) complete."""
        present = lengths > 0
        lengths, doc_ids = lengths[present], doc_ids.filter(pa.array(present))
        firsts = self.base + len(self.tokens) + np.cumsum(lengths) - lengths
        numbers = len(self.ids) + np.arange(len(lengths))
        tokens = np.concatenate([self.tokens, ids.astype(self.tokens.dtype, copy=False)])
        docs = np.concatenate([self.docs, np.repeat(numbers, lengths)])
        starts = np.concatenate([self.starts, np.repeat(firsts, lengths)])
        names = pa.concat_arrays([self.ids, doc_ids.cast(pa.string())])
        full = len(tokens) // self.seq_len * self.seq_len
        rows = self._rows(tokens[:full], docs[:full], starts[:full], names, np.full(full // self.seq_len, self.seq_len))
        first = docs[full] if full < len(docs) else len(names)  # the first document still carried
        self.tokens, self.docs, self.starts = tokens[full:], docs[full:] - first, starts[full:]
        self.ids, self.base = names.slice(first), self.base + full
        return rows

    def finish(self, pad_id: int | None) -> tuple[pa.Table | None, int]:
        """The last, partial row padded with `pad_id` (None: dropped), and the ids it padded or dropped."""
        left = len(self.tokens)
        if not left or pad_id is None:
            return None, left
        pad = self.seq_len - left
        tokens = np.concatenate([self.tokens, np.full(pad, pad_id, self.tokens.dtype)])
        docs = np.concatenate([self.docs, np.full(pad, -1)])
        # The padding's positions count from 0, as a piece of its own.
        starts = np.concatenate([self.starts, np.full(pad, self.base + left)])
        return self._rows(tokens, docs, starts, self.ids, np.array([left])), pad

    def _rows(self, tokens, docs, starts, names: pa.Array, used: np.ndarray) -> pa.Table | None:
        """Rows of seq_len ids from `tokens` (their documents `docs`, whose first ids are at
        `starts`), `used` of each row real ids, the rest padding."""
        n, width = len(used), self.seq_len
        if not n:
            return None
        tokens, docs, starts = (a.reshape(n, width) for a in (tokens, docs, starts))
        row_start = (self.base + np.arange(n) * width)[:, None]
        column = np.arange(width)[None, :]
        positions = (row_start + column - np.maximum(starts, row_start)).astype(np.int32)
        piece = np.ones((n, width), bool)
        piece[:, 1:] = docs[:, 1:] != docs[:, :-1]
        piece &= column < used[:, None]
        bounds = np.zeros((n, width + 1), bool)
        bounds[:, :width] = piece
        bounds[np.arange(n), used] = True  # where the real ids end
        return pa.table(
            [
                pa.ListArray.from_arrays(offsets(np.full(n, width)), pa.array(tokens.ravel())),
                pa.ListArray.from_arrays(offsets(np.full(n, width)), pa.array(positions.ravel())),
                pa.ListArray.from_arrays(
                    offsets(bounds.sum(1)), pa.array((np.flatnonzero(bounds) % (width + 1)).astype(np.int32))
                ),
                pa.ListArray.from_arrays(offsets(piece.sum(1)), names.take(pa.array(docs[piece]))),
                pa.array(starts[:, 0] < row_start[:, 0]),
            ],
            schema=packed_schema(self.value_type),
        )


def to_packed(part: Path, seq_len: int, pad_id: int | None, compression: str | None) -> dict:
    """`part` (Parquet) packed into rows of `seq_len` ids, under the same name (written as .tmp and
    renamed); `pad_id` None drops the last partial row. Its documents, tokens, rows and the ids
    padded or dropped."""
    pf = pq.ParquetFile(part)
    value_type = token_type(pf.schema_arrow, part.name)
    if "_id" not in pf.schema_arrow.names:
        raise CurateError(f"{part.name}: no '_id' column to record the documents of packed rows by")
    if pad_id is not None and not 0 <= pad_id <= np.iinfo(value_type.to_pandas_dtype()).max:
        raise CurateError(f"output.pack.pad_id: {pad_id} does not fit the {value_type} token ids")
    packer, rows, documents = Packer(seq_len, value_type), 0, 0
    tmp = part.with_name(part.name + ".tmp")
    with pq.ParquetWriter(tmp, packed_schema(value_type), compression=compression, write_statistics=True) as out:
        for batch in pf.iter_batches(batch_size=65536, columns=["_id", TOKENS]):
            ids, lengths = token_lists(batch, part, documents)
            documents += batch.num_rows
            table = packer.add(ids, lengths, batch.column("_id"))
            if table is not None:
                out.write_table(table)
                rows += table.num_rows
        table, left = packer.finish(pad_id)
        if table is not None:
            out.write_table(table)
            rows += 1
    os.replace(tmp, part)
    tokens = packer.base + (len(packer.tokens) if pad_id is not None else 0)
    return {
        "file": part.stem,
        "documents": documents,
        "tokens": int(tokens),
        "rows": rows,
        "padded" if pad_id is not None else "dropped": int(left),
    }
