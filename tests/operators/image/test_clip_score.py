"""clip_score on a tiny random open_clip model built from a config: equal to open_clip's own
encode_image / encode_text cosine, in [-1, 1], deterministic, through `curate run` on WebDataset
shards; clip_score_select keeps DataComp's threshold-from-fraction set."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, strategies as st

from curate_operators.image.clip_score import ClipScore, ClipScoreParams
from curate_operators.image.clip_score_select import ClipScoreSelect, ClipScoreSelectParams
from tests.curate.io.wds_shards import image_bytes, run_on_shards, sample, write_tar
from tests.operators.embed.conftest import tiny_clip  # noqa: F401  (the fixture)

COLORS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (250, 250, 0), (10, 10, 10), (128, 0, 128)]
CAPTIONS = ["a red thing", "green grass", "blue sky", "a yellow square", "darkness", "purple"]


def bare_open_clip_scores(folder, images, captions):
    """A straightforward open_clip computation: decode, preprocess, encode, normalise, cosine."""
    import io

    import open_clip
    import torch
    from PIL import Image

    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{folder}")
    model.eval()
    with torch.no_grad():
        pixels = torch.stack([preprocess(Image.open(io.BytesIO(b)).convert("RGB")) for b in images])
        img = model.encode_image(pixels)
        txt = model.encode_text(tokenizer(captions))
    img = img / img.norm(dim=-1, keepdim=True)
    txt = txt / txt.norm(dim=-1, keepdim=True)
    return (img * txt).sum(-1).numpy()


def pairs():
    images = [image_bytes((40 + 7 * i, 30 + 5 * i), c, fmt="PNG" if i % 2 else "JPEG") for i, c in enumerate(COLORS)]
    return images, CAPTIONS


def test_equals_open_clip_own_cosine(tiny_clip):
    images, captions = pairs()
    # decode_workers 0 here and below: a decode process spawned per model load costs seconds; the pool
    # is checked against decoding inline in test_decode_workers_* and run in test_undecodable_*
    op = ClipScore(ClipScoreParams(model=str(tiny_clip), batch_size=4, device="cpu", keep_embedding=True,
                                   decode_workers=0), text_column="caption")
    batch = pa.RecordBatch.from_pydict({"image": pa.array(images, pa.binary()), "caption": captions})
    out = op.process(batch)
    scores = out.column("quality_clip_score").to_numpy()
    expected = bare_open_clip_scores(tiny_clip, images, captions)
    assert np.allclose(scores, expected, atol=1e-5)
    assert np.all(np.abs(scores) <= 1)
    again = ClipScore(op.params, text_column="caption").process(batch)
    assert again.column("quality_clip_score").equals(out.column("quality_clip_score"))  # deterministic
    emb = out.column("_embedding")
    emb = emb.values.to_numpy().reshape(len(images), -1)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)


def test_missing_and_unreadable_rows_and_min_score(tiny_clip):
    images, captions = pairs()
    vals = [images[0], None, b"not an image", images[3]]
    caps = ["a", "b", "c", None]
    op = ClipScore(ClipScoreParams(model=str(tiny_clip), device="cpu", decode_workers=0), text_column="caption")
    out, verdict = op.process(pa.RecordBatch.from_pydict({"image": pa.array(vals, pa.binary()), "caption": caps}))
    assert verdict.keep.tolist() == [True, False, False, False]
    assert [verdict.reason[i] for i in (1, 2, 3)] == ["no_image", "unreadable_image", "no_caption"]
    assert out.column("quality_clip_score").null_count == 3
    score = out.column("quality_clip_score")[0].as_py()
    cut = ClipScore(ClipScoreParams(model=str(tiny_clip), device="cpu", min_score=min(1.0, score + 1e-6),
                                    decode_workers=0), text_column="caption")
    _, verdict = cut.process(pa.RecordBatch.from_pydict({"image": pa.array(vals[:1], pa.binary()),
                                                         "caption": caps[:1]}))
    assert verdict.keep.tolist() == [False] and verdict.reason[0] == "clip_score_low"


def reference_threshold_keep(scores, fraction):
    """apply_filter.py's rule, transcribed: threshold = sorted desc [int(N * f)], keep >= threshold."""
    n = len(scores)
    ordered = sorted(scores, reverse=True)
    threshold = ordered[int(n * fraction)] if int(n * fraction) < n else ordered[-1]
    return [s >= threshold for s in scores]


@given(scores=st.lists(st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.31, 0.5]) | st.floats(-1, 1), min_size=1,
                       max_size=60), fraction=st.floats(0.01, 1.0))
@example(scores=[0.3, 0.3, 0.3, 0.1], fraction=0.25)  # ties at the threshold are all kept
@example(scores=[0.5, 0.2], fraction=1.0)
def test_select_equals_datacomp_rule(scores, fraction):
    op = ClipScoreSelect(ClipScoreSelectParams(fraction=fraction))
    batches = [pa.RecordBatch.from_pydict({"quality_clip_score": scores[i:i + 7]}) for i in range(0, len(scores), 7)]
    state = op.fit(batches, None)
    keep = np.concatenate([op.apply(b, state).keep for b in batches])
    assert keep.tolist() == reference_threshold_keep(scores, fraction)
    assert keep.sum() >= min(int(len(scores) * fraction) + 1, len(scores))


def test_clip_score_then_top_fraction_on_webdataset_through_curate_run(cli, tmp_path, tiny_clip):
    images, captions = pairs()
    members = []
    for i, (img, cap) in enumerate(zip(images, captions)):
        members += sample(f"{i:05d}", cap, size=(40, 40))
    write_tar(tmp_path / "in" / "a.tar", members)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"input: {{path: '{tmp_path / 'in'}', text_column: caption}}\n"
                      f"output: {{path: '{tmp_path / 'out'}', format: webdataset}}\nsteps:\n"
                      f"  - clip_score: {{model: '{tiny_clip}', device: cpu, decode_workers: 0}}\n"
                      f"  - clip_score_select: {{fraction: 0.5}}\n")
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 0, res.output
    meta = pq.read_table(tmp_path / "out" / "data" / "part-00000.parquet")
    trace = pq.read_table(tmp_path / "out" / "trace" / "02_clip_score_select.parquet")
    assert meta.num_rows == 4 and trace.num_rows == 2  # int(6 * 0.5) + 1 kept
    assert min(meta.column("quality_clip_score").to_pylist()) >= max(
        r["quality_clip_score"] for r in trace.column("row").to_pylist())


@pytest.mark.gpu
def test_clip_score_on_gpu_matches_cpu(tiny_clip):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    images, captions = pairs()
    batch = pa.RecordBatch.from_pydict({"image": pa.array(images, pa.binary()), "caption": captions})
    cpu = ClipScore(ClipScoreParams(model=str(tiny_clip), device="cpu"), text_column="caption").process(batch)
    gpu = ClipScore(ClipScoreParams(model=str(tiny_clip), device="cuda", precision="float32"),
                    text_column="caption").process(batch)
    assert np.allclose(cpu.column("quality_clip_score").to_numpy(), gpu.column("quality_clip_score").to_numpy(),
                       atol=1e-4)


def test_decode_workers_give_the_scores_decoding_in_the_model_process_gives(tiny_clip):
    import torch

    from curate_operators.embed.decoding import decode_workers

    images, captions = pairs()
    images = (images * 4)[:22]
    images[9] = b"not an image"
    batch = pa.RecordBatch.from_pydict({"image": pa.array(images, pa.binary()),
                                        "caption": (captions * 4)[:22]})
    outs = []
    for workers in (0, None, 2):  # None: the default (on CPU, a decode process beside the model's threads)
        op = ClipScore(ClipScoreParams(model=str(tiny_clip), batch_size=4, device="cpu", keep_embedding=True,
                                       decode_workers=workers), text_column="caption")
        try:
            op.setup()
            started = len(op.backend.decoders.procs) if op.backend.decoders is not None else 0
            assert started == (decode_workers(None, "cpu", torch.get_num_threads()) if workers is None else workers)
            outs.append([op.process(batch), op.process(batch.slice(3))])  # a second batch through the same ring
        finally:
            op.teardown()
    for out in outs[1:]:
        for (without, verdict), (with_, verdict2) in zip(outs[0], out):
            assert with_.equals(without)  # scores and embeddings, bit for bit
            assert verdict.keep.tolist() == verdict2.keep.tolist() and verdict.reason == verdict2.reason
            assert verdict.detail == verdict2.detail
    assert outs[0][0][1].reason[9] == "unreadable_image"


def test_undecodable_images_go_to_the_trace_naming_their_shard_and_member(cli, tmp_path, tiny_clip):
    """The model stage reads the staged rows, not the tar: the reader's `_shard` and `_image_member`
    carry the names to it."""
    images, captions = pairs()
    members = []
    for i, cap in enumerate(captions):
        members += sample(f"{i:05d}", cap, size=(40, 40))
    members[3 * 3] = ("00003.jpg", b"\xff\xd8\xff not a whole JPEG")  # sample 00003's image member
    write_tar(tmp_path / "in" / "a.tar", members)
    out = run_on_shards(cli, tmp_path, f"[clip_score: {{model: '{tiny_clip}', device: cpu, decode_workers: 1, "
                                       f"batch_size: 2}}]")
    trace = pq.read_table(out / "trace" / "01_clip_score.parquet").to_pylist()
    # the trace keeps the public columns only: the detail names the sample, its tar and its member
    assert [(t["reason"], t["row"]["caption"]) for t in trace] == [("unreadable_image", captions[3])]
    assert trace[0]["detail"].startswith(f"the image of sample 00003 ({tmp_path / 'in' / 'a.tar'}, member 00003.jpg): ")
    assert pq.read_table(out / "data").num_rows == len(captions) - 1
