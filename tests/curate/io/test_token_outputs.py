"""Runs that end in tokenize, published as Megatron's indexed dataset or packed Parquet: read back
with megatron-core's own reader, the same bytes whatever the worker count, and bad setups refused
before any worker starts (exit 2)."""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError
from curate.io import output_formats
from curate.io.megatron import to_megatron
from curate.ops import serial_map
from curate.recipe_specs import PackSpec
from tests.conftest import write_jsonl, write_recipe
from tests.curate.io.test_packing import unpack
from tests.operators.text.tiny_tokenizer import word_tokenizer

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tok")
    word_tokenizer(root / "small.json", 100)
    word_tokenizer(root / "big.json", 70_000)
    for f in range(2):  # 3 tasks' worth of rows, documents of 0 to 40 words
        write_jsonl(root / "in" / f"part-{f}.jsonl",
                    [{"text": " ".join(f"w{3 + (f * 7 + i * j) % 97}" for j in range(i % 41)), "n": i}
                     for i in range(150)])
    return root


def recipe_text(corpus: Path, out: Path, output: str = "", tokenize: str = "eos: '</s>'",
                tokenizer: str = "small.json") -> str:
    return (f"input: {{path: '{corpus}/in/*.jsonl', batch_rows: 64}}\noutput: {{path: '{out}'{output}}}\n"
            f"steps:\n  - sql_filter: {{where: \"n % 7 <> 3\"}}\n"
            f"  - tokenize: {{tokenizer: '{corpus / tokenizer}', {tokenize}}}\n")


def go(corpus, out: Path, output: str = "", workers: int = 2, **kw):
    return run(recipe.load(text=recipe_text(corpus, out, output, **kw)), RunOptions(workers=workers))


def parquet_ids(data: Path) -> dict[str, list]:
    """Each Parquet part's rows (_id, input_ids), by the part's name."""
    return {p.stem: pq.read_table(p, columns=["_id", "input_ids"]).to_pylist() for p in sorted(data.glob("*.parquet"))}


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out"
    go(corpus, out)
    return parquet_ids(out / "data")


def indexed(prefix: Path):
    IndexedDataset = pytest.importorskip("megatron.core.datasets.indexed_dataset").IndexedDataset
    return IndexedDataset(str(prefix))


def test_megatron_output_reads_back_as_the_ids_tokenize_wrote(corpus, reference, tmp_path):
    m = go(corpus, tmp_path / "out", ", format: megatron")
    data = tmp_path / "out" / "data"
    assert sorted(p.stem for p in data.glob("*.bin")) == sorted(p.stem for p in data.glob("*.idx")) == \
        sorted(reference) and m.data_files == len(reference) > 1
    for name, rows in reference.items():
        ds = indexed(data / name)
        assert ds.index.dtype.__name__ == "uint16" and len(ds) == len(rows)
        assert [ds[i].tolist() for i in range(len(ds))] == [r["input_ids"] for r in rows]
        assert ds.document_indices.tolist() == list(range(len(rows) + 1))  # a document a row
    totals = json.loads((data / "_tokens.json").read_text())
    tokens = sum(len(r["input_ids"]) for rows in reference.values() for r in rows)
    assert totals["tokens"] == tokens == next(s for s in m.steps if s.op == "tokenize").counts["tokens"]
    assert [s["tokens"] for s in totals["shards"]] == [sum(len(r["input_ids"]) for r in rows)
                                                       for rows in reference.values()]
    assert totals["documents"] == m.rows_out


@pytest.mark.parametrize("output, columns", [(", format: megatron", ["input_ids"]),
                                             (", pack: {seq_len: 16, last: drop}", ["input_ids", "_id"])])
def test_the_staged_parquet_holds_only_what_the_token_output_is_written_from(corpus, tmp_path, output, columns):
    # the text would be compressed, written and read back only to be dropped by the conversion
    out = tmp_path / "out"
    run(recipe.load(text=recipe_text(corpus, out, output)), RunOptions(workers=1, keep_work=True))
    shards = sorted((out / "_work").glob("stage-*/data/*.parquet"))
    assert shards and all(pq.read_schema(s).names == columns for s in shards)


def test_a_large_vocabulary_is_written_as_int32(corpus, tmp_path):
    go(corpus, tmp_path / "out", ", format: megatron", tokenizer="big.json")
    ds = indexed(tmp_path / "out" / "data" / "part-00000")
    assert ds.index.dtype.__name__ == "int32" and ds[0].tolist()[-1] == 2


def test_megatron_bytes_do_not_depend_on_the_worker_count(corpus, tmp_path):
    for workers in (1, 2):
        go(corpus, tmp_path / f"w{workers}", ", format: megatron", workers=workers)
    one, two = (sorted((tmp_path / f"w{w}" / "data").iterdir()) for w in (1, 2))
    assert [p.name for p in one] == [p.name for p in two] and len(one) > 2
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two))


def packed(corpus, data: Path, out: Path, pack: dict) -> Path:
    """The published Parquet parts of `data` packed in a copy, as the publisher packs its staging."""
    shutil.copytree(data, out)
    output_formats.convert(out, "parquet", None, serial_map, pack=PackSpec(**pack))
    return out


def test_packed_rows_join_back_into_the_documents_of_each_part(corpus, reference, tmp_path):
    go(corpus, tmp_path / "out")
    data = packed(corpus, tmp_path / "out" / "data", tmp_path / "packed", {"seq_len": 16, "last": "pad", "pad_id": 0})
    totals = json.loads((data / "_tokens.json").read_text())
    assert totals["seq_len"] == 16 and totals["last"] == "pad"
    for shard, (name, rows) in zip(totals["shards"], reference.items()):
        table = pq.read_table(data / f"{name}.parquet")
        assert table.column("input_ids").type == pa.list_(pa.uint16()) and shard["rows"] == table.num_rows
        assert unpack(table.to_pylist(), 0) == [(r["_id"], r["input_ids"]) for r in rows if r["input_ids"]]
        assert shard["tokens"] == sum(len(r["input_ids"]) for r in rows)


def test_packed_bytes_do_not_depend_on_the_worker_count(corpus, tmp_path):
    for workers in (1, 2):
        go(corpus, tmp_path / f"w{workers}", workers=workers)
        packed(corpus, tmp_path / f"w{workers}" / "data", tmp_path / f"p{workers}", {"seq_len": 8, "last": "drop"})
    one, two = (sorted((tmp_path / f"p{w}").iterdir()) for w in (1, 2))
    assert [p.name for p in one] == [p.name for p in two]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two))


def test_a_run_with_output_pack_publishes_packed_rows(corpus, tmp_path):
    go(corpus, tmp_path / "out", ", pack: {seq_len: 16, last: drop}")
    table = pq.read_table(tmp_path / "out" / "data")
    assert table.column_names == ["input_ids", "position_ids", "cu_seqlens", "doc_ids", "continued"]


@pytest.mark.parametrize("output, tokenize, tokenizer, message", [
    (", format: megatron", None, "small.json", "output.format: no 'input_ids' column to write token ids from: "
                                               "add a tokenize step"),
    (", pack: {seq_len: 8, last: drop}", None, "small.json", "output.pack: no 'input_ids' column"),
    (", format: megatron", "dtype: uint16", "big.json", "steps[1].tokenize.dtype: uint16 holds ids below 65,536"),
    (", format: megatron", "eos: '<|endoftext|>'", "small.json", "steps[1].tokenize.eos: '<|endoftext|>' is not a "
                                                                 "token of"),
    (", format: megatron, compression: zstd", "eos: '</s>'", "small.json", "compression zstd does not apply to "
                                                                           "format megatron"),
    (", pack: {seq_len: 8, last: pad}", "eos: '</s>'", "small.json", "last: pad needs a pad_id"),
])
def test_bad_setups_exit_2_before_any_worker(corpus, tmp_path, cli, output, tokenize, tokenizer, message):
    text = recipe_text(corpus, tmp_path / "out", output, tokenize or "", tokenizer)
    if tokenize is None:
        text = text[:text.index("  - tokenize")]
    res = cli("run", write_recipe(tmp_path / "r.yaml", text))
    assert res.exit_code == 2 and message in " ".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.output and not (tmp_path / "out" / "_work").exists()


def test_ids_of_a_type_megatron_lacks_are_refused(tmp_path, cli):
    pq.write_table(pa.table({"text": ["a"], "input_ids": pa.array([[1, 2]], pa.list_(pa.uint32()))}),
                   tmp_path / "in.parquet")
    res = cli("run", write_recipe(tmp_path / "r.yaml", f"input: {{path: '{tmp_path}/in.parquet'}}\n"
                                                       f"output: {{path: '{tmp_path}/out', format: megatron}}\n"
                                                       f"steps: []\n"))
    assert res.exit_code == 2 and "output.format: Megatron has no uint32 token type" in " ".join(res.stderr.split())
    assert not (tmp_path / "out" / "_work").exists()  # refused before any worker


def test_a_null_token_list_is_named_by_its_row(tmp_path):
    part = tmp_path / "part-00002.parquet"
    pq.write_table(pa.table({"input_ids": pa.array([[1], None], pa.list_(pa.int32()))}), part)
    with pytest.raises(CurateError, match="part-00002.parquet: row 1 has no 'input_ids'"):
        to_megatron(part)
