"""Run-level dataset metrics: a mergeable summary of the rows a run read (input) and wrote (output).

Each task summarises its rows as they pass through it (no extra pass over the data); the runner
merges the tasks' summaries and measures the merged one for the manifest. Merging is exact and
order-free, so the figures are the same whatever the number of tasks or workers:

- distinct-n (n = 1..4) over all rows: exact n-gram totals, and the number of distinct n-grams
  from a KMV sketch: the k smallest distinct 64-bit hashes of the n-grams (the union of two
  sketches keeps the k smallest of both, which is the sketch of the union). Up to k distinct
  n-grams the count is exact; above, the estimate (k - 1) / u_k (u_k the k-th smallest hash as a
  fraction of 2**64) is unbiased with a relative standard error of at most 1 / sqrt(k - 2)
  (Beyer et al., "On synopses for distinct-value estimation", 2007): 1.6% at k = 4096.
- a seeded sample: the `sample` rows whose _id hashes (seeded by the recipe's seed) are smallest
  (bottom-k). A row's place in it depends on its _id alone, so the samples of input and output
  are coordinated: a sampled input row that the run keeps is in the output's sample too. The
  sample is measured with metrics.summarize: compression ratio, self-BLEU (on `bleu_sample` of
  it), and with an embedding column, mean pairwise cosine distance, Vendi and cluster entropy.
"""

from __future__ import annotations

import io
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.columns import text_array
from curate.observers import RunObserver
from curate_operators.score import metrics

NGRAMS = (1, 2, 3, 4)
_WHERE = "metrics"  # how errors name this feature: the recipe's `metrics:` section


def mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: n-gram hashes are polynomial in their words' hashes, and KMV needs
    hashes that look uniform over the distinct n-grams."""
    z = np.array(h, np.uint64)  # a copy, changed in place
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def smallest_distinct(values: np.ndarray, k: int) -> np.ndarray:
    """The k smallest distinct values, sorted. Hashes are uniform below their largest, so about
    4k of them lie below 4k/n of it: only those are sorted (further, where values repeat)."""
    if len(values) > 4 * k:
        top = float(values.max())
        share = 4.0 * k / len(values)
        while share < 1.0:
            low = np.unique(values[values <= np.uint64(top * share)])
            if len(low) >= k:  # every value under the cut is there: these are the k smallest
                return low[:k]
            share *= 4
    return np.unique(values)[:k]


class Sketch:
    """KMV (k minimum values) sketch of a set of 64-bit hashes: a distinct count that merges."""

    def __init__(self, k: int):
        self.k = k
        self.values = np.zeros(0, np.uint64)  # sorted, distinct, at most k

    def add(self, hashes: np.ndarray) -> None:
        self._keep(mix(hashes))

    def merge(self, other: "Sketch") -> None:
        self._keep(other.values)

    def _keep(self, mixed: np.ndarray) -> None:
        if len(self.values) == self.k:  # full: only values below the k-th can enter
            mixed = mixed[mixed < self.values[-1]]
        if len(mixed):
            self.values = smallest_distinct(np.concatenate([self.values, mixed]), self.k)

    def estimate(self) -> float:
        if len(self.values) < self.k:
            return float(len(self.values))  # every distinct hash is here: exact
        return (self.k - 1) / ((float(self.values[-1]) + 1.0) / 2.0 ** 64)


class Side:
    """The summary of one side (input or output) of a run, or of a part of it."""

    def __init__(self, *, sample: int, sketch: int, seed: int, text_column: str, embedding_column: str):
        self.size = sample
        self.seed = seed % 2**64  # a recipe's seed may be negative; the hash and the generator take unsigned ones
        self.text_column, self.embedding_column = text_column, embedding_column
        self.rows = 0
        self.totals = {n: 0 for n in NGRAMS}
        self.sketches = {n: Sketch(sketch) for n in NGRAMS}
        self.sample: pa.Table | None = None  # _key, _id, and the text and embedding columns where there
        self.cpu_seconds = 0.0  # CPU, not wall: workers share cores

    @classmethod
    def of(cls, recipe) -> "Side":
        """An empty side with the settings of the recipe's `metrics:` section."""
        spec = recipe.metrics
        return cls(sample=spec.sample, sketch=spec.sketch, seed=recipe.seed, text_column=recipe.input.text_column,
                   embedding_column=spec.embedding_column)

    def observe(self, batch: pa.RecordBatch) -> None:
        started = time.process_time()
        self.rows += batch.num_rows
        names = batch.schema.names
        # a text column read as all-null has type null in that batch: no words, not an error
        if self.text_column in names and not pa.types.is_null(batch.schema.field(self.text_column).type):
            words = metrics.words_of(text_array(batch, self.text_column, _WHERE))
            for n in NGRAMS:
                hashes = metrics.word_ngrams(words, n)
                self.totals[n] += len(hashes)
                self.sketches[n].add(hashes)
        import polars as pl  # here, not at the top: every run process imports this module (an observer)

        keys = pl.Series(batch.column("_id")).hash(self.seed).to_numpy()
        if self.sample is not None and self.sample.num_rows >= self.size:
            inside = keys <= self.sample.column("_key")[-1].as_py()  # only these can enter the sample
            batch, keys = batch.filter(pa.array(inside)), keys[inside]
        if batch.num_rows:
            kept = [c for c in ("_id", self.text_column, self.embedding_column) if c in names]
            part = pa.Table.from_batches([batch.select(kept)]).add_column(0, "_key", pa.array(keys, pa.uint64()))
            self._sample_from(part)
        self.cpu_seconds += time.process_time() - started

    def _sample_from(self, part: pa.Table) -> None:
        table = part if self.sample is None else pa.concat_tables([self.sample, part], promote_options="permissive")
        order = [("_key", "ascending"), ("_id", "ascending")]  # ties (repeated _ids): by text, for determinism
        order += [(self.text_column, "ascending")] if self.text_column in table.column_names else []
        self.sample = table.take(pc.sort_indices(table, order)[:self.size])  # copies only the rows kept

    def merge(self, other: "Side") -> None:
        self.rows += other.rows
        self.cpu_seconds += other.cpu_seconds
        for n in NGRAMS:
            self.totals[n] += other.totals[n]
            self.sketches[n].merge(other.sketches[n])
        if other.sample is not None and other.sample.num_rows:
            self._sample_from(other.sample)

    def measure(self, *, clusters: int, bleu_sample: int) -> dict:
        """The side's figures, JSON-able: rows, whole-data distinct-n, and the sample's metrics."""
        out: dict = {"rows": self.rows}
        sample = self.sample if self.sample is not None else pa.table({"_id": pa.array([], pa.string())})
        texts = None
        if self.text_column in sample.column_names:
            for n in NGRAMS:
                out[f"distinct_{n}"] = round(self.sketches[n].estimate() / self.totals[n], 6) if self.totals[n] else 0.0
            out["ngrams"] = {str(n): self.totals[n] for n in NGRAMS}
            out["distinct_ngrams"] = {str(n): round(self.sketches[n].estimate()) for n in NGRAMS}
            texts = [t or "" for t in sample.column(self.text_column).to_pylist()]
        embeddings = None
        if self.embedding_column in sample.column_names and sample.num_rows:
            from curate_operators.prune.embeddings import embedding_matrix

            batch = sample.select([self.embedding_column]).combine_chunks().to_batches()[0]
            embeddings = embedding_matrix(batch, self.embedding_column, _WHERE)
        measured = metrics.summarize(texts, embeddings, seed=self.seed, clusters=clusters, bleu_sample=bleu_sample,
                                     distinct=False)
        measured["sample"] = measured.pop("rows_measured", sample.num_rows)
        return {**out, **measured}

    def __getstate__(self) -> dict:
        """Pickled into the task's metrics file: the sample as compressed Arrow IPC."""
        state = dict(self.__dict__)
        if self.sample is not None:
            sink = io.BytesIO()
            with pa.ipc.new_stream(sink, self.sample.schema,
                                   options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
                writer.write_table(self.sample)
            state["sample"] = sink.getvalue()
        return state

    def __setstate__(self, state: dict) -> None:
        if state["sample"] is not None:
            state["sample"] = pa.ipc.open_stream(state["sample"]).read_all()
        self.__dict__.update(state)


def measure(side: Side, spec) -> tuple[dict, float]:
    """A merged side's figures, and the CPU seconds spent on it (in its tasks and here); the
    runner measures both sides at once in its workers."""
    started = time.process_time()
    figures = side.measure(clusters=spec.clusters, bleu_sample=spec.bleu_sample)
    return figures, side.cpu_seconds + time.process_time() - started


def manifest_entry(measured: dict[str, tuple[dict, float]], spec) -> dict:
    """The manifest's `dataset_metrics`: each side's figures, the settings, the CPU seconds."""
    out: dict = {name: figures for name, (figures, _) in measured.items()}
    out["settings"] = spec.model_dump()
    out["cpu_seconds"] = round(sum(seconds for _, seconds in measured.values()), 3)
    return out


class DatasetMetrics(RunObserver):
    """The recipe's `metrics:`: QDC metrics of the run's input and output, as the tasks see them
    (registered under the `curate.observers` entry points)."""

    key = "dataset_metrics"

    def __init__(self, recipe):
        self.recipe = recipe

    @classmethod
    def for_recipe(cls, recipe) -> "DatasetMetrics | None":
        return cls(recipe) if recipe.metrics is not None else None

    def summary(self, side: str) -> Side:
        return Side.of(self.recipe)

    def finish(self, merged: dict[str, Side], map) -> dict:
        """Both sides measured at once, in the engine's workers."""
        measured = map(measure, list(merged.values()), [self.recipe.metrics] * len(merged))
        return manifest_entry(dict(zip(merged, measured)), self.recipe.metrics)
