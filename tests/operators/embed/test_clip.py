"""open_clip: a tiny model built from a config here (random weights, no download) embeds images
(bytes, paths, {bytes, path} structs) and text end to end through `curate run`; unreadable images
go to the trace; model and weights are resolved locally or refused with a clear message."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.errors import CurateError
from curate_operators.embed.embed import Embed, EmbedParams
from tests.conftest import write_jsonl
from tests.operators.embed.conftest import read_out
from tests.operators.embed.tiny_clip import TINY_CFG, png

RED, RED2, BLUE = (255, 0, 0), (250, 8, 4), (0, 0, 255)


def vectors(table, column):
    col = table.column(column).combine_chunks()
    return col.values.to_numpy(zero_copy_only=False).reshape(len(col), col.type.list_size)


def recipe(tmp_path, inp, steps, keep="[_img, _txt]"):
    p = tmp_path / "r.yaml"
    p.write_text(f"name: t\ninput: {{path: '{inp}', id_column: id, text_column: caption}}\n"
                 f"output: {{path: '{tmp_path / 'out'}', keep_columns: {keep}}}\nsteps:\n{steps}")
    return p


def test_images_from_bytes_and_text_through_curate_run(cli, tmp_path, tiny_clip, manifest_at):
    images = [png(RED), png(RED2), png(BLUE), png(RED), b"this is not a png", None, png(BLUE, stripe=RED)]
    captions = ["a red square", "a red square", "a blue square", "red", "broken", "nothing", "blue with a red stripe"]
    inp = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [f"i{k}" for k in range(len(images))], "image": pa.array(images, pa.binary()),
                             "caption": captions}), inp)
    steps = (f"  - embed: {{backend: open_clip, model: '{tiny_clip}', modality: image, column: image, "
             f"output_column: _img, batch_size: 2}}\n"
             f"  - embed: {{backend: open_clip, model: '{tiny_clip}', output_column: _txt, dtype: float16}}\n")
    res = cli("run", recipe(tmp_path, inp, steps), "-w", "1")
    assert res.exit_code == 0, res.output
    out = read_out(tmp_path / "out")
    assert out.column("_id").to_pylist() == ["i0", "i1", "i2", "i3", "i6"]
    assert out.schema.field("_img").type == pa.list_(pa.float32(), 32)
    assert out.schema.field("_txt").type == pa.list_(pa.float16(), 32)  # one space for text and images
    img = vectors(out, "_img")
    assert np.allclose(np.linalg.norm(img, axis=1), 1, atol=1e-5)
    assert np.array_equal(img[0], img[3])  # the same image
    assert img[0] @ img[1] > img[0] @ img[2]  # a near colour is nearer than another colour
    txt = vectors(out, "_txt").astype(np.float32)
    assert np.allclose(txt[0], txt[1], atol=1e-3) and not np.allclose(txt[0], txt[2], atol=1e-2)
    trace = pq.read_table(tmp_path / "out" / "trace" / "01_embed.parquet").sort_by("_id")
    assert trace.column("_id").to_pylist() == ["i4", "i5"]
    assert trace.column("reason").to_pylist() == ["unreadable_image", "no_image"]
    assert "not an image" in trace.column("detail")[0].as_py()
    steps = {s.step: s for s in manifest_at(tmp_path / "out").steps}
    assert steps["01_embed"].reasons == {"unreadable_image": 1, "no_image": 1}


def test_images_from_local_paths_and_structs(cli, tmp_path, tiny_clip):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "red.png").write_bytes(png(RED))
    (tmp_path / "img" / "blue.png").write_bytes(png(BLUE))
    (tmp_path / "img" / "bad.png").write_bytes(png(BLUE)[:30])  # truncated
    write_jsonl(tmp_path / "in" / "a.jsonl", [
        {"id": "red", "path": str(tmp_path / "img" / "red.png"), "caption": "r"},
        {"id": "blue", "path": str(tmp_path / "img" / "blue.png"), "caption": "b"},
        {"id": "gone", "path": str(tmp_path / "img" / "missing.png"), "caption": "m"},
        {"id": "bad", "path": str(tmp_path / "img" / "bad.png"), "caption": "x"},
    ])
    steps = f"  - embed: {{backend: open_clip, model: '{tiny_clip}', modality: image, column: path, output_column: _img}}\n"
    res = cli("run", recipe(tmp_path, tmp_path / "in", steps, keep="[_img]"), "-w", "1")
    assert res.exit_code == 0, res.output
    out = read_out(tmp_path / "out")
    assert out.column("_id").to_pylist() == ["blue", "red"]
    trace = pq.read_table(tmp_path / "out" / "trace" / "01_embed.parquet").sort_by("_id")
    details = dict(zip(trace.column("_id").to_pylist(), trace.column("detail").to_pylist()))
    assert set(details) == {"gone", "bad"} and "no such file" in details["gone"]
    # The same images as bytes and as Hugging Face datasets Image structs give the same vectors,
    # decoded here in this process (the run decoded them in its decode process).
    op = Embed(EmbedParams(backend="open_clip", model=str(tiny_clip), modality="image", column="image",
                           decode_workers=0))
    structs = pa.array([{"bytes": None, "path": str(tmp_path / "img" / "red.png")},
                        {"bytes": png(BLUE), "path": None}], pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    b = op.process(pa.RecordBatch.from_pydict({"_id": ["red", "blue"], "image": structs}))
    assert np.allclose(vectors(pa.Table.from_batches([b]), "_embedding")[::-1], vectors(out, "_img"), atol=1e-6)


def test_an_image_column_of_the_wrong_type(tiny_clip):
    from curate.errors import InputError

    op = Embed(EmbedParams(backend="open_clip", model=str(tiny_clip), modality="image", column="image",
                           decode_workers=0))
    with pytest.raises(InputError, match="image column 'image' must hold"):
        op.process(pa.RecordBatch.from_pydict({"_id": ["a"], "image": [1]}))


def test_weights_from_a_checkpoint_file_with_a_config_file(tmp_path, tiny_clip):
    """A config JSON + a checkpoint path (`pretrained`) is the same model as the folder."""
    cfg = tmp_path / "tiny-cfg.json"
    cfg.write_text(json.dumps(TINY_CFG))
    texts = pa.RecordBatch.from_pydict({"_id": ["a", "b"], "text": ["a red square", "a dog"]})
    folder = Embed(EmbedParams(backend="open_clip", model=str(tiny_clip))).process(texts)
    from_file = Embed(EmbedParams(backend="open_clip", model=str(cfg),
                                  pretrained=str(tiny_clip / "open_clip_pytorch_model.bin"))).process(texts)
    assert folder.column("_embedding").equals(from_file.column("_embedding"))
    rnd = Embed(EmbedParams(backend="open_clip", model=str(cfg), pretrained="random")).process(texts)
    assert not folder.column("_embedding").equals(rnd.column("_embedding"))


@pytest.mark.parametrize("model, pretrained, message", [
    ("{tmp}/nowhere", None, "not found: the local path"),
    ("{tmp}/empty", None, "is not an open_clip model folder"),
    ("{tmp}/noweights", None, "holds no weights"),
    ("ViT-B-32", None, "'ViT-B-32' is only an architecture"),
    ("ViT-B-32", "openai", "is not a local checkpoint file"),
    ("hf-hub:someorg/clip-not-cached", None, "is not in the Hugging Face cache"),
    ("no-such-architecture", None, "is not a local folder or config file"),
])
def test_models_and_weights_that_are_not_here_are_clear_errors(tmp_path, model, pretrained, message, empty_hf_cache):
    pytest.importorskip("open_clip")
    (tmp_path / "empty").mkdir()
    (tmp_path / "noweights").mkdir()
    (tmp_path / "noweights" / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CFG}))
    params = EmbedParams(backend="open_clip", model=model.format(tmp=tmp_path), pretrained=pretrained)
    with pytest.raises(CurateError, match=message):
        Embed(params).setup()
