"""image_filter: each rule at its boundary, sizes from metadata or the header, and the
datacomp_basic preset equal to DataComp's basic-filter rules (transcribed here) on planted cases."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings, strategies as st

from curate_operators.image.image_filter import ImageFilter, ImageFilterParams
from tests.curate.io.wds_shards import image_bytes, run_on_shards, sample, write_tar


def datacomp_basic_keep(caption, width, height):
    """apply_filter.py's basic filter less the fastText English rule, transcribed."""
    return (len(caption.split()) > 2 and len(caption) > 5
            and min(width, height) >= 200 and max(width, height) / min(width, height) <= 3.0)


def run(params, **columns):
    op = ImageFilter(ImageFilterParams(**params), text_column="caption")
    return op.keep(pa.RecordBatch.from_pydict(columns))


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 900), height=st.integers(1, 900),
       caption=st.sampled_from(["", "a b", "ab cd e", "a  b c", "abc", "a red dog", "two words", "x y z"]))
@example(width=200, height=200, caption="a red dog")  # min side exactly 200: kept
@example(width=199, height=597, caption="a red dog")
@example(width=200, height=600, caption="a red dog")  # aspect ratio exactly 3: kept
@example(width=200, height=601, caption="a red dog")
@example(width=300, height=300, caption="a b c")  # 3 words but 5 characters: dropped
def test_datacomp_preset_equals_the_reference_rules(width, height, caption):
    v = run({"preset": "datacomp_basic"}, image=pa.array([b"unused"], pa.binary()), caption=[caption],
            original_width=[width], original_height=[height])
    assert bool(v.keep[0]) == datacomp_basic_keep(caption, width, height)


def test_sizes_from_the_header_when_no_metadata():
    imgs = [image_bytes((250, 210)), image_bytes((150, 300), fmt="PNG"), image_bytes((700, 200), fmt="WEBP"),
            b"garbage"]
    v = run({"min_side": 200, "max_aspect_ratio": 3.0}, image=pa.array(imgs, pa.binary()))
    assert v.keep.tolist() == [True, False, False, False]
    assert [v.reason[i] for i in (1, 2, 3)] == ["image_too_small", "image_aspect_ratio", "image_undecodable"]
    assert v.detail[2] == "700x200: aspect ratio 3.500 > 3.0"


def test_bytes_format_max_side_and_decodable_rules():
    jpg, png = image_bytes((64, 64)), image_bytes((64, 64), fmt="PNG")
    truncated = jpg[:-20]  # its header reads, its pixels do not
    images = pa.array([jpg, png, truncated], pa.binary())
    assert run({"formats": ["jpeg"]}, image=images).keep.tolist() == [True, False, True]
    assert run({"decodable": True}, image=images).keep.tolist() == [True, True, False]
    assert run({"max_side": 64}, image=images).keep.tolist() == [True, True, True]
    assert run({"max_side": 63}, image=images).keep.tolist() == [False, False, False]
    assert run({"min_bytes": len(jpg)}, image=pa.array([jpg, truncated], pa.binary())).keep.tolist() == [True, False]
    assert run({"max_bytes": len(truncated)}, image=pa.array([jpg, truncated], pa.binary())).keep.tolist() == [
        False, True]


def test_preset_values_can_be_replaced():
    v = run({"preset": "datacomp_basic", "min_side": 100}, image=pa.array([b"x"], pa.binary()),
            caption=["a red dog"], original_width=[150], original_height=[150])
    assert v.keep.tolist() == [True]


def test_an_undecodable_image_of_a_webdataset_shard_is_named_by_its_shard_and_member(cli, tmp_path):
    members = sample("000000", "a red square") + sample("000001", "a broken one") + sample("000002", "a blue one")
    members[3] = ("000001.jpg", members[3][1][:-40])  # its header reads, its pixels do not
    write_tar(tmp_path / "in" / "a.tar", members)
    out = run_on_shards(cli, tmp_path, "[image_filter: {decodable: true}]")
    trace = pq.read_table(out / "trace" / "01_image_filter.parquet").to_pylist()
    assert [(t["reason"], t["detail"]) for t in trace] == [
        ("image_undecodable", f"the image of sample 000001 ({tmp_path / 'in' / 'a.tar'}, member 000001.jpg) does not decode")]


def test_undecodable_images_of_other_inputs_are_named_as_they_can_be():
    """Rows without the reader's shard columns: Parquet that kept only `_key`, or no WebDataset at all."""
    images = pa.array([b"garbage", b"garbage"], pa.binary())
    assert run({"decodable": True}, image=images).detail == ["the image does not decode"] * 2
    v = run({"decodable": True}, image=images, _key=["k1", None])
    assert v.detail == ["the image of sample k1 does not decode", "the image does not decode"]
    v = run({"min_side": 10}, image=images, _key=["k1", "k2"], _shard=["a.tar"] * 2, _image_member=["k1.png", "k2.jpg"])
    assert v.detail[1] == "no width and height for the image of sample k2 (a.tar, member k2.jpg): no metadata, and its header is unreadable"
    v = run({"min_side": 10}, image=images, original_width=[5, None], original_height=[5, 20])
    assert v.detail == ["5x5: min side < 10",
                        "no width and height for the image: its metadata is null, and its header is unreadable"]


def test_datacomp_basic_runs_on_datacomp_metadata_parquet_without_images(cli, tmp_path):
    """DataComp's own metadata Parquet (uid, text, original_width, original_height; no image column):
    the basic rule reads only width, height and caption, so the preset runs without images."""
    rows = [("u0", "a red dog on a mat", 300, 300), ("u1", "a b", 300, 300), ("u2", "a red dog on a mat", 100, 400),
            ("u3", "a red dog on a mat", 200, 601)]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"uid": [r[0] for r in rows], "text": [r[1] for r in rows],
                             "original_width": [r[2] for r in rows], "original_height": [r[3] for r in rows]}),
                   tmp_path / "in" / "meta.parquet")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"input: {{path: '{tmp_path / 'in'}', id_column: uid}}\n"
                      f"output: {{path: '{tmp_path / 'out'}'}}\n"
                      "steps: [{image_filter: {preset: datacomp_basic}}]\n")
    assert cli("validate", recipe).exit_code == 0
    res = cli("run", recipe, "-w", "1")
    assert res.exit_code == 0, res.output
    assert pq.read_table(tmp_path / "out" / "data").column("uid").to_pylist() == ["u0"]
    trace = pq.read_table(tmp_path / "out" / "trace" / "01_image_filter.parquet").to_pylist()
    assert sorted(t["reason"] for t in trace) == ["caption_too_short", "image_aspect_ratio", "image_too_small"]


def test_rules_that_read_the_image_still_need_it_and_size_rules_need_metadata_or_images(cli, tmp_path):
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"text": ["a red dog"], "original_width": [300], "original_height": [300]}),
                   tmp_path / "in" / "meta.parquet")
    pq.write_table(pa.table({"text": ["a red dog"]}), tmp_path / "in2.parquet")
    for path, steps, needs in [(tmp_path / "in", "{image_filter: {formats: [jpeg]}}", "'image'"),
                               (tmp_path / "in2.parquet", "{image_filter: {min_side: 10}}", "original_width")]:
        recipe = tmp_path / "r.yaml"
        recipe.write_text(f"input: {{path: '{path}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\nsteps: [{steps}]\n")
        res = cli("validate", recipe)
        assert res.exit_code == 2 and needs in res.output, res.output


def test_a_webdataset_sample_without_its_json_takes_its_size_from_the_image_header(cli, tmp_path):
    members = (sample("000000", size=(300, 300), original_width=300, original_height=300)
               + [("000001.jpg", image_bytes((300, 250))), ("000001.txt", b"a red square")]
               + sample("000002", size=(300, 300), original_width=100, original_height=100))
    write_tar(tmp_path / "in" / "a.tar", members)
    out = run_on_shards(cli, tmp_path, "[image_filter: {min_side: 200}]", output=", keep_columns: [_key]")
    assert pq.read_table(out / "data").column("_key").to_pylist() == ["000000", "000001"]
    trace = pq.read_table(out / "trace" / "01_image_filter.parquet").to_pylist()
    assert [(t["reason"], t["detail"]) for t in trace] == [("image_too_small", "100x100: min side < 200")]
