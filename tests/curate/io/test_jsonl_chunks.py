"""The JSONL reader parses a file in chunks cut at the last newline of each read: wherever the
cuts fall, it gives the same rows and names the same bad lines as one chunk holding the file.
(Rows of one set of fields: a file's schema is its first chunk's, so a field that first appears
later is a bad row or not depending on the chunk size, by design.)"""

import json

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import InputError
from curate.io import file_stream, readers
from curate.io.sources import Source

GOOD = st.builds(lambda n, text: json.dumps({"n": n, "text": text}).encode(),
                 st.integers(0, 10**6), st.text(max_size=12))
BAD = st.sampled_from([b'{"n": 1, "text": "open', b"\xff\xfe", b"[1, 2]", b'{"n": "not a number", "text": ""}'])
LINES = st.lists(st.one_of(GOOD, GOOD, GOOD, BAD, st.just(b"")), max_size=25)


def _read(path, chunk_bytes: int) -> tuple[list, list]:
    rows, bad = [], []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(file_stream, "CHUNK_BYTES", chunk_bytes)
        try:
            for batch, b in readers.read_source(Source(str(path), "jsonl", "a.jsonl")):
                if batch is not None:
                    rows += pa.Table.from_batches([batch]).drop_columns(["_id"]).to_pylist()
                if b is not None:
                    bad += list(zip(b.line, b.error))
        except InputError as e:  # no row read at all: the same error either way
            return [], [str(e)]
    return rows, bad


@settings(max_examples=60, deadline=None)
@given(lines=LINES, chunk_bytes=st.integers(1, 64), trailing_newline=st.booleans())
@example(lines=[b'{"n": 1, "text": "ab"}'] * 3, chunk_bytes=23, trailing_newline=True)  # a cut right after a newline
@example(lines=[b'{"n": 1, "text": "a long line, longer than a chunk"}', b"\xff"], chunk_bytes=4,
         trailing_newline=False)
@example(lines=[b"", b'{"n": 2, "text": ""}', b""], chunk_bytes=1, trailing_newline=True)
def test_chunk_cuts_change_nothing(tmp_path_factory, lines, chunk_bytes, trailing_newline):
    path = tmp_path_factory.mktemp("chunks") / "a.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if trailing_newline else b""))
    if not path.stat().st_size:
        return  # an empty file is an error before any chunk is read
    assert _read(path, chunk_bytes) == _read(path, 1 << 20)
