"""A gzip stream decompressed by ISA-L gives zlib's bytes, member after member, whatever the read
sizes; damaged and cut streams fail as zlib's do (OSError, EOFError), so a reader names the file;
without isal, Arrow's zlib codec reads the same."""

import gzip
import io
import sys

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import InputError
from curate.io.gunzip import gunzip
from curate.io.readers import read_source
from curate.io.sources import discover

pytest.importorskip("isal")


@pytest.fixture(params=["isal", "zlib"])
def inflater(request, monkeypatch):
    """Each test with ISA-L and with Arrow's zlib codec (isal not importable)."""
    if request.param == "zlib":
        monkeypatch.setitem(sys.modules, "isal", None)
    return request.param


class _Raw(io.BytesIO):
    closes = 0

    def close(self):
        type(self).closes += 1
        super().close()


def _read(stream, size: int) -> bytes:
    out = []
    while chunk := stream.read(size):
        out.append(chunk)
    return b"".join(out)


@settings(max_examples=40, deadline=None)
@given(members=st.lists(st.binary(max_size=3000), min_size=1, max_size=4), size=st.integers(1, 5000),
       zlib=st.booleans())
@example(members=[b""], size=1, zlib=False)
@example(members=[b"a" * 100_000, b"", b"b"], size=1 << 20, zlib=False)
def test_every_member_is_read_with_zlibs_bytes_whatever_the_read_size(members, size, zlib):
    data = b"".join(gzip.compress(m, mtime=0) for m in members)
    with pytest.MonkeyPatch.context() as mp:
        if zlib:
            mp.setitem(sys.modules, "isal", None)
        with gunzip(io.BytesIO(data)) as stream:
            assert _read(stream, size) == gzip.decompress(data) == b"".join(members)


def test_closing_it_closes_the_stream_under_it(inflater):
    _Raw.closes = 0
    with gunzip(_Raw(gzip.compress(b"abc"))) as stream:
        assert stream.read(10) == b"abc"
    assert _Raw.closes == 1


def test_damaged_deflate_data_is_an_oserror_and_a_cut_stream_an_eoferror(inflater):
    data = bytearray(gzip.compress(b"x" * 5000 + bytes(range(256)) * 20, mtime=0))
    data[12] = 0xFF  # inside the first deflate block: an invalid block type
    with pytest.raises(OSError), gunzip(io.BytesIO(bytes(data))) as stream:
        _read(stream, 1 << 16)
    whole = gzip.compress(b"y" * 100_000, mtime=0)
    with pytest.raises((EOFError, OSError)), gunzip(io.BytesIO(whole[: len(whole) // 2])) as stream:
        _read(stream, 1 << 16)


def test_a_damaged_jsonl_gz_file_is_an_input_error_naming_it(tmp_path, inflater):
    good = b"".join(b'{"text": "row %d"}\n' % i for i in range(2000))
    data = bytearray(gzip.compress(good, mtime=0))
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.jsonl.gz").write_bytes(bytes(data))
    (tmp_path / "good.jsonl.gz").write_bytes(gzip.compress(good, mtime=0))
    [source] = discover(str(tmp_path / "bad.jsonl.gz"))
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz: cannot read as jsonl"):
        list(read_source(source))
    [source] = discover(str(tmp_path / "good.jsonl.gz"))
    got = pa.concat_arrays([b.column("text") for b, _ in read_source(source) if b is not None])
    assert got.to_pylist() == [f"row {i}" for i in range(2000)]
