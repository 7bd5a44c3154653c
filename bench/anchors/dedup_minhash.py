"""Run a MinHash anchor on a Parquet corpus (id, text, kind, source_id); print JSON {seconds, removed, clusters}.

`removed`: ids of the documents it removed; `clusters` (datatrove only): {id: cluster} of the documents
in a duplicate cluster, kept or removed (its cluster stage's save_cluster_id, read back by the filter's
load_cluster_ids, as curate's trace names the kept member of each removed document's cluster).

Runs inside bench/.venvs/dedup (bench/anchors/setup_dedup.sh):

    bench/.venvs/dedup/bin/python bench/anchors/dedup_minhash.py datatrove DATA WORK --workers 2
    bench/.venvs/dedup/bin/python bench/anchors/dedup_minhash.py datatrove-defaults DATA WORK --workers 2
    bench/.venvs/dedup/bin/python bench/anchors/dedup_minhash.py text-dedup DATA WORK --workers 2

datatrove: its documented 4-stage MinHash pipeline (signatures, buckets, cluster, filter) on
LocalPipelineExecutor, reading the same Parquet files as curate (ParquetReader) and writing the kept
documents and the removed ones as Parquet, zstd (ParquetWriter; the removed ones through the filter's
exclusion_writer), as `curate run` writes its data and its trace of removed rows.

- `datatrove`: the same shingles, bands and rows as curate's minhash_dedup defaults
  (operators/dedup/minhash_dedup.py, operators/dedup/shingles.py): word 5-grams of the text after
  Unicode NFKC and lowercasing, words = runs of \\w (punctuation dropped, whitespace of any kind
  separates), 14 bands x 8 rows. datatrove takes a custom WordTokenizer in place of a language
  (load_word_tokenizer accepts one "for custom tokenizers"); its text normalisation is set to
  lowercase + whitespace only, so the tokenizer does the rest as curate does. The hash functions
  differ (datatrove: xxhash of the joined n-gram, 64-bit; curate: its own 52-bit n-gram hash), which
  changes which pairs a given run's random permutations catch, not the algorithm. Remaining
  difference: a document with fewer than 5 words gets no shingle in datatrove (it is never removed),
  one shingle of all its words in curate.
- `datatrove-defaults`: MinhashConfig() and the default English tokenizer (spaCy blank "en"), its
  default normalisation (also numbers -> 0, punctuation removed, diacritics stripped).
- `text-dedup`: `python -m text_dedup.minhash` with its defaults (5-grams, 250 permutations, threshold
  0.7 -> bands/rows from its optimal_param), reading the Parquet files through Hugging Face datasets.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

WORD = re.compile(r"\w+")


def curate_word_tokenizer():
    """A datatrove WordTokenizer that splits words as curate's shingles do (NFKC, runs of \\w)."""
    from datatrove.utils.word_tokenizers import WordTokenizer

    class CurateWords(WordTokenizer):
        def word_tokenize(self, text: str) -> list[str]:
            return WORD.findall(unicodedata.normalize("NFKC", text))

        def sent_tokenize(self, text: str) -> list[str]:
            return [text]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            return [m.span() for m in WORD.finditer(text)]

    return CurateWords("en")


def all_ids(data: Path) -> list[str]:
    import pyarrow.dataset as ds

    return ds.dataset(str(data), format="parquet").to_table(columns=["id"]).column("id").to_pylist()


def run_datatrove(data: Path, work: Path, workers: int, matched: bool, bands: int, rows: int, ngram: int) -> set[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                  MinhashDedupFilter, MinhashDedupSignature)
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter
    from datatrove.utils.text import TextNormConfig

    if matched:
        norm = TextNormConfig(lowercase=True, norm_whitespace=True, remove_punctuation=False,
                              norm_unicode_diacritics=False, norm_numbers=False, norm_weekdays=False,
                              norm_monthnames=False)
        config = MinhashConfig(n_grams=ngram, num_buckets=bands, hashes_per_bucket=rows, norm_config=norm)
        language = curate_word_tokenizer()
    else:
        config, language = MinhashConfig(), "en"
    tasks = len(glob.glob(str(data / "*.parquet")))
    schema = pa.schema([(c, pa.string()) for c in ("id", "text", "kind", "source_id")] + [("cluster", pa.int64())])

    def as_row(writer, doc) -> dict:
        return {"id": doc.id, "text": doc.text, "kind": doc.metadata.get("kind"),
                "source_id": doc.metadata.get("source_id"), "cluster": doc.metadata.get("minhash_cluster_id", -1)}

    def reader():
        return ParquetReader(str(data), text_key="text", id_key="id", glob_pattern="*.parquet")

    def writer(folder):
        return ParquetWriter(str(work / folder), compression="zstd", adapter=as_row, schema=schema)

    stages = [
        LocalPipelineExecutor(pipeline=[reader(), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config,
                                                                        language=language)],
                              tasks=tasks, workers=workers, logging_dir=str(work / "logs/1")),
        LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=str(work / "sigs"),
                                                            output_folder=str(work / "buckets"), config=config)],
                              tasks=config.num_buckets, workers=workers, logging_dir=str(work / "logs/2")),
        LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=str(work / "buckets"),
                                                            output_folder=str(work / "remove"), config=config,
                                                            save_cluster_id=True)],
                              tasks=1, workers=1, logging_dir=str(work / "logs/3")),
        LocalPipelineExecutor(pipeline=[reader(), MinhashDedupFilter(input_folder=str(work / "remove"),
                                                                     exclusion_writer=writer("removed"),
                                                                     load_cluster_ids=True),
                                        writer("kept")],
                              tasks=tasks, workers=workers, logging_dir=str(work / "logs/4")),
    ]
    for stage in stages:
        stage.run()
    removed, clusters = set(), {}
    for folder in ("removed", "kept"):
        for f in glob.glob(str(work / folder / "*.parquet")):
            t = pq.read_table(f, columns=["id", "cluster"])
            ids = t.column("id").to_pylist()
            if folder == "removed":
                removed.update(ids)
            clusters.update((i, c) for i, c in zip(ids, t.column("cluster").to_pylist()) if c is not None and c >= 0)
    return removed, clusters


def run_text_dedup(data: Path, work: Path, workers: int) -> set[str]:
    out = work / "out"
    subprocess.run(
        [sys.executable, "-m", "text_dedup.minhash", "--path", "parquet", "--data_files", str(data / "*.parquet"),
         "--split", "train", "--cache_dir", str(work / "cache"), "--column", "text", "--output", str(out),
         "--num_proc", str(workers)],
        check=True, stdout=subprocess.DEVNULL,
    )
    from datasets import load_from_disk

    kept = set(load_from_disk(str(out))["id"])
    return set(all_ids(data)) - kept, None


def check_tokens(data: Path, docs: int) -> dict:
    """On the first `docs` documents: are the words datatrove shingles (the `datatrove` setting) the words
    curate shingles? Imports curate's operators/dedup/shingles.py (this venv has its dependencies)."""
    import polars as pl
    import pyarrow.dataset as ds
    from datatrove.utils.text import TextNormConfig, simplify_text

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from curate_operators.dedup.shingles import ShingleSpec, tokens

    texts = ds.dataset(str(data), format="parquet").head(docs, columns=["text"]).column("text").to_pylist()
    ours = tokens(pl.Series(texts), ShingleSpec()).to_list()
    norm = TextNormConfig(lowercase=True, norm_whitespace=True, remove_punctuation=False, norm_unicode_diacritics=False,
                          norm_numbers=False, norm_weekdays=False, norm_monthnames=False)
    tok = curate_word_tokenizer()
    theirs = [tok.word_tokenize(simplify_text(t, norm)) for t in texts]
    return {"docs": len(texts), "same": sum(a == b for a, b in zip(ours, theirs))}


def main() -> None:
    if sys.argv[1:2] == ["check-tokens"]:
        return print(json.dumps(check_tokens(Path(sys.argv[2]), int(sys.argv[3]))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tool", choices=["datatrove", "datatrove-defaults", "text-dedup"])
    ap.add_argument("data", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bands", type=int, default=14)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--ngram", type=int, default=5)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    started = time.perf_counter()
    if args.tool == "text-dedup":
        removed, clustered = run_text_dedup(args.data, args.work, args.workers)
    else:
        removed, clustered = run_datatrove(args.data, args.work, args.workers, args.tool == "datatrove", args.bands, args.rows,
                                args.ngram)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "removed": sorted(removed), "clusters": clustered}))


if __name__ == "__main__":
    main()
