"""Inputs at a URI: a run reading s3:// (moto's server on loopback), http:// and memory:// gives the
bytes a local run gives; Parquet is read by ranges; a changed object stops --resume; a store that
cannot be read is exit 2 naming the URI; no credential reaches the manifest."""

import io
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

from curate import demo, recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError, InputError
from curate.io import native_s3
from curate.io.readers import read_source, scan_schema
from curate.io.sources import discover, input_objects, split_parquet
from tests.curate.engine.faultkit import digest
from tests.curate.io import motokit
from tests.curate.io.faultproxy import FaultProxy
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)

QUICKSTART = (Path(__file__).parents[3] / "recipes" / "quickstart.yaml").read_text()


@pytest.fixture
def s3(monkeypatch, s3_server):
    client = motokit.use(monkeypatch, s3_server, "inp")
    yield client
    for obj in client.list_objects_v2(Bucket="inp").get("Contents", []):
        client.delete_object(Bucket="inp", Key=obj["Key"])
    client.delete_bucket(Bucket="inp")


def upload(client, local: Path, prefix: str) -> None:
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        client.put_object(Bucket="inp", Key=f"{prefix}/{f.relative_to(local).as_posix()}", Body=f.read_bytes())


def quickstart(inp: str, out: Path, **opts):
    r = recipe.load(text=QUICKSTART, input_path=inp, output_path=str(out))
    return run(r, RunOptions(workers=2, **opts))


def copy(inp: str, out: Path, **opts):
    """A run without steps: the input as curate reads it."""
    r = recipe.load(text="steps: []\n", input_path=inp, output_path=str(out))
    return run(r, RunOptions(workers=2, **opts))


def test_quickstart_on_s3_jsonl_gz_gives_the_local_bytes(tmp_path, s3):
    local = tmp_path / "demo"
    demo.generate(local, docs=1500, files=3)
    upload(s3, local, "demo")
    m_local = quickstart(f"{local}/*.jsonl.gz", tmp_path / "local")
    m_s3 = quickstart("s3://inp/demo/*.jsonl.gz", tmp_path / "s3")
    assert digest(tmp_path / "s3") == digest(tmp_path / "local") and digest(tmp_path / "local")
    assert [s.removed for s in m_s3.steps] == [s.removed for s in m_local.steps]
    assert m_s3.rows_out == m_local.rows_out > 0


def hive_parquet(root: Path) -> None:
    """A hive-partitioned Parquet dataset: lang=xx/part-N.parquet, several row groups a file."""
    for lang in ("de", "en"):
        for f in range(2):
            rows = [{"text": f"{lang} document {f}-{i} " + "word " * (i % 7), "n": i} for i in range(300)]
            (root / f"lang={lang}").mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows), root / f"lang={lang}" / f"part-{f}.parquet", row_group_size=50)


def test_hive_parquet_on_s3_gives_the_local_bytes(tmp_path, s3):
    hive_parquet(tmp_path / "hive")
    upload(s3, tmp_path / "hive", "hive")
    text = "input: {path: P}\noutput: {path: O}\nsteps:\n  - sql_filter: {where: \"lang = 'de' OR n % 3 = 0\"}\n" \
           "  - exact_dedup: {}\n"
    outs = {}
    for name, inp in (("local", str(tmp_path / "hive")), ("s3", "s3://inp/hive")):
        outs[name] = tmp_path / name
        run(recipe.load(text=text, input_path=inp, output_path=str(outs[name])), RunOptions(workers=2))
    assert digest(outs["s3"]) == digest(outs["local"])
    assert set(pq.read_table(outs["s3"] / "data").column("lang").to_pylist()) == {"de", "en"}


# The two ways an object of S3 is read: pyarrow's client where the options map onto it
# (native_s3.py), s3fs where they hold something it cannot be told (config_kwargs here).
READERS = {"native": {}, "s3fs": {"config_kwargs": {"connect_timeout": 60}}}


def ranges(proxy: FaultProxy, key: str) -> list[tuple[int, int]]:
    """The byte ranges [start, end) of the GET requests for `key` that went through `proxy`."""
    found = []
    for method, path, range_ in proxy.log:
        if method == "GET" and path.split("?")[0].endswith(key) and range_:
            first, last = range_.removeprefix("bytes=").split("-")
            found.append((int(first), int(last) + 1))
    return found


def put_parquet(s3, key: str, rows: int, row_group_size: int) -> bytes:
    """An uncompressed Parquet object of `rows` rows of ~2 KB text at s3://inp/`key`; its bytes."""
    buf = io.BytesIO()
    table = pa.Table.from_pylist([{"text": f"row {i} " + "x" * 2000, "n": i} for i in range(rows)])
    pq.write_table(table, buf, row_group_size=row_group_size, compression="none")
    s3.put_object(Bucket="inp", Key=key, Body=buf.getvalue())
    return buf.getvalue()


@pytest.mark.parametrize("reader", READERS)
def test_a_parquet_task_reads_its_row_groups_by_range_never_the_whole_object(tmp_path, s3, s3_server, reader):
    body = put_parquet(s3, "big/f.parquet", 2000, 200)
    size = len(body)
    with FaultProxy(s3_server, rate=0) as proxy:
        options = {"endpoint_url": proxy.url, **READERS[reader]}
        assert (native_s3.client("s3://inp/big/f.parquet", options) is not None) == (reader == "native")
        tasks = split_parquet(discover("s3://inp/big/f.parquet", storage_options=options), target_bytes=size // 5)
        assert len(tasks) > 3 and all(t.size == size for t in tasks)
        proxy.log.clear()
        task = tasks[2]
        got = [b for b, _ in read_source(task) if b is not None]
    assert sum(b.num_rows for b in got) == 200 * len(task.row_groups)
    assert pa.concat_arrays([b.column("n") for b in got]).to_pylist()[0] == task.first_row
    fetched = ranges(proxy, "big/f.parquet")
    read = sum(end - start for start, end in fetched)
    meta = pq.ParquetFile(io.BytesIO(body)).metadata
    wanted = sum(meta.row_group(i).total_byte_size for i in task.row_groups)
    # its row groups (and the footer, unless this process read it when splitting), nothing more
    assert wanted <= read < wanted + (256 << 10) < size // 2
    assert all(end - start < size for start, end in fetched)
    assert len(fetched) <= len(task.row_groups) + 2  # a request per row group (its two columns coalesced), the footer


@pytest.mark.parametrize("reader", READERS)
def test_the_preflight_peeks_at_a_parquet_object_not_its_whole_first_row_group(tmp_path, s3, s3_server, reader):
    """The first batch for the schema: the first pages of each column, not the row group (one here)."""
    from curate import preflight

    body = put_parquet(s3, "one/f.parquet", 4000, 4000)
    with FaultProxy(s3_server, rate=0) as proxy:
        options = json.dumps({"endpoint_url": proxy.url, **READERS[reader]})
        r = recipe.load(text=f"input: {{path: 's3://inp/one/f.parquet', batch_rows: 100, storage_options: {options}}}\n"
                             f"output: {{path: '{tmp_path / 'o'}'}}\nsteps: []\n")
        first, schema = preflight.first_schema(preflight.inputs(r), r)
    assert schema.names == ["text", "n", "_id"]
    read = sum(end - start for start, end in ranges(proxy, "one/f.parquet"))
    assert read < len(body) // 2


def test_a_run_on_threads_asks_the_store_for_each_footer_once(tmp_path, s3, s3_server):
    """A stage without operators runs its tasks on threads of the run process, where the footers
    the preflight read are still known: a task does not fetch its object's footer again."""
    sizes = {f"few/part-{i}.parquet": len(put_parquet(s3, f"few/part-{i}.parquet", 60 + i, 20)) for i in range(4)}
    with FaultProxy(s3_server, rate=0) as proxy:
        options = json.dumps({"endpoint_url": proxy.url})
        r = recipe.load(text=f"input: {{path: 's3://inp/few/', storage_options: {options}}}\n"
                             f"output: {{path: '{tmp_path / 'o'}'}}\nsteps: []\n")
        m = run(r, RunOptions(workers=2))
    assert m.rows_out == 60 + 61 + 62 + 63
    for key, size in sizes.items():
        # pyarrow asks for the footer as the object's last bytes (at most 64 KB of them)
        footers = [(start, end) for start, end in ranges(proxy, key) if end == size]
        assert len(footers) == 1, (key, footers)


def test_resume_refuses_an_object_changed_since_the_interrupted_run(tmp_path, s3):
    for i in range(2):
        s3.put_object(Bucket="inp", Key=f"c/part-{i}.jsonl", Body=b'{"id": 1, "text": "same size"}\n' * 20)
    out = tmp_path / "o"
    copy("s3://inp/c/*.jsonl", out, keep_work=True)
    (out / "manifest.json").unlink()  # as if killed before the end
    copy("s3://inp/c/*.jsonl", out, resume=True, keep_work=True)  # unchanged: resumes
    (out / "manifest.json").unlink()
    # the same size, other bytes: only the ETag tells (a copy in a store has no mtime of ours)
    s3.put_object(Bucket="inp", Key="c/part-1.jsonl", Body=b'{"id": 1, "text": "same SIZE"}\n' * 20)
    with pytest.raises(CurateError, match="the input files changed"):
        copy("s3://inp/c/*.jsonl", out, resume=True)


def test_a_missing_bucket_or_object_is_an_input_error_naming_the_uri(s3):
    for uri in ("s3://no-such-bucket/x/*.jsonl", "s3://no-such-bucket/x.jsonl", "s3://inp/nothing-here"):
        with pytest.raises(InputError, match=uri.replace("*", r"\*").replace(".", r"\.")):
            discover(uri)


def test_refused_credentials_or_no_endpoint_are_an_input_error_naming_the_uri(s3, monkeypatch):
    import moto.settings

    s3.put_object(Bucket="inp", Key="k/a.jsonl", Body=b'{"text": "a"}\n')
    with pytest.raises(InputError, match=r"s3://inp/k/a\.jsonl.*(refused|timed out|connect)"):
        discover("s3://inp/k/a.jsonl", storage_options={"endpoint_url": "http://127.0.0.1:9",
                                                       "retries": {"attempts": 1}})
    with monkeypatch.context() as patched, pytest.raises(InputError, match=r"s3://inp/k/a\.jsonl: access refused "
                                                                          r".*check the credentials"):
        patched.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # the server checks keys: ours are unknown
        discover("s3://inp/k/a.jsonl")


def test_storage_options_reach_the_store_but_never_the_manifest(tmp_path, s3, s3_server, monkeypatch):
    s3.put_object(Bucket="inp", Key="o/a.jsonl", Body=b'{"text": "hello world, this is a document"}\n' * 5)
    monkeypatch.setenv("MY_SECRET", "the-secret-value")
    text = (f"input:\n  path: s3://inp/o/a.jsonl\n  storage_options:\n    endpoint_url: {s3_server}\n"
            f"    secret: ${{MY_SECRET}}\n    key: literal-key-id\noutput: {{path: {tmp_path / 'o'}}}\nsteps: []\n")
    r = recipe.load(text=text)
    assert r.input.storage_options["secret"] == "the-secret-value"
    m = run(r, RunOptions(workers=1))
    written = (tmp_path / "o" / "manifest.json").read_text()
    assert m.rows_out == 5 and "the-secret-value" not in written and "literal-key-id" not in written
    shown = json.loads(written)["recipe"]["input"]["storage_options"]
    assert shown == {"endpoint_url": s3_server, "secret": "${MY_SECRET}", "key": "***"}
    other = recipe.load(text=text.replace("literal-key-id", "rotated-key-id"))
    assert other.fingerprint() == r.fingerprint()  # how to reach the input is not what it is


def test_lineage_lists_each_input_object_once_with_size_and_version(tmp_path, s3):
    hive_parquet(tmp_path / "hive")
    upload(s3, tmp_path / "hive", "hive")
    sources = discover("s3://inp/hive")
    objects = input_objects(split_parquet(sources, target_bytes=1000))
    assert [o["path"] for o in objects] == [s.path for s in sources] and len(objects) == 4
    assert all(o["bytes"] > 0 and o["version"].startswith("ETag=") for o in objects)
    assert json.loads(json.dumps(objects)) == objects
    m = copy("s3://inp/hive", tmp_path / "o")
    assert [e.model_dump(exclude_unset=True) for e in m.inputs] == objects  # the manifest's lineage
    local = input_objects(discover(str(tmp_path / "hive")))
    assert set(local[0]) == {"path", "bytes", "modified_ns"}


def test_run_directories_under_a_listed_prefix_are_left_out(tmp_path, s3):
    s3.put_object(Bucket="inp", Key="p/a.jsonl", Body=b'{"id": 1, "text": "a"}\n')
    out = tmp_path / "run"
    copy("s3://inp/p/a.jsonl", out)
    upload(s3, out, "p/run")  # a finished run copied under the input's prefix
    assert [s.name for s in discover("s3://inp/p")] == ["a.jsonl"]
    assert len(discover("s3://inp/p/run/data")) == len(list((out / "data").iterdir()))
    with pytest.raises(InputError, match="is a curate run directory"):
        discover("s3://inp/p/run")
    with pytest.raises(InputError, match=r"left out: the curate run directory s3://inp/p/run;"):
        discover("s3://inp/p/**/*.parquet")  # reached through a wildcard: not read back
    assert len(discover("s3://inp/p/*/data/*.parquet")) == len(list((out / "data").iterdir()))  # named: read


class _RangeHandler(SimpleHTTPRequestHandler):
    """http.server's files, with the Range requests every web server and CDN answers."""

    def send_head(self):
        spec = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not spec or not path.is_file():
            return super().send_head()
        data = path.read_bytes()
        start, _, end = spec.removeprefix("bytes=").partition("-")
        start, end = int(start), min(int(end) if end else len(data) - 1, len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("ETag", f'"{path.stat().st_mtime_ns}"')
        self.end_headers()
        return io.BytesIO(data[start:end + 1])

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("name", ["part-0000.jsonl.gz", "part.parquet"])
def test_an_http_file_gives_the_local_bytes(tmp_path, name):
    pytest.importorskip("aiohttp")
    served = tmp_path / "www"
    demo.generate(served, docs=400, files=1)
    if name.endswith(".parquet"):
        with pa.input_stream(str(next(served.glob("*.jsonl.gz"))), compression="gzip") as f:
            pq.write_table(pajson.read_json(f), served / name, row_group_size=100)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_RangeHandler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/{name}"
        [source] = discover(url)
        assert source.path == url and source.size == (served / name).stat().st_size
        quickstart(str(served / name), tmp_path / "local")
        quickstart(url, tmp_path / "http")
        assert digest(tmp_path / "http") == digest(tmp_path / "local")
    finally:
        server.shutdown()


def test_memory_uris_as_globs_directories_and_lists(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/mem/a/one.jsonl", b'{"text": "a"}\n{"text": "b"}\n')
    fs.pipe("/mem/a/_SUCCESS", b"")
    fs.pipe("/mem/b/two.csv", b"text\nc\n")
    try:
        assert [s.name for s in discover("memory://mem/a")] == ["one.jsonl"]
        both = discover(["memory://mem/a/*.jsonl", "memory://mem/b/two.csv"])
        assert [(s.name, s.format) for s in both] == [("one.jsonl", "jsonl"), ("two.csv", "csv")]
        texts = [t for s in both for b, _ in read_source(s) if b is not None for t in b.column("text").to_pylist()]
        assert texts == ["a", "b", "c"]
        with pytest.raises(InputError, match="no input files match memory://mem/a/\\*.parquet"):
            discover("memory://mem/a/*.parquet")
    finally:
        fs.rm("/mem", recursive=True)


def test_run_with_an_unreadable_store_exits_2_naming_the_uri_before_any_output(cli, tmp_path, s3):
    (tmp_path / "r.yaml").write_text("steps: []\n")
    for uri in ("s3://no-such-bucket/crawl/*.jsonl.gz", "s3://inp/crawl/*.jsonl.gz"):
        res = cli("run", tmp_path / "r.yaml", "--input", uri, "--output", tmp_path / "o", "-w", "1")
        assert res.exit_code == 2 and uri in res.output.replace("\n", "") and "Traceback" not in res.output
        assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("reader", READERS)
def test_compressed_jsonl_streams_from_the_store_in_blocks(tmp_path, s3, s3_server, monkeypatch, reader):
    import gzip
    import os

    from curate.io import store
    from curate.io.readers import file_schema, scan_schema

    from isal import igzip

    lines = b"".join(b'{"text": "%s"}\n' % os.urandom(300).hex().encode() for _ in range(16000))
    body = gzip.compress(lines, mtime=0)
    s3.put_object(Bucket="inp", Key="z/big.jsonl.gz", Body=body)
    monkeypatch.setattr(store, "STREAM_BLOCK", 64 << 10)
    with FaultProxy(s3_server, rate=0) as proxy:
        [source] = discover("s3://inp/z/big.jsonl.gz", storage_options={"endpoint_url": proxy.url, **READERS[reader]})
        assert file_schema(source)[0].names == ["text"]
        # the peek reads its first blocks (and the one asked for ahead), not the object
        assert sum(end - start for start, end in ranges(proxy, "z/big.jsonl.gz")) < len(body) // 4
        schema, _ = scan_schema(source)  # the preflight's whole read, which decides the input's schema
        proxy.log.clear()
        assert sum(b.num_rows for b, _ in read_source(source, schema=schema) if b is not None) == 16000
    fetched = [end - start for start, end in ranges(proxy, "z/big.jsonl.gz")]
    # all of it, once, piece by piece: a block at a time (s3fs: what ISA-L asks for at once, and a block ahead)
    assert sum(fetched) == len(body) and max(fetched) <= igzip.READ_BUFFER_SIZE + (64 << 10) < len(body) // 8


@pytest.mark.parametrize("reader", READERS)
def test_the_preflight_peeks_at_each_jsonl_object_in_small_requests(tmp_path, s3, s3_server, reader):
    """Every input file is peeked (32 at once) for its columns: a 64 KB peek in a stream's 8 MB
    blocks, the next fetched ahead, downloaded 16 MB of each file into the run process."""
    import gzip
    import os

    from curate.io.file_stream import PEEK_BLOCK
    from curate.io.readers import file_schema

    lines = b"".join(b'{"text": "%s"}\n' % os.urandom(300).hex().encode() for _ in range(16000))
    body = gzip.compress(lines, mtime=0)
    s3.put_object(Bucket="inp", Key="p/big.jsonl.gz", Body=body)
    with FaultProxy(s3_server, rate=0) as proxy:
        [source] = discover("s3://inp/p/big.jsonl.gz", storage_options={"endpoint_url": proxy.url, **READERS[reader]})
        assert file_schema(source)[0].names == ["text"]
    fetched = [end - start for start, end in ranges(proxy, "p/big.jsonl.gz")]
    assert max(fetched) <= max(PEEK_BLOCK, 1 << 20) and sum(fetched) <= 2 * max(PEEK_BLOCK, 1 << 20) < len(body) // 2


def test_hf_dataset_uris_give_the_local_bytes(tmp_path, monkeypatch):
    """hf://datasets/ORG/NAME/... through huggingface_hub's HfFileSystem, against a loopback
    stand-in for the Hub (hubkit): JSONL.gz and hive Parquet, listed and read by range."""
    pytest.importorskip("huggingface_hub")
    from tests.curate.io import hubkit

    repo = tmp_path / "repo"
    demo.generate(repo / "jsonl", docs=600, files=2)
    hive_parquet(repo / "hive")
    server = hubkit.serve(repo, "org/name")
    endpoint = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)  # the workers' huggingface_hub: never the real Hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    import huggingface_hub.constants  # read at its import: an earlier test's HF-cache read set offline mode

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    try:
        for inp, local, steps in (("hf://datasets/org/name/jsonl/*.jsonl.gz", f"{repo}/jsonl/*.jsonl.gz", QUICKSTART),
                                  ("hf://datasets/org/name/hive", str(repo / "hive"), "steps: []\n")):
            outs = []
            for where, path in (("hub", inp), ("local", local)):
                out = tmp_path / f"{where}-{len(outs)}-{inp.rsplit('/', 1)[-1].strip('*.')}"
                r = recipe.load(text=steps, input_path=path, output_path=str(out),
                                overrides=[f"input.storage_options={{endpoint: '{endpoint}'}}"])
                run(r, RunOptions(workers=2))
                outs.append(digest(out))
            assert outs[0] == outs[1] and outs[0]
        one = "hive/lang=de/part-0.parquet"
        [source] = discover(f"hf://datasets/org/name/{one}", storage_options={"endpoint": endpoint})
        assert source.version.startswith("blob_id=") and source.size == (repo / one).stat().st_size
    finally:
        server.shutdown()


@pytest.mark.parametrize("name", ["t.csv", "t.tsv", "t.csv.gz", "t.arrow", "t.jsonl.zst", "t.jsonl.bz2", "t.jsonl"])
def test_every_format_reads_from_s3_as_from_disk(tmp_path, s3, name):
    table = pa.table({"text": [f"row {i}, with a comma" for i in range(500)], "n": list(range(500))})
    path = tmp_path / name
    if ".csv" in name or ".tsv" in name:
        import pyarrow.csv as pcsv

        with pa.output_stream(str(path), compression="detect") as f:
            pcsv.write_csv(table, f, pcsv.WriteOptions(delimiter="\t" if ".tsv" in name else ","))
    elif name.endswith(".arrow"):
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table, max_chunksize=100)
    else:
        codec = {"zst": "zstd", "bz2": "bz2"}.get(name.rsplit(".", 1)[-1])
        with pa.output_stream(str(path), compression=codec) as f:
            f.write("".join(json.dumps(r) + "\n" for r in table.to_pylist()).encode())
    s3.put_object(Bucket="inp", Key=f"f/{name}", Body=path.read_bytes())
    from curate.io.readers import file_schema

    [local], [remote] = discover(str(path)), discover(f"s3://inp/f/{name}")
    assert file_schema(remote) == file_schema(local)
    rows = [[b for b, _ in read_source(s) if b is not None] for s in (local, remote)]
    assert pa.Table.from_batches(rows[1]).equals(pa.Table.from_batches(rows[0]))
    assert pa.Table.from_batches(rows[1]).num_rows == 500


def test_footers_in_a_store_are_counted_and_checked_before_the_run(tmp_path, s3):
    from curate import preflight
    from curate.progress import input_rows

    hive_parquet(tmp_path / "hive")
    upload(s3, tmp_path / "hive", "hive")
    sources = discover("s3://inp/hive")
    assert input_rows(sources, None) == 1200 and input_rows(split_parquet(sources, 1000), 7) == 7
    from curate.engine.tasks.plan import Task
    from curate.stage_progress import task_bytes

    assert task_bytes(Task(0, 0, tuple(sources))) == sum((tmp_path / "hive" / s.name).stat().st_size for s in sources)
    s3.put_object(Bucket="inp", Key="hive/lang=en/part-9.parquet", Body=b"PAR1 not really")
    s3.put_object(Bucket="inp", Key="hive/lang=zz/part-0.parquet", Body=b"PAR1 nor this")
    r = recipe.load(text="steps: []\n", input_path="s3://inp/hive", output_path=str(tmp_path / "o"))
    with pytest.raises(InputError, match=r"s3://inp/hive/lang=en/part-9\.parquet: not a readable Parquet"):
        preflight.check(r)  # the first damaged file in input order, of those read at once


@pytest.mark.parametrize("name, mode", [("shard.tar", "w"), ("shard.tar.gz", "w:gz")])
def test_webdataset_shards_stream_from_s3_as_from_disk(tmp_path, s3, name, mode):
    pytest.importorskip("PIL")
    from tests.curate.io import wds_shards

    members = [m for i in range(20) for m in wds_shards.sample(f"{i:04d}", caption=f"caption {i}")]
    path = wds_shards.write_tar(tmp_path / "wds" / name, members, mode)
    upload(s3, tmp_path / "wds", "wds")
    outs = []
    for inp in (str(path), f"s3://inp/wds/{name}"):
        outs.append(tmp_path / f"o{len(outs)}")
        copy(inp, outs[-1])
    assert digest(outs[1]) == digest(outs[0]) and pq.read_table(outs[1] / "data").num_rows == 20


def rows_object(name: str, word: str) -> bytes:
    """50 rows of text ("WORD 0", ...) as a Parquet or JSONL.gz file, by `name`."""
    import gzip

    if name.endswith(".jsonl.gz"):
        return gzip.compress(b"".join(b'{"text": "%s %d"}\n' % (word.encode(), i) for i in range(50)))
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": [f"{word} {i}" for i in range(50)]}), buf)
    return buf.getvalue()


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("name", ["f.parquet", "f.jsonl.gz"])
def test_a_task_opens_its_object_as_listed_and_refuses_a_changed_one(tmp_path, s3, s3_server, name, reader):
    """s3fs opens an object on what the listing gave (its size, and its ETag sent with every range
    request: If-Match); pyarrow's client asks the store (a HEAD) and compares the ETag, and asks
    once more after the last row. Either way an object changed since it was listed is an error."""
    s3.put_object(Bucket="inp", Key=f"sized/{name}", Body=rows_object(name, "row"))
    with FaultProxy(s3_server, rate=0) as proxy:
        [source] = discover(f"s3://inp/sized/{name}", storage_options={"endpoint_url": proxy.url, **READERS[reader]})
        schema, _ = scan_schema(source)  # the preflight's read, which decides the input's schema
        proxy.log.clear()
        assert sum(b.num_rows for b, _ in read_source(source, schema=schema) if b is not None) == 50
        methods = [m for m, path, _ in proxy.log if path.endswith(name)]
        assert methods.count("HEAD") == (2 if reader == "native" else 0) and set(methods) <= {"GET", "HEAD"}
        s3.put_object(Bucket="inp", Key=f"sized/{name}", Body=rows_object(name, "new row"))
        with pytest.raises(InputError, match=f"s3://inp/sized/{name}"):
            next(read_source(source))  # before any row of the other version


@pytest.mark.parametrize("name", ["f.parquet", "f.jsonl.gz"])
def test_an_object_changed_while_it_is_read_is_refused_after_its_last_row(tmp_path, s3, name):
    """pyarrow's client sends no If-Match: the ETag asked for again after the last row tells."""
    s3.put_object(Bucket="inp", Key=f"during/{name}", Body=rows_object(name, "row"))
    [source] = discover(f"s3://inp/during/{name}")
    assert native_s3.client(source.path, source.storage_options) is not None
    chunks = read_source(source, batch_rows=10)
    next(chunks)
    s3.put_object(Bucket="inp", Key=f"during/{name}", Body=rows_object(name, "new row"))
    with pytest.raises(InputError, match=f"s3://inp/during/{name}: the object changed since the input was listed"):
        list(chunks)
