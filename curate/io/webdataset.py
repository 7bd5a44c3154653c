"""WebDataset tar shards (img2dataset's output layout) as rows, and rows back as tar members.

A shard is a tar (plain, or compressed: gzip, bz2, zstd; xz with `input.format: webdataset`)
whose members are grouped into samples by key: the member name up to the first dot of its base
name (`dir/000012.jpg` has key `dir/000012` and suffix `jpg`), consecutive members with the same
key forming one sample, as webdataset's own loader groups them. A sample becomes one row:
- `_key`: the key;
- `_shard` and `_image_member`: the tar (its path or URI, as the input names it) and the image's
  member in it (`000012.jpg`), so a later step that cannot decode the image can name both in the
  trace, even from a stage's staged shards, which no longer know the tar;
- `image`: the encoded bytes of the first of KEY.jpg, KEY.jpeg, KEY.png, KEY.webp (never decoded here);
- `caption`: KEY.txt as UTF-8 text (null when the sample has none);
- one column per field of KEY.json, in the order the fields first appear (`caption` among them
  takes its place there, its value from KEY.txt where the sample has one).
Other members (`.cls`, `.npy`, ...) are not read. A sample without an image, a member that is
not UTF-8 or not a JSON object, and the sample a truncated tar cuts off are malformed: they come
back as bad rows naming the shard, the member (and its position in the tar) and the problem.

The columns are the input's, decided from every sample of every shard before the run
(curate/io/input_schema.py): a field whose kinds differ between samples is carried as text; a
sample whose value cannot take the type of a field a step reads is malformed too, naming the
member, the field and both types.
"""

from __future__ import annotations

import io
import json
import tarfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa

from curate.io import input_schema, store

IMAGE_SUFFIXES = ("jpg", "jpeg", "png", "webp")
SHARD_COLUMN, MEMBER_COLUMN = "_shard", "_image_member"
ZSTD_SUFFIXES = (".zst", ".zstd")
# Errors a damaged or truncated (compressed) tar raises while it is read.
TAR_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, pa.ArrowInvalid)


@dataclass
class Sample:
    key: str
    first: int  # 1-based position of its first member in the tar
    members: dict[str, bytes] = field(default_factory=dict)  # suffix -> bytes
    names: list[str] = field(default_factory=list)


@dataclass
class Malformed:
    position: int  # 1-based position of the member in the tar
    members: str  # the member names concerned
    error: str


def split_name(name: str) -> tuple[str, str]:
    """(key, lower-cased suffix) of a member name, as webdataset splits them; suffix '' if none."""
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1 :].lower()


@contextmanager
def _open(path: str, storage_options: dict | None, meter=None) -> Iterator[tarfile.TarFile]:
    """The tar at `path` read as a stream; `meter` (a ReadMeter) follows the position in the file."""
    zstd = Path(path).suffix.lower() in ZSTD_SUFFIXES  # tarfile detects gzip, bz2 and xz itself, not zstd
    if store.is_uri(path):  # streamed from the store, never downloaded whole first
        stream = store.open_stream(path, storage_options, "zstd" if zstd else None, meter=meter)
    else:
        raw = pa.OSFile(path)
        if meter is not None:
            meter.follow(raw)
        stream = pa.input_stream(raw, compression="zstd") if zstd else raw
    with stream, tarfile.open(fileobj=stream, mode="r|" if zstd else "r|*") as tar:  # a tar closes no file it is given
        yield tar


def samples(path: str, storage_options: dict | None = None, meter=None) -> Iterator[Sample | Malformed]:
    """The samples of the tar at `path` (a file or a URI) in member order, and what is malformed in
    it; `meter` (a ReadMeter) follows how far into the file they are."""
    current: Sample | None = None
    position = 0
    last_name = None
    try:
        with _open(path, storage_options, meter) as tar:
            for member in tar:
                position += 1
                if not member.isfile():
                    continue
                key, suffix = split_name(member.name)
                if not suffix:  # belongs to no sample
                    yield Malformed(
                        position, member.name, f"member {member.name} has no suffix (KEY.jpg, KEY.txt, KEY.json, ...)"
                    )
                    continue
                if current is not None and key != current.key:
                    yield current
                    current = None
                if current is None:
                    current = Sample(key, position)
                current.names.append(member.name)
                last_name = member.name
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file (isfile above) always has its data
                data = extracted.read()
                if suffix in current.members:
                    yield Malformed(position, member.name, f"member {member.name} repeats the {suffix} of sample {key}")
                else:
                    current.members[suffix] = data
            ended = _properly_ended(tar)
    except TAR_ERRORS as e:
        where = f"member {last_name}" if last_name else "its first member"
        cut = current if current is not None else None
        yield Malformed(
            cut.first if cut else position,
            ", ".join(cut.names) if cut else "",
            f"truncated or damaged tar at {where}: {type(e).__name__}: {e}"
            + (f"; sample {cut.key} is lost" if cut else ""),
        )
        return
    if current is not None:
        if ended:
            yield current
        else:
            yield Malformed(
                current.first,
                ", ".join(current.names),
                f"truncated tar: it ends after member {last_name} without the end-of-archive "
                f"marker, so sample {current.key} may be incomplete",
            )


def _properly_ended(tar: tarfile.TarFile) -> bool:
    """Whether the archive ends with its end-of-archive marker: a whole zero block where tarfile
    stopped, and only zeros after it. tarfile's stream mode takes a partial or garbled header at
    a cut for the end of the archive; this tells them apart."""
    stream: Any = tar.fileobj  # tarfile's _Stream (stream mode): its `pos`, not in the typeshed protocol
    after_stop = stream.pos - tar.offset  # the bytes of the header tarfile tried to read
    zeros = True
    while chunk := stream.read(1 << 20):
        after_stop += len(chunk)
        zeros = zeros and not chunk.strip(b"\0")
    return after_stop >= tarfile.BLOCKSIZE and zeros


def sample_row(sample: Sample, shard: str) -> tuple[dict | None, str | None]:
    """(row, None) for a well-formed sample of the tar `shard`, else (None, the problem naming the member)."""
    suffix = next((s for s in IMAGE_SUFFIXES if s in sample.members), None)
    if suffix is None:
        return None, (
            f"sample {sample.key} has no image member ({', '.join(f'KEY.{s}' for s in IMAGE_SUFFIXES)}); "
            f"its members: {', '.join(sample.names)}"
        )
    row: dict = {"_key": sample.key, "image": sample.members[suffix]}
    meta: dict = {}
    if "json" in sample.members:
        try:
            meta = json.loads(sample.members["json"])
        except (ValueError, UnicodeDecodeError) as e:
            return None, f"member {sample.key}.json is not valid JSON: {e}"
        if not isinstance(meta, dict):
            return None, f"member {sample.key}.json holds a {type(meta).__name__}, not a JSON object"
    if "caption" not in meta:  # right after the image, unless the JSON places it (kept so for the round trip)
        row["caption"] = None
    row.update((k, v) for k, v in meta.items() if k not in ("_key", "image"))
    # the first member of that suffix is the one kept (a repeat is malformed); its name as in the tar (KEY.JPG)
    row[SHARD_COLUMN] = shard
    row[MEMBER_COLUMN] = next(n for n in sample.names if split_name(n)[1] == suffix)
    if "txt" in sample.members:
        try:
            row["caption"] = sample.members["txt"].decode("utf-8")
        except UnicodeDecodeError as e:
            return None, f"member {sample.key}.txt is not valid UTF-8 ({e.reason} at byte {e.start})"
    return row, None


def value_type(name: str, value) -> tuple[pa.DataType, str | None]:
    """The Arrow type of one sample's value of field `name` (the image is binary, `_key` and the
    caption text whatever they hold), and JSON where Arrow cannot type it (a list of mixed
    items): it is carried as JSON text."""
    if name == "image":
        return pa.binary(), None
    if name in ("_key", "caption"):
        return pa.string(), None
    try:
        return pa.array([value]).type, None
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.string(), input_schema.JSON


def file_schema(rows: list[dict]) -> pa.Schema:
    """The columns of `rows`, each field's type merged over every row (input_schema.py): a field
    null in all of them is text, one whose kinds differ is carried as text."""
    merged = input_schema.Merge()
    for row in rows:
        for name, value in row.items():
            merged.add_field(name, *value_type(name, value))
    return merged.schema()


def rows_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """`rows` in the columns of `schema` (mixed fields as their text); raises (pa.ArrowInvalid,
    TypeError) when a value does not fit."""
    arrays = []
    for f in schema:
        mode = input_schema.mixed(f)
        values = [r.get(f.name) for r in rows]
        arrays.append(pa.array([input_schema.as_text(v, mode) for v in values] if mode else values, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def misfit(row: dict, schema: pa.Schema) -> str | None:
    """Why `row` does not fit the input's columns, naming the member, the field and both types;
    or None."""
    unknown = [name for name in row if name not in schema.names]
    if unknown:
        return (
            f"field '{unknown[0]}' of {row['_key']}.json is not among the input's columns ({', '.join(schema.names)})"
        )
    for name, value in row.items():
        field_ = schema.field(name)
        if input_schema.mixed(field_) is None and (problem := input_schema.misfit(value, field_.type)):
            return f"member {row['_key']}.json: field '{name}' {problem}"
    return None


# Writing: rows back as members.

_MAGIC = ((b"\xff\xd8\xff", "jpg"), (b"\x89PNG\r\n\x1a\n", "png"), (b"GIF8", "gif"), (b"BM", "bmp"))


def image_suffix(data: bytes) -> str:
    """The member suffix of encoded image bytes, from their signature (`jpg` for JPEG, as
    img2dataset writes it); `img` when the format is not one of these."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return next((suffix for magic, suffix in _MAGIC if data.startswith(magic)), "img")


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    """One member with fixed metadata (mtime 0, owner 0, mode 644), so the same rows give the same bytes."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = len(data), 0, 0o644, 0, 0, "", ""
    tar.addfile(info, io.BytesIO(data))


def sample_members(row: dict, key: str) -> list[tuple[str, bytes]]:
    """The members of one output row: KEY.<image>, KEY.txt (caption), KEY.json (the other
    columns, img2dataset's `json.dumps(meta, indent=4)`)."""
    members = []
    image = row.get("image")
    if image is not None:
        members.append((f"{key}.{image_suffix(image)}", image))
    if row.get("caption") is not None:
        members.append((f"{key}.txt", row["caption"].encode("utf-8")))
    meta = {k: v for k, v in row.items() if k != "image" and not k.startswith("_")}
    members.append((f"{key}.json", json.dumps(meta, indent=4).encode("utf-8")))
    return members
