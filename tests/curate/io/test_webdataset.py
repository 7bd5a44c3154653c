"""WebDataset tar shards in and out: samples grouped by key into rows (image bytes undecoded,
caption, the JSON's fields, `_key`), malformed members and truncated tars in the trace with the
shard and member named, and tar shards with Parquet metadata beside them written back, the same
bytes whatever the worker count, member for member equal to the input's."""

from __future__ import annotations

import io
import tarfile

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from curate.io import webdataset
from curate.io.readers import read_source
from curate.io.sources import discover
from tests.curate.io.wds_shards import image_bytes, run_on_shards, sample, tar_members, write_tar


def read_all(path):
    rows, bad = [], []
    for source in discover(str(path)):
        for batch, problems in read_source(source, batch_rows=2):
            if batch is not None:
                rows += batch.to_pylist()
            if problems is not None:
                bad += list(zip(problems.line, problems.raw, problems.error))
    return rows, bad


def corpus():
    return (sample("000000", "a red square", size=(300, 200)) + sample("000001", "a png", fmt="PNG")
            + sample("000002", "a webp", fmt="WEBP", size=(40, 400)) + sample("000003", "the last one"))


@pytest.mark.parametrize("name,mode", [("a.tar", "w"), ("a.tar.gz", "w:gz"), ("a.tgz", "w:gz"),
                                       ("a.tar.bz2", "w:bz2")])
def test_samples_become_rows_with_undecoded_image_bytes(tmp_path, name, mode):
    members = corpus()
    write_tar(tmp_path / "in" / name, members, mode)
    rows, bad = read_all(tmp_path / "in")
    assert bad == []
    assert [r["_key"] for r in rows] == ["000000", "000001", "000002", "000003"]
    images = dict(members)
    assert rows[1]["image"] == images["000001.png"] and rows[2]["image"] == images["000002.webp"]
    assert rows[0]["caption"] == "a red square" and rows[0]["width"] == 300 and rows[0]["status"] == "success"
    # the JSON's field order, caption among them, is the columns' order
    assert list(rows[0])[:5] == ["_key", "image", "url", "caption", "key"]


def test_zstd_compressed_shard(tmp_path):
    import pyarrow as pa

    write_tar(tmp_path / "plain.tar", corpus())
    (tmp_path / "in").mkdir()
    with pa.output_stream(str(tmp_path / "in" / "a.tar.zst"), compression="zstd") as out:
        out.write((tmp_path / "plain.tar").read_bytes())
    rows, bad = read_all(tmp_path / "in")
    assert [r["_key"] for r in rows] == ["000000", "000001", "000002", "000003"] and bad == []


def test_caption_only_in_txt_goes_right_after_the_image(tmp_path):
    members = [("k1.jpg", image_bytes((10, 10))), ("k1.txt", b"just text"), ("k1.json", b'{"url": "u"}'),
               ("k2.jpg", image_bytes((10, 10)))]
    write_tar(tmp_path / "in" / "a.tar", members)
    rows, bad = read_all(tmp_path / "in")
    shard = str(tmp_path / "in" / "a.tar")
    assert rows == [{"_key": "k1", "image": members[0][1], "caption": "just text", "url": "u", "_shard": shard,
                     "_image_member": "k1.jpg", "_id": rows[0]["_id"]},
                    {"_key": "k2", "image": members[3][1], "caption": None, "url": None, "_shard": shard,
                     "_image_member": "k2.jpg", "_id": rows[1]["_id"]}]


def test_rows_name_their_shard_and_image_member_as_in_the_tar(tmp_path):
    """What a later step's trace names when it cannot decode the image: the member as the tar
    spells it (a folder, an upper-case suffix), the one the image column holds."""
    members = [("dir/k1.txt", b"text"), ("dir/k1.JPG", image_bytes((9, 9))),
               ("k2.jpg", image_bytes((9, 9))), ("k2.JPG", image_bytes((8, 8))),  # a repeat: the first is kept
               ("k3.webp", image_bytes((9, 9), fmt="WEBP")), ("k3.png", image_bytes((9, 9), fmt="PNG"))]
    write_tar(tmp_path / "in" / "a.tar", members)
    write_tar(tmp_path / "in" / "b.tar", [("k4.jpg", image_bytes((9, 9)))])
    rows, _ = read_all(tmp_path / "in")
    a, b = str(tmp_path / "in" / "a.tar"), str(tmp_path / "in" / "b.tar")
    assert [(r["_key"], r["_shard"], r["_image_member"]) for r in rows] == [
        ("dir/k1", a, "dir/k1.JPG"), ("k2", a, "k2.jpg"), ("k3", a, "k3.png"), ("k4", b, "k4.jpg")]
    images = dict(members)
    assert [r["image"] for r in rows[:3]] == [images["dir/k1.JPG"], images["k2.jpg"], images["k3.png"]]


def test_malformed_members_are_named(tmp_path):
    members = (sample("000000") + sample("00000a") + sample("000001", image=False) + [("000002.jpg", image_bytes((9, 9))),
               ("000002.txt", b"\xff\xfe bad"), ("000003.jpg", image_bytes((9, 9))), ("000003.json", b"[1, 2]"),
               ("000004.jpg", image_bytes((9, 9))), ("000004.json", b"{not json"), ("noext", b"x")]
               + sample("000005", extra="a field the first samples lack"))
    write_tar(tmp_path / "in" / "s.tar", members)
    rows, bad = read_all(tmp_path / "in")
    # a field only a later sample has is a column of the input's (null in the others), not a bad row
    assert [r["_key"] for r in rows] == ["000000", "00000a", "000005"]
    assert [r["extra"] for r in rows] == [None, None, "a field the first samples lack"]
    by_member = {raw: (line, error) for line, raw, error in bad}
    assert "has no image member" in by_member["000001.txt, 000001.json"][1]
    assert by_member["000001.txt, 000001.json"][0] == 7  # its first member is the tar's 7th
    assert "000002.txt is not valid UTF-8" in by_member["000002.jpg, 000002.txt"][1]
    assert "000003.json holds a list" in by_member["000003.jpg, 000003.json"][1]
    assert "000004.json is not valid JSON" in by_member["000004.jpg, 000004.json"][1]
    assert "noext has no suffix" in by_member["noext"][1]
    assert len(bad) == 5


def _cut_points(raw: bytes) -> int:
    """The end of the last member's data: a cut before it loses data, one after it only padding."""
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        last = tar.getmembers()[-1]
    return last.offset_data + last.size


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0.0, 1.0))
@example(fraction=0.0)
@example(fraction=1.0)
def test_a_truncated_tar_keeps_whole_samples_and_names_the_cut(tmp_path, fraction):
    members = corpus()
    whole = write_tar(tmp_path / "whole.tar", members).read_bytes()
    end = _cut_points(whole)
    cut = max(1, int(end * fraction))  # anywhere up to the end of the last member's data
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "cut.tar").write_bytes(whole[:cut])
    rows, bad = [], []
    try:
        rows, bad = read_all(tmp_path / "in")
    except Exception as e:  # only the reader's own message, for a file with no row at all
        assert "no rows could be read" in str(e) and "cut.tar" in str(e)
        return
    keys = [r["_key"] for r in rows]
    assert keys == ["000000", "000001", "000002", "000003"][:len(keys)] and len(keys) < 4
    assert len(bad) == 1 and ("truncated" in bad[0][2])
    complete = {k for k in ("000000", "000001", "000002", "000003")}
    assert all(r["image"] for r in rows) and set(keys) <= complete


def test_a_tar_cut_at_a_member_boundary_is_truncated_too(tmp_path):
    whole = write_tar(tmp_path / "whole.tar", corpus()).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        members = tar.getmembers()
    boundary = members[-2].offset_data + ((members[-2].size + 511) // 512) * 512  # before the last header
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cut.tar").write_bytes(whole[:boundary])
    rows, bad = read_all(tmp_path / "in")
    assert [r["_key"] for r in rows] == ["000000", "000001", "000002"]
    assert len(bad) == 1 and "without the end-of-archive marker" in bad[0][2] and "000003.jpg" in bad[0][1]


def test_truncated_member_through_curate_run_is_traced_with_shard_and_member(cli, tmp_path):
    whole = write_tar(tmp_path / "whole.tar", corpus()).read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cut.tar").write_bytes(whole[:_cut_points(whole) - 100])
    out = run_on_shards(cli, tmp_path, "[]", output=", keep_columns: [_key]")
    trace = pq.read_table(out / "trace" / "00_read.parquet").to_pylist()
    assert len(trace) == 1 and trace[0]["reason"] == "unparseable"
    assert "cut.tar" in trace[0]["detail"] and "000003.json" in trace[0]["detail"]
    assert pq.read_table(tmp_path / "out" / "data").column("_key").to_pylist() == ["000000", "000001", "000002"]


def test_a_bad_sample_is_traced_by_its_member_position_not_a_line(cli, tmp_path):
    """A tar has members, not lines: the trace says "member 4" (the sample's first member is the tar's 4th)."""
    write_tar(tmp_path / "in" / "s.tar", sample("000000") + sample("000001", image=False) + sample("000002"))
    out = run_on_shards(cli, tmp_path, "[]")
    (bad,) = pq.read_table(out / "trace" / "00_read.parquet").to_pylist()
    assert bad["detail"].startswith(f"{tmp_path / 'in' / 's.tar'}, member 4: ") and "has no image member" in bad["detail"]
    assert ", line " not in bad["detail"]

def wds_recipe(tmp_path, inp, out, extra=""):
    p = tmp_path / f"{out.name}.yaml"
    p.write_text(f"input: {{path: '{inp}', text_column: caption}}\n"
                 f"output: {{path: '{out}', format: webdataset}}\nsteps:\n{extra or '  []'}\n")
    return p


def test_round_trip_is_member_for_member_identical_and_worker_count_free(cli, tmp_path, manifest_at):
    shards = [corpus(), sample("000010", "ten", size=(500, 500)) + sample("000011", "eleven", fmt="PNG")]
    for i, members in enumerate(shards):
        write_tar(tmp_path / "in" / f"{i:05d}.tar", members)
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        res = cli("run", wds_recipe(tmp_path, tmp_path / "in", out), "-w", workers)
        assert res.exit_code == 0, res.output
        outputs.append({p.name: p.read_bytes() for p in sorted((out / "data").iterdir())})
    assert outputs[0] == outputs[1]
    out = tmp_path / "out1" / "data"
    assert sorted(outputs[0]) == ["part-00000.parquet", "part-00000.tar", "part-00001.parquet", "part-00001.tar"]
    assert tar_members(out / "part-00000.tar") == shards[0] and tar_members(out / "part-00001.tar") == shards[1]
    meta = pq.read_table(out / "part-00000.parquet")
    assert "image" not in meta.column_names and meta.column("_key").to_pylist() == ["000000", "000001",
                                                                                   "000002", "000003"]
    manifest = manifest_at(tmp_path / "out1")
    assert manifest.format == "webdataset" and manifest.data_files == 2
    # and the output reads back as input
    rows, bad = read_all(out / "*.tar")
    assert len(rows) == 6 and bad == []


def test_filtered_rows_leave_the_shards(cli, tmp_path):
    write_tar(tmp_path / "in" / "a.tar", corpus())
    out = tmp_path / "out"
    res = cli("run", wds_recipe(tmp_path, tmp_path / "in", out, "  - sql_filter: {where: \"height >= 100\"}"), "-w", "1")
    assert res.exit_code == 0, res.output
    names = [n for n, _ in tar_members(out / "data" / "part-00000.tar")]
    assert names == ["000000.jpg", "000000.txt", "000000.json", "000002.webp", "000002.txt", "000002.json"]


def test_image_suffix_from_signature():
    assert webdataset.image_suffix(image_bytes((4, 4))) == "jpg"
    assert webdataset.image_suffix(image_bytes((4, 4), fmt="PNG")) == "png"
    assert webdataset.image_suffix(image_bytes((4, 4), fmt="WEBP")) == "webp"
    assert webdataset.image_suffix(b"plain bytes") == "img"


def test_split_name_as_webdataset():
    assert webdataset.split_name("dir/000012.seg.JPG") == ("dir/000012", "seg.jpg")
    assert webdataset.split_name("a.b/key.txt") == ("a.b/key", "txt")
    assert webdataset.split_name("key") == ("key", "")


@pytest.mark.parametrize("point", ["read-batch", "published-data"])
def test_killed_webdataset_run_resumes_to_the_same_bytes(cli, tmp_path, point):
    from tests.curate.engine import faultkit

    for i in range(3):
        write_tar(tmp_path / "in" / f"{i:05d}.tar", sample(f"{i}0", f"caption {i}") + sample(f"{i}1", "x", fmt="PNG"))
    whole = tmp_path / "whole"
    assert cli("run", wds_recipe(tmp_path, tmp_path / "in", whole), "-w", "1").exit_code == 0
    out = tmp_path / "killed"
    path = wds_recipe(tmp_path, tmp_path / "in", out)
    proc = faultkit.start(path, failpoint=point, workers=1)
    assert faultkit.wait_for_failpoint(proc) or faultkit.wait_for_failpoint_below(proc)
    faultkit.kill(proc, whole_group=True)
    res = cli("run", path, "--resume", "-w", "1")
    assert res.exit_code == 0, res.output
    files = lambda d: {p.name: p.read_bytes() for p in sorted((d / "data").iterdir())}  # noqa: E731
    assert files(out) == files(whole) and len(files(out)) == 6
