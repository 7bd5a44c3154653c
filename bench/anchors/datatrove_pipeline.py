"""datatrove's equivalent of curate's gopher_quality + exact_dedup; run with bench/.venvs/datatrove/bin/python.

usage: anchors/datatrove_pipeline.py INPUT_DIR WORK_DIR WORKERS

The pipeline datatrove's own examples use for filtering then exact dedup, on LocalPipelineExecutor:
  1. JsonlReader -> GopherRepetitionFilter -> GopherQualityFilter -> JsonlWriter (kept rows, uncompressed)
     -> ExactDedupSignature          (WORKERS tasks on WORKERS processes)
  2. ExactFindDedups                 (1 task: merges the sorted signatures)
  3. JsonlReader(kept rows) -> ExactDedupFilter -> ParquetWriter(zstd)   (WORKERS tasks)
Filters use their defaults (the Gopher paper's thresholds); the English word tokenizer is datatrove's
default for "en", spacy.blank("en") (rule-based, no model download). Prints one JSON line: rows kept.
"""

import json
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.exact_dedup import (ExactDedupConfig, ExactDedupFilter, ExactDedupSignature,
                                                  ExactFindDedups)
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter, ParquetWriter


def text_of(doc: Document) -> str:  # the return annotation tells datatrove to hash a str
    return doc.text


# The kept rows as curate writes them; an explicit schema because `planted` is null in whole batches.
SCHEMA = pa.schema([(name, pa.string()) for name in ("id", "text", "url", "source", "planted")])


def as_row(writer, doc: Document) -> dict:
    return {"id": doc.id, "text": doc.text, **{k: doc.metadata.get(k) for k in ("url", "source", "planted")}}


def main(input_dir: str, work_dir: str, workers: int) -> None:
    work = Path(work_dir)
    shutil.rmtree(work, ignore_errors=True)
    config = ExactDedupConfig(content_getter=text_of)
    filtering = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(input_dir, glob_pattern="*.jsonl.gz", text_key="text", id_key="id"),
            GopherRepetitionFilter(),
            GopherQualityFilter(),
            JsonlWriter(str(work / "filtered"), compression=None),
            ExactDedupSignature(str(work / "sigs"), config=config),
        ],
        tasks=workers, workers=workers, logging_dir=str(work / "logs/1"))
    finding = LocalPipelineExecutor(
        pipeline=[ExactFindDedups(str(work / "sigs"), str(work / "dups"), config=config)],
        tasks=1, workers=1, logging_dir=str(work / "logs/2"), depends=filtering)
    dedup = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(str(work / "filtered"), text_key="text", id_key="id"),
            ExactDedupFilter(str(work / "dups"), config=config),
            ParquetWriter(str(work / "out"), compression="zstd", adapter=as_row, schema=SCHEMA),
        ],
        tasks=workers, workers=workers, logging_dir=str(work / "logs/3"), depends=finding)
    start = time.perf_counter()
    dedup.run()
    seconds = time.perf_counter() - start
    after_filters = sum(1 for p in (work / "filtered").glob("*.jsonl") for _ in open(p, "rb"))
    kept = sum(pq.ParquetFile(p).metadata.num_rows for p in (work / "out").glob("*.parquet"))
    print(json.dumps({"after_filters": after_filters, "kept": kept, "seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
