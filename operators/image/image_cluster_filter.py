"""image_cluster_filter: DataComp's image-based filter (mlfoundations/datacomp apply_filter.py,
`load_uids_with_image_filter`), optionally intersected with its CLIP-score filter.

1. Pool centroids: spherical k-means (faiss) of the pool's image embeddings, `k` clusters (the
   paper: 100,000) trained on a seeded sample of `train_rows`; or the `centroids` a user gives
   (an (k, d) .npy, such as centroids computed with the reference code).
2. Target clusters: every embedding of the user's reference set (`target_embeddings`: the
   paper's ImageNet-1k training images, embedded by the same model) goes to its nearest pool
   centroid (argmax of the dot product, centroids as they are); the distinct ids are the targets.
3. Per row, in the reference's order: with `fraction` / `threshold`, score >= the CLIP-score
   threshold (from a fraction of the whole pool, clip_score_select's rule); then the caption
   rules (datacomp_caption.py: English by `language_column`, more than one fastText token, more
   than 5 characters); then the row's image embedding goes to its nearest pool centroid, and the
   row stays when that centroid is a target.

The k-means and the threshold see every row that reaches the step (the whole pool when it
follows clip_score), and the per-row rules commute, so the kept set is the reference's. Trace
reasons: `clip_score_low`, `caption_rules`, `image_cluster_not_target` (detail: the cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import Field, model_validator

from curate.errors import CurateError
from curate.ops import SERIAL, FitState, Global, Parallel, Params, Verdict, reads_column
from curate.paths import local_path
from curate_operators.image.clip_score_select import threshold_from_fraction
from curate_operators.image.datacomp_caption import caption_failures
from curate_operators.prune import kmeans
from curate_operators.prune.embeddings import embedding_matrix, spill

PAPER_K = 100_000


class ImageClusterFilterParams(Params):
    target_embeddings: str = local_path(hub=False, description="The reference set's image embeddings (the paper: "
                                        "ImageNet-1k train, same model as the pool's): an (n, d) .npy, or Parquet "
                                        "with `target_column`.")
    target_column: str = Field("_embedding", description="Parquet target_embeddings: the embedding column.")
    embedding_column: str = reads_column("_embedding", "The pool's image embeddings (fixed_size_list<float>[d]), "
                                                       "e.g. clip_score's keep_embedding.")
    k: int = Field(PAPER_K, ge=1, description="Pool clusters (the paper: 100,000); capped at the pool's rows.")
    centroids: str | None = local_path(None, hub=False, description="Pool centroids as an (k, d) .npy instead "
                                       "of k-means (then k, niter and train_rows are unused).")
    niter: int = Field(20, ge=1, le=1000, description="k-means iterations.")
    train_rows: int | None = Field(None, ge=1, description="Rows k-means trains on (a seeded sample); default "
                                   "max(50000, 40 per cluster), at most all.")
    threads: int | None = Field(None, ge=1, description="faiss threads; default: the available cores.")
    caption_rules: bool = Field(True, description="DataComp's caption rules first: more than one fastText token "
                                "and more than 5 characters (and English, with language_column).")
    caption_column: str | None = Field(None, description="The caption; default: the recipe's input.text_column.")
    language_column: str | None = reads_column(None, "With caption_rules, keep only rows whose language here "
                                               "is `language` (a language_id step with no `languages` writes "
                                               "it; DataComp: fastText lid.176).")
    language: str = Field("en", description="The language language_column must hold.")
    score_column: str = Field("quality_clip_score", description="The CLIP score, with fraction or threshold.")
    fraction: float | None = Field(None, gt=0, le=1, description="Image-based ∩ CLIP score: keep score >= "
                                   "the threshold of this fraction of the whole pool (DataComp's rule).")
    threshold: float | None = Field(None, ge=-1, le=1, description="Or a fixed CLIP-score threshold.")

    @model_validator(mode="after")
    def _one_score_rule(self) -> "ImageClusterFilterParams":
        if self.fraction is not None and self.threshold is not None:
            raise ValueError("give at most one of fraction and threshold")
        return self


@dataclass
class ClusterTargets(FitState):
    """What the fit decided: each row's pool cluster (labels.npy, by _ord), the target clusters,
    and the CLIP-score threshold (None: no score rule)."""

    labels: str
    targets: np.ndarray
    threshold: float | None
    info: dict

    def files(self) -> list[str]:
        return [self.labels]

    def summary(self) -> dict:
        return self.info


def load_targets(path: str, column: str, dim: int, step: str) -> np.ndarray:
    """The reference set's (n, dim) embeddings from a .npy or a Parquet file."""
    try:
        if path.endswith(".npy"):
            x = np.load(path, allow_pickle=False)
        else:
            table = pq.read_table(path)
            if column not in table.column_names:
                raise CurateError(f"{step}: target_embeddings {path}: no column '{column}' (target_column); its "
                                  f"columns are: {', '.join(table.column_names)}")
            x = embedding_matrix(pa.RecordBatch.from_arrays([table.column(column).combine_chunks()], [column]),
                                 column, step)
    except (OSError, ValueError, pa.ArrowInvalid) as e:
        raise CurateError(f"{step}: target_embeddings {path}: cannot read it ({e})") from None
    if x.ndim != 2 or x.shape[1] != dim or not len(x):
        raise CurateError(f"{step}: target_embeddings {path}: need an (n, {dim}) array of n >= 1 embeddings "
                          f"like the pool's, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise CurateError(f"{step}: target_embeddings {path}: holds NaN or infinite values")
    return np.asarray(x, dtype=np.float32)


def load_centroids(path: str, dim: int, step: str) -> np.ndarray:
    try:
        c = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise CurateError(f"{step}: centroids {path}: cannot read it ({e})") from None
    if c.ndim != 2 or c.shape[1] != dim or not len(c) or not np.isfinite(c).all():
        raise CurateError(f"{step}: centroids {path}: need a finite (k, {dim}) array with k >= 1, "
                          f"got shape {c.shape}")
    return np.ascontiguousarray(c, dtype=np.float32)


class ImageClusterFilter(Global):
    """DataComp's image-based filter: keep rows whose k-means cluster is nearest to a reference embedding."""

    name = "image_cluster_filter"
    Params = ImageClusterFilterParams

    def computed_requires(self) -> tuple[str, ...]:
        p = self.params
        caption = (p.caption_column or self.text_column,) if p.caption_rules else ()
        score = (p.score_column,) if p.fraction is not None or p.threshold is not None else ()
        return caption + score

    @property
    def fit_columns(self) -> tuple[str, ...]:
        """The fit reads the embeddings and the score; the caption rules are per row, in apply."""
        p = self.params
        return (p.embedding_column,) + ((p.score_column,) if p.fraction is not None else ())

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> ClusterTargets:
        p = self.params
        scores: list[np.ndarray] = []

        def scored(stream):  # the scores of the whole pool, collected while the embeddings spill
            for batch in stream:
                if p.fraction is not None:
                    scores.append(pc.drop_null(batch.column(p.score_column)).to_numpy(zero_copy_only=False))
                yield batch

        store = spill(scored(batches), p.embedding_column, workdir, self.name)
        n = store.rows
        pooled = np.concatenate(scores).astype(np.float64) if scores else np.empty(0)
        threshold = p.threshold if p.fraction is None else (
            threshold_from_fraction(pooled, p.fraction) if len(pooled) else None)
        labels_path = workdir / "labels.npy"
        if n == 0:
            store.discard()
            np.save(labels_path, np.empty(0, np.int32))
            return ClusterTargets(str(labels_path), np.empty(0, np.int32), threshold, {"rows": 0})
        if p.centroids:
            centroids = load_centroids(p.centroids, store.dim, self.name)
            info = {"centroids": p.centroids}
        else:
            k = min(p.k, n)
            sample = kmeans.train_rows(n, k, p.train_rows)
            centroids = kmeans.train(store, k, niter=p.niter, seed=self.seed, sample=sample, threads=p.threads)
            info = {"train_rows": sample, "niter": p.niter}
        targets = load_targets(p.target_embeddings, p.target_column, store.dim, self.name)
        np.save(workdir / "centroids.npy", centroids)  # read by the assignment's pieces
        target_ids = np.unique(kmeans.assign(targets, centroids, threads=p.threads, unit_centroids=False))
        labels = kmeans.assign(store, workdir / "centroids.npy", threads=p.threads, parallel=parallel,
                               unit_centroids=False)
        store.discard()
        np.save(labels_path, labels)
        in_target = int(np.isin(labels, target_ids).sum())
        info = {"rows": n, "k": len(centroids), **info, "target_embeddings": len(targets),
                "target_clusters": len(target_ids), "rows_in_target_clusters": in_target,
                **({"clip_score_threshold": threshold} if threshold is not None else {})}
        return ClusterTargets(str(labels_path), target_ids, threshold, info)

    def apply(self, batch: pa.RecordBatch, state: ClusterTargets) -> Verdict:
        p = self.params
        n = batch.num_rows
        reasons = np.full(n, None, dtype=object)
        details = np.full(n, None, dtype=object)

        def fail(mask: np.ndarray, reason: str, detail) -> None:
            new = mask & (reasons == None)  # noqa: E711: the first rule a row fails names it (the reference's order)
            reasons[new] = reason
            details[new] = [detail(i) for i in np.flatnonzero(new)]

        if p.fraction is not None or p.threshold is not None:
            column, thr = batch.column(p.score_column), state.threshold
            s = column.to_numpy(zero_copy_only=False).astype(np.float64)
            valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
            # thr is None only when no row of the pool had a score: then none is valid either
            low = ~valid if thr is None else ~valid | ~(s >= thr)
            fail(low, "clip_score_low", lambda i: f"score {s[i]:.4f} < threshold {thr:.4f}" if valid[i] else "no score")
        if p.caption_rules:
            languages = batch.column(p.language_column) if p.language_column else None
            failed, why = caption_failures(batch.column(p.caption_column or self.text_column), languages, p.language)
            fail(failed, "caption_rules", why.__getitem__)
        labels = np.load(state.labels, mmap_mode="r")[batch.column("_ord").to_numpy()]
        fail(~np.isin(labels, state.targets), "image_cluster_not_target", lambda i: f"cluster {labels[i]} is no target")
        return Verdict(reasons == None, list(reasons), list(details))  # noqa: E711
