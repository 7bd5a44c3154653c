"""A file's bytes as the readers take them: decompressed as its name says, streamed from a store by
range requests (never downloaded whole), in blocks of whole lines; and what is left of a compressed
file cut short, with the cut as a bad row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from curate.errors import InputError
from curate.io import store
from curate.io.bad_rows import BadRows
from curate.io.gunzip import gunzip
from curate.io.meter import ReadMeter
from curate.io.sources import COMPRESSIONS, Source

CHUNK_BYTES = 8 << 20  # what a JSONL or CSV reader parses at a time (of the decompressed text)

# Bytes a request of `file_schema`'s peek asks a store for. Its JSONL peek reads 64 KB of every
# input file, 32 at once: in a stream's 8 MB blocks, the next fetched ahead, that downloaded 16 MB
# a file, and the run process held 548-578 MB after peeking 69 JSONL.gz objects on moto (281 MB so).
PEEK_BLOCK = 1 << 18


def input_stream(source: Source, meter: ReadMeter | None = None, block: int | None = None) -> pa.NativeFile:
    """The file's bytes front to back, decompressed as its name says (.gz, .zst, .bz2); an
    object in a store is streamed by range requests of `block` bytes (the store's stream block
    by default), never downloaded whole first. `meter` follows the position in the file itself
    (before decompression)."""
    codec = COMPRESSIONS.get(Path(source.path).suffix.lower())
    if source.is_uri:
        return store.open_stream(source.path, source.storage_options, codec, source.size, source.version, meter, block)
    raw = pa.OSFile(source.path)
    if meter is not None:
        meter.follow(raw)
    if codec == "gzip":
        return gunzip(raw)
    return pa.input_stream(raw, compression=codec)


def arrow_batches(
    source: Source, meter: ReadMeter | None = None, block: int | None = None
) -> pa.ipc.RecordBatchStreamReader:
    """An Arrow stream file's batches: a local file mapped, not read; an object streamed (in
    requests of `block` bytes)."""
    if source.is_uri:
        return pa.ipc.open_stream(input_stream(source, meter, block))
    mapped = pa.memory_map(source.path)
    if meter is not None:
        meter.follow(mapped)
    return pa.ipc.open_stream(mapped)


@dataclass
class _Cut:
    """The end of a compressed file cut short: what was read of it before, and the error."""

    error: str


PIECE_BYTES = 1 << 16  # what a re-read of a file cut short decompresses at a time


def _blocks(source: Source, meter: ReadMeter | None, on_truncated: str) -> Iterator[bytes | _Cut]:
    """The file's (decompressed) bytes in blocks of CHUNK_BYTES. A compressed file cut short is
    an InputError that says so, or with on_truncated "keep", its bytes up to the cut (read again
    in small pieces, so that little is lost to the decompressor's last read) and then a _Cut."""
    done = 0
    try:
        with input_stream(source, meter) as stream:
            while block := stream.read(CHUNK_BYTES):
                done += len(block)
                yield block
        return
    except (OSError, EOFError) as e:
        # cut short: ISA-L's EOFError, Arrow's "Truncated compressed stream"; else damaged data
        cut = isinstance(e, EOFError) or "truncated" in str(e).lower()
        if COMPRESSIONS.get(Path(source.path).suffix.lower()) is None or not cut:
            raise
        error = f"{type(e).__name__}: {e}"
    if on_truncated != "keep":
        raise InputError(
            f"{source.path}: the compressed file is cut short (truncated after {done:,} bytes of its "
            f"text were read: {error}); set input.on_truncated: keep to keep the rows before the cut "
            f"(the cut goes to the trace), or replace the file"
        )
    with input_stream(source) as stream:
        skip = done  # given already, in the blocks before the cut
        try:
            while piece := stream.read(PIECE_BYTES):
                if skip >= len(piece):
                    skip -= len(piece)
                    continue
                yield piece[skip:]
                skip = 0
        except (OSError, EOFError):
            pass
    yield _Cut(error)


def line_blocks(
    source: Source, meter: ReadMeter | None, on_truncated: str
) -> Iterator[tuple[bytes, int, BadRows | None]]:
    """(whole lines, the line number of the first, the cut) of the file: blocks of about
    CHUNK_BYTES cut after a newline; at a cut (a truncated compressed file read on), the last
    piece of a line before it is a bad row of reason `truncated`."""
    rest, line_no = b"", 1
    for block in _blocks(source, meter, on_truncated):
        if isinstance(block, _Cut):
            bad = BadRows()
            bad.add(
                line_no + rest.count(b"\n"),
                rest[-200:],
                f"the file is cut short here ({block.error}): what followed is lost",
                reason="truncated",
            )
            yield b"", line_no, bad  # `rest` is the line the cut went through: it is in `bad`
            return
        data = rest + block
        end = data.rfind(b"\n") + 1
        if end == 0:
            rest = data
            continue
        rest = data[end:]
        yield data[:end], line_no, None
        line_no += data.count(b"\n", 0, end)
    if rest.strip():
        yield rest, line_no, None
