"""The embed operator with the model-free hash backend: parameters, output column, empty rows,
the trace, `curate run` end to end, determinism, and no heavy imports where none are needed."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import recipe
from curate.errors import InputError, RecipeError
from curate_operators.embed.embed import Embed, EmbedParams
from tests.conftest import write_jsonl
from tests.operators.embed.conftest import read_out, recipe_text

HEAVY = ("torch", "transformers", "open_clip", "sentence_transformers", "faiss", "PIL")


def batch(texts, **extra):
    return pa.RecordBatch.from_pydict({"_id": [f"r{i}" for i in range(len(texts))], "text": texts, **extra})


def vectors(b, column="_embedding"):
    col = b.column(column)
    return col.values.to_numpy(zero_copy_only=False).reshape(len(col), col.type.list_size)


def test_output_is_a_fixed_size_list_of_unit_vectors():
    out = Embed(EmbedParams(backend="hash", dim=64)).process(batch(["one text", "another text", "one text"]))
    assert out.schema.field("_embedding").type == pa.list_(pa.float32(), 64)
    e = vectors(out)
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(e[0], e[2])
    assert out.column("text").to_pylist() == ["one text", "another text", "one text"]


def test_float16_output_and_no_normalisation():
    out = Embed(EmbedParams(backend="hash", dim=32, dtype="float16", normalize=False)).process(batch(["abcdefg"]))
    assert out.schema.field("_embedding").type == pa.list_(pa.float16(), 32)
    assert np.abs(vectors(out)).sum() == 3  # 3 distinct 5-grams, +-1 each


def test_empty_rows_go_to_the_trace_or_are_embedded():
    texts = ["real text", None, "   \n", "", "more text"]
    out, verdict = Embed(EmbedParams(backend="hash")).process(batch(texts))
    assert verdict.keep.tolist() == [True, False, False, False, True]
    assert {verdict.reason[i] for i in (1, 2, 3)} == {"empty"}
    assert "null or blank" in verdict.detail[1]
    assert out.num_rows == 5  # the verdict is over the returned batch
    out = Embed(EmbedParams(backend="hash", on_empty="embed")).process(batch(texts))
    assert isinstance(out, pa.RecordBatch)
    e = vectors(out)
    assert np.array_equal(e[1], e[3])  # null is embedded as ""
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)


def test_all_rows_empty():
    out, verdict = Embed(EmbedParams(backend="hash", dim=16)).process(batch([None, ""]))
    assert not verdict.keep.any() and out.schema.field("_embedding").type == pa.list_(pa.float32(), 16)


def test_column_and_output_column():
    b = batch(["x"], title=["a title"], vec=[1])
    op = Embed(EmbedParams(backend="hash", column="title", output_column="vec"))
    assert op.requires == ("title",) and op.provides == ("vec",)
    out = op.process(b)
    assert out.schema.names == ["_id", "text", "title", "vec"]  # replaced in place
    assert np.array_equal(vectors(out, "vec"), vectors(Embed(EmbedParams(backend="hash")).process(batch(["a title"]))))
    assert Embed(EmbedParams(backend="hash"), text_column="body").requires == ("body",)


def test_a_column_that_is_not_text_is_an_input_error():
    with pytest.raises(InputError, match="column 'text' must be text, it is int64"):
        Embed(EmbedParams(backend="hash")).process(pa.RecordBatch.from_pydict({"_id": ["a"], "text": [3]}))


@pytest.mark.parametrize("params, message", [
    ("{backend: hash, modality: image}", "modality: image needs backend: open_clip"),
    ("{backend: open_clip}", "backend open_clip needs `model`"),
    ("{backend: hash, model: x}", "backend hash uses no model"),
    ("{dim: 128}", "for backend hash only"),
    ("{pretrained: ckpt.pt}", "for backend open_clip only"),
    ("{backend: hash, batch_size: 0}", "steps[0].embed.batch_size"),
    ("{backend: nope}", "steps[0].embed.backend"),
    ("{backend: hash, dtype: float64}", "steps[0].embed.dtype"),
    ("{backend: hash, colum: text}", "unknown parameter"),
])
def test_bad_parameters_fail_before_any_data_is_read(tmp_path, params, message):
    with pytest.raises(RecipeError) as e:
        recipe.load(text=recipe_text(tmp_path, params))
    assert message in str(e.value)


def test_curate_run_end_to_end(cli, tmp_path, manifest_at):
    rows = [{"id": f"d{i}", "text": f"document number {i} about topic {i % 3}"} for i in range(30)]
    rows += [{"id": "blank", "text": "  "}, {"id": "null", "text": None}, {"id": "dup", "text": rows[0]["text"]}]
    write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text(tmp_path, "{backend: hash, dim: 64, dtype: float16}"))
    res = cli("run", p, "-w", "1")
    assert res.exit_code == 0, res.output
    out = read_out(tmp_path / "out")
    assert out.num_rows == 31 and out.schema.field("_embedding").type == pa.list_(pa.float16(), 64)
    e = dict(zip(out.column("_id").to_pylist(), out.column("_embedding").to_pylist()))
    assert e["dup"] == e["d0"]
    trace = pq.read_table(tmp_path / "out" / "trace" / "01_embed.parquet")
    assert sorted(trace.column("_id").to_pylist()) == ["blank", "null"]
    assert set(trace.column("reason").to_pylist()) == {"empty"}
    step = manifest_at(tmp_path / "out").steps[1]
    assert (step.rows_in, step.rows_out, step.removed) == (33, 31, 2)


def test_same_vectors_whatever_the_batching_and_workers(tmp_path):
    rng = np.random.default_rng(0)
    for f in range(3):
        write_jsonl(tmp_path / "in" / f"{f}.jsonl",
                    [{"id": f"{f}-{i}", "text": " ".join(rng.choice(["a", "bb", "ccc", "dddd"], 20))} for i in range(40)])
    got = []
    for batch_rows, workers in ((7, 1), (1000, 2)):
        out = tmp_path / f"out-{batch_rows}"
        r = recipe.load(text=recipe_text(tmp_path, "{backend: hash}", batch_rows=batch_rows),
                        output_path=str(out))
        from curate.engine.run.runner import RunOptions, run

        run(r, RunOptions(workers=workers))
        got.append(read_out(out))
    assert got[0].column("_id").equals(got[1].column("_id"))
    assert got[0].column("_embedding").equals(got[1].column("_embedding"))


def test_a_missing_column_exits_2(cli, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": "a", "body": "x"}])
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text(tmp_path, "{backend: hash}"))
    res = cli("run", p, "-w", "1")
    assert res.exit_code == 2 and "needs column 'text'" in res.stderr and "Traceback" not in res.output


def test_describing_and_validating_imports_no_model_library(tmp_path):
    p = tmp_path / "r.yaml"
    # a hub id (not a local path, which validate checks exists): validating it loads no model library
    p.write_text(recipe_text(tmp_path, "{backend: sentence_transformers, model: some-org/some-model}"))
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom curate.cli import app\n"
            "r = CliRunner()\n"
            "assert r.invoke(app, ['--help']).exit_code == 0\n"
            "assert r.invoke(app, ['ops']).exit_code == 0\n"
            "assert r.invoke(app, ['ops', 'embed']).exit_code == 0\n"
            f"assert r.invoke(app, ['validate', {str(p)!r}, '--no-data']).exit_code == 0\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "HEAVY []" in res.stdout, res.stdout + res.stderr


def test_without_torch_hash_runs_and_model_backends_say_what_to_install():
    code = ("import sys\nsys.modules['torch'] = None\n"  # importing torch would now fail
            "import pyarrow as pa\nfrom curate_operators.embed.embed import Embed, EmbedParams\n"
            "from curate.errors import CurateError\n"
            "op = Embed(EmbedParams(backend='hash')); op.setup()\n"
            "out = op.process(pa.RecordBatch.from_pydict({'_id': ['a'], 'text': ['x y']}))\n"
            "op.teardown(); print('OK', out.num_rows)\n"
            "try: Embed(EmbedParams(model='/m')).setup()\n"
            "except CurateError as e: print('ERROR', e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "OK 1" in res.stdout, res.stderr
    assert "ERROR embed: backend sentence_transformers needs torch" in res.stdout
    assert "pip install 'curate[embed]'" in res.stdout
