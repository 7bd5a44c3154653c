"""Megatron-LM's indexed dataset (`PREFIX.bin` + `PREFIX.idx`, see specs/megatron.md), written from
the `input_ids` column of a Parquet part: one document per row, one sequence per document (an
empty document is a sequence of length 0, so documents and rows stay one to one), ids in the
column's own integer type (tokenize picks uint16 or int32 from the vocabulary size, as Megatron
does). megatron-core's IndexedDataset, NeMo and GPT-NeoX read the pair.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.errors import CurateError

TOKENS = "input_ids"  # the column the token formats write
MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
# Megatron's dtype codes (megatron.core.datasets.indexed_dataset.DType); it has no unsigned 32/64.
CODES = {pa.uint8(): 1, pa.int8(): 2, pa.int16(): 3, pa.int32(): 4, pa.int64(): 5, pa.uint16(): 8}


def token_type(schema: pa.Schema, where: str) -> pa.DataType:
    """The integer type of `schema`'s input_ids lists; a CurateError naming `where` when the column
    is missing or is not a list of integers."""
    if TOKENS not in schema.names:
        raise CurateError(
            f"{where}: no '{TOKENS}' column to write token ids from: add a tokenize step "
            f"(or one writing token ids to '{TOKENS}')"
        )
    t = schema.field(TOKENS).type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_integer(t.value_type):
        raise CurateError(f"{where}: column '{TOKENS}' must hold lists of integer token ids, it is {t}")
    return t.value_type


def megatron_code(value_type: pa.DataType, where: str) -> int:
    if value_type not in CODES:
        raise CurateError(
            f"{where}: Megatron has no {value_type} token type (it reads uint8, int8, int16, uint16, "
            f"int32, int64): tokenize with dtype auto, int32 or int64"
        )
    return CODES[value_type]


def token_lists(batch: pa.RecordBatch, part: Path, first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch's ids, back to back, and each row's count; a null list is an error naming its row."""
    lists = batch.column(TOKENS)
    if lists.null_count:
        row = first_row + pc.index(pc.is_null(lists), True).as_py()
        raise CurateError(f"{part.name}: row {row} has no '{TOKENS}' (null): every row needs its token ids")
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
    return pc.list_flatten(lists).to_numpy(zero_copy_only=False), lengths


def write_idx(path: Path, code: int, lengths: np.ndarray, itemsize: int) -> None:
    """The index of sequences of `lengths` ids of `itemsize` bytes, one document each."""
    pointers = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1].astype(np.int64) * itemsize, out=pointers[1:])
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(lengths) + 1))
        f.write(lengths.astype("<i4").tobytes())
        f.write(pointers.astype("<i8").tobytes())
        f.write(np.arange(len(lengths) + 1, dtype="<i8").tobytes())


def to_megatron(part: Path) -> dict:
    """`part` (Parquet) as `part-NNNNN.bin` / `.idx` beside it, then `part` removed; both written as
    .tmp and renamed, the .idx last. Its documents and tokens."""
    pf = pq.ParquetFile(part)
    value_type = token_type(pf.schema_arrow, part.name)
    code = megatron_code(value_type, part.name)
    prefix = part.with_name(part.name.removesuffix(".parquet"))
    bin_path, idx_path = prefix.with_suffix(".bin"), prefix.with_suffix(".idx")
    bin_tmp, idx_tmp = (p.with_name(p.name + ".tmp") for p in (bin_path, idx_path))
    parts, rows = [], 0
    dtype = np.dtype(value_type.to_pandas_dtype()).newbyteorder("<")
    with open(bin_tmp, "wb") as out:
        for batch in pf.iter_batches(batch_size=65536, columns=[TOKENS]):
            ids, counts = token_lists(batch, part, rows)
            out.write(ids.astype(dtype, copy=False).data)  # the array's own buffer, not a copy of it
            parts.append(counts.astype(np.int32))
            rows += batch.num_rows
    lengths = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    write_idx(idx_tmp, code, lengths, dtype.itemsize)
    os.replace(bin_tmp, bin_path)
    os.replace(idx_tmp, idx_path)
    part.unlink()
    return {"file": prefix.name, "documents": int(len(lengths)), "tokens": int(lengths.sum())}
