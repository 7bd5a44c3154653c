"""dataset_metrics: QDC of the dataset at this point of the recipe, into the manifest; removes nothing.

A Global step (it needs the whole dataset): `fit` takes a seeded sample of `sample` rows and
measures the lexical metrics on their text and, with `embedding_column`, the embedding ones
(metrics.py: distinct-1..4, compression ratio, self-BLEU, mean pairwise cosine distance, Vendi,
cluster entropy), and the mean, quantiles and histogram of every score column listed (over all
rows, from their values spilled to the fit's work directory: fixed memory however many rows).
Put one at the start of a recipe (after embed) and one at the end to see what the run did to
quality, diversity and complexity: the report shows them side by side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import text_array
from curate.ops import SERIAL, TEXT, Global, Parallel, Params, Value, Verdict, reads_column
from curate_operators.score import metrics
from curate_operators.score.sample import bottom_k
from curate_operators.score.scores import ScoreSummary


class DatasetMetricsParams(Params):
    embedding_column: str | None = reads_column(None, "Embeddings (e.g. _embedding from embed) for the "
                                                      "embedding metrics; null: lexical metrics only.")
    score_columns: list[str] = reads_column([], "Numeric columns (quality_*, complexity_*, diversity_*) "
                                                "to summarise over all rows.")
    sample: int = Field(10_000, ge=2, description="Rows (seeded sample) the text and embedding metrics use.")
    bleu_sample: int = Field(200, ge=2, description="Rows of that sample self-BLEU uses (cost grows as its square).")
    clusters: int = Field(20, ge=1, description="k of the k-means behind cluster entropy.")


class DatasetMetrics(Global):
    """Quality, diversity and complexity of the dataset at this step (manifest and report); keeps every row."""

    name = "dataset_metrics"
    Params = DatasetMetricsParams
    requires = (TEXT,)

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Value:
        p = self.params
        scores = ScoreSummary(p.score_columns, workdir)

        def observed():
            for batch in batches:
                scores.add(batch)
                text_array(batch, self.text_column, self.name)
                yield batch

        columns = [self.text_column, *([p.embedding_column] if p.embedding_column else [])]
        sample, rows = bottom_k(observed(), p.sample, self.seed, columns)
        texts = [t or "" for t in sample.column(self.text_column).to_pylist()]
        embeddings = None
        if p.embedding_column:
            from curate_operators.prune.embeddings import embedding_matrix

            embeddings = (embedding_matrix(sample.combine_chunks().to_batches()[0], p.embedding_column, self.name)
                          if sample.num_rows else np.zeros((0, 1), np.float32))
        out = {"rows": rows, "sample": sample.num_rows,
               **metrics.summarize(texts, embeddings, seed=self.seed, clusters=p.clusters, bleu_sample=p.bleu_sample)}
        if p.score_columns:
            out["scores"] = scores.result()
        return Value(facts=out)  # apply keeps every row: the fit's state is its summary alone

    def apply(self, batch: pa.RecordBatch, state: Value) -> Verdict:
        return Verdict(np.ones(batch.num_rows, bool))
