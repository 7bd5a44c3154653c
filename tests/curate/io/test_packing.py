"""Packed Parquet: rows of seq_len ids whose pieces join back into the documents, in order."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from curate.errors import CurateError
from curate.io.packing import Packer, to_packed
from curate.recipe_specs import OutputSpec, PackSpec


def pack(docs: list[list[int]], seq_len: int, pad_id: int | None, batch_docs: int = 3) -> list[dict]:
    """`docs` (named d0, d1, ...) through a Packer, `batch_docs` documents per call."""
    packer, tables = Packer(seq_len, pa.uint16()), []
    for at in range(0, len(docs), batch_docs):
        chunk = docs[at:at + batch_docs]
        ids = np.array([i for doc in chunk for i in doc], np.uint16)
        names = pa.array([f"d{at + k}" for k in range(len(chunk))])
        tables.append(packer.add(ids, np.array([len(d) for d in chunk], np.int64), names))
    tables.append(packer.finish(pad_id)[0])
    return [row for t in tables if t is not None for row in t.to_pylist()]


def unpack(rows: list[dict], pad_id: int | None) -> list[tuple[str, list[int]]]:
    """The documents the rows record, checking each row's positions and padding on the way."""
    docs: list[tuple[str, list[int]]] = []
    for row in rows:
        cu, ids = row["cu_seqlens"], row["input_ids"]
        assert cu[0] == 0 and len(cu) == len(row["doc_ids"]) + 1
        for j, name in enumerate(row["doc_ids"]):
            piece = ids[cu[j]:cu[j + 1]]
            assert piece and row["position_ids"][cu[j]:cu[j + 1]] == list(range(len(piece)))
            if j == 0 and row["continued"]:
                assert docs[-1][0] == name
                docs[-1][1].extend(piece)
            else:
                docs.append((name, list(piece)))
        assert ids[cu[-1]:] == [pad_id] * (len(ids) - cu[-1])
        assert row["position_ids"][cu[-1]:] == list(range(len(ids) - cu[-1]))
    return docs


def expected(docs: list[list[int]], keep: int) -> list[tuple[str, list[int]]]:
    """The non-empty documents, named by their place, cut after `keep` ids in all."""
    out = []
    for k, doc in enumerate(docs):
        if doc and keep > 0:
            out.append((f"d{k}", doc[:keep]))
            keep -= len(doc)
    return out


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, 65535), max_size=9), max_size=12), seq_len=st.integers(1, 7),
       pad=st.booleans(), batch_docs=st.integers(1, 4))
@example(docs=[[1, 2, 3, 4]], seq_len=4, pad=True, batch_docs=1)  # one document filling one row exactly
@example(docs=[[], [5], [], [6, 7]], seq_len=2, pad=False, batch_docs=1)  # empty documents have no piece
@example(docs=[[1] * 10], seq_len=3, pad=True, batch_docs=1)  # a document over four rows
@example(docs=[[1], [1]], seq_len=2, pad=False, batch_docs=2)  # equal ids, two documents
def test_rows_join_back_into_the_documents(docs, seq_len, pad, batch_docs):
    rows = pack(docs, seq_len, 9 if pad else None, batch_docs)
    total = sum(map(len, docs))
    assert all(len(r["input_ids"]) == len(r["position_ids"]) == seq_len for r in rows)
    assert len(rows) == (-(-total // seq_len) if pad else total // seq_len)
    assert unpack(rows, 9) == expected(docs, total if pad else total // seq_len * seq_len)


def part_file(path, rows: list[dict], ids_type=pa.list_(pa.uint16())) -> None:
    pq.write_table(pa.table({"_id": [r["_id"] for r in rows],
                             "input_ids": pa.array([r["ids"] for r in rows], ids_type)}), path)


def test_to_packed_replaces_the_part_and_counts(tmp_path):
    part = tmp_path / "part-00000.parquet"
    part_file(part, [{"_id": "a", "ids": [1, 2, 3]}, {"_id": "b", "ids": []}, {"_id": "c", "ids": [4, 5]}])
    assert to_packed(part, 2, None, "zstd") == {"file": "part-00000", "documents": 3, "tokens": 4, "rows": 2,
                                                "dropped": 1}
    table = pq.read_table(part)
    assert table.schema.field("input_ids").type == pa.list_(pa.uint16())
    assert table.column("doc_ids").to_pylist() == [["a"], ["a", "c"]]
    assert table.column("cu_seqlens").to_pylist() == [[0, 2], [0, 1, 2]]
    part_file(part, [{"_id": "a", "ids": [1, 2, 3]}])
    assert to_packed(part, 2, 0, None)["padded"] == 1
    assert pq.read_table(part).column("input_ids").to_pylist() == [[1, 2], [3, 0]]


def test_a_pad_id_outside_the_ids_type_is_refused(tmp_path):
    part = tmp_path / "part-00000.parquet"
    part_file(part, [{"_id": "a", "ids": [1]}])
    with pytest.raises(CurateError, match="output.pack.pad_id: 70000 does not fit the uint16 token ids"):
        to_packed(part, 2, 70_000, None)


def test_a_null_token_list_is_named_by_its_row(tmp_path):
    part = tmp_path / "part-00003.parquet"
    part_file(part, [{"_id": "a", "ids": [1]}, {"_id": "b", "ids": None}])
    with pytest.raises(CurateError, match="part-00003.parquet: row 1 has no 'input_ids'"):
        to_packed(part, 2, None, None)


def test_pack_settings_are_checked_with_the_recipe():
    with pytest.raises(ValidationError, match="last: pad needs a pad_id"):
        PackSpec(seq_len=8, last="pad")
    with pytest.raises(ValidationError, match="pad_id applies to last: pad only"):
        PackSpec(seq_len=8, last="drop", pad_id=0)
    with pytest.raises(ValidationError, match="last"):
        PackSpec(seq_len=8)  # the last row's fate is the recipe's to say
    with pytest.raises(ValidationError, match="pack writes Parquet rows, it does not apply to format jsonl"):
        OutputSpec(path="o", format="jsonl", pack={"seq_len": 8, "last": "drop"})
