"""datatrove reading objects from S3 and writing their rows as local Parquet; run with
bench/.venvs/datatrove/bin/python (s3fs installed there by anchors/setup.sh).

usage: anchors/datatrove_read.py FORMAT URI OUT_DIR WORKERS

FORMAT parquet or jsonl. The pipeline datatrove's examples use to read a bucket, on
LocalPipelineExecutor with WORKERS tasks on WORKERS processes: ParquetReader (or JsonlReader) of
URI through fsspec/s3fs (the endpoint from the environment: AWS_ENDPOINT_URL,
FSSPEC_S3_ENDPOINT_URL) -> ParquetWriter(zstd) of the rows as curate writes them. Prints one JSON
line: the rows written.
"""

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.writers import ParquetWriter

# The demo corpus's columns; explicit because `planted` is null in whole batches.
SCHEMA = pa.schema([(name, pa.string()) for name in ("id", "text", "url", "source", "planted")])


def as_row(writer, doc: Document) -> dict:
    return {"id": doc.id, "text": doc.text, **{k: doc.metadata.get(k) for k in ("url", "source", "planted")}}


def main(fmt: str, uri: str, out_dir: str, workers: int) -> None:
    out = Path(out_dir)
    shutil.rmtree(out, ignore_errors=True)
    reader = (ParquetReader(uri, glob_pattern="*.parquet", text_key="text", id_key="id") if fmt == "parquet"
              else JsonlReader(uri, glob_pattern="*.jsonl.gz", text_key="text", id_key="id"))
    LocalPipelineExecutor(
        pipeline=[reader, ParquetWriter(str(out / "data"), compression="zstd", adapter=as_row, schema=SCHEMA)],
        tasks=workers, workers=workers, logging_dir=str(out / "logs")).run()
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "data").glob("*.parquet"))
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
