"""Dataset-level QDC metrics (of a sample of rows): lexical and embedding diversity.

- distinct_n: unique n-grams / total n-grams over all texts (words are str.split() tokens;
  n-grams do not cross texts); 0 when there is no n-gram.
- compression_ratio: UTF-8 bytes / gzip bytes of the texts joined by newlines (repetitive
  corpora compress well: higher is less diverse).
- mean_pairwise_distance: mean over pairs i != j of 1 - cos(e_i, e_j), from the sum of the unit
  vectors (|sum e|^2 = n + sum_{i!=j} cos), O(n d).
- vendi: exp(-sum lambda log lambda), lambda the eigenvalues of K/n, K_ij = cos(e_i, e_j),
  computed from the d x d matrix X^T X / n (same non-zero eigenvalues: the Gram trick).
- cluster_entropy: entropy (nats) of the k-means cluster sizes, and that / log k.
- self_bleu: mean over the texts of sacrebleu's sentence BLEU of each against all the others.
"""

from __future__ import annotations

import gzip

import numpy as np

_P = np.uint64(0x9E3779B97F4A7C15)


def distinct_n(texts: list[str], n: int) -> float:
    """Words and n-grams are compared by 64-bit hash, as in gopher_metrics (collisions ~2**-64)."""
    import polars as pl  # here, not at the top: every run imports this module (run_metrics is an observer)

    key = ngram_hashes(texts, n)
    return float(pl.Series(key, dtype=pl.UInt64).n_unique() / len(key)) if len(key) else 0.0


def ngram_hashes(texts, n: int) -> np.ndarray:
    """A 64-bit hash of every word n-gram of `texts` (strings: a list, or an Arrow or polars
    column), n-grams not crossing texts, in order."""
    return word_ngrams(words_of(texts), n)


def words_of(texts) -> tuple[np.ndarray, np.ndarray]:
    """(text index, hash) of every word of `texts` (gopher_metrics' split); nulls have none."""
    import polars as pl

    from curate_operators.filters.gopher_metrics import word_hashes

    return word_hashes(pl.Series(texts, dtype=pl.String).fill_null(""))


def word_ngrams(words: tuple[np.ndarray, np.ndarray], n: int) -> np.ndarray:
    doc, hashes = words
    m = len(doc) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64)
    inside = doc[:m] == doc[n - 1:]
    key = hashes[:m].copy()
    for i in range(1, n):  # in place: no temporary arrays
        key *= _P
        key += hashes[i:i + m]
    return key[inside]


def compression_ratio(texts: list[str]) -> float:
    raw = "\n".join(t or "" for t in texts).encode()
    return len(raw) / len(gzip.compress(raw, compresslevel=9, mtime=0)) if raw else 0.0


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def mean_pairwise_distance(x: np.ndarray) -> float:
    x = unit(x)
    n = len(x)
    if n < 2:
        return 0.0
    s = x.sum(axis=0)
    same = float((x * x).sum())
    return 1.0 - (float(s @ s) - same) / (n * (n - 1))


def vendi(x: np.ndarray) -> float:
    x = unit(x)
    n = len(x)
    if n == 0:
        return 0.0
    w = np.linalg.eigvalsh(x.T @ x / n) if x.shape[1] < n else np.linalg.eigvalsh(x @ x.T / n)
    w = w[w > 0]
    return float(np.exp(-(w * np.log(w)).sum()))


def cluster_entropy(x: np.ndarray, k: int, seed: int) -> dict:
    from curate_operators.prune.kmeans import assign, train

    n = len(x)
    k = max(1, min(k, n))
    if n == 0:
        return {"k": 0, "entropy": 0.0, "normalized": 0.0}
    x32 = unit(x).astype(np.float32)
    labels = assign(x32, train(x32, k, niter=20, seed=seed, sample=n))
    p = np.bincount(labels, minlength=k) / n
    p = p[p > 0]
    h = float(-(p * np.log(p)).sum())
    return {"k": k, "entropy": h, "normalized": h / np.log(k) if k > 1 else 0.0}


def self_bleu(texts: list[str]) -> float:
    """Mean sentence BLEU (0-100, sacrebleu's, effective order) of each text against all the others.

    Equal to averaging sacrebleu's `sentence_score(t_i, others)` but linear, not quadratic: each
    text is tokenized and counted once, and the most counts of an n-gram in the other texts is
    the largest count of any text, or the second largest for the text holding the largest.
    """
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    m = len(texts)
    if m < 2:
        return 0.0
    bleu = BLEU(effective_order=True)
    counted = [extract_all_word_ngrams(bleu._preprocess_segment(t), 1, bleu.max_ngram_order) for t in texts]
    top: dict[tuple, list] = {}  # n-gram -> [largest count, its text, second largest]
    for i, (grams, _) in enumerate(counted):
        for gram, c in grams.items():
            best = top.get(gram)
            if best is None:
                top[gram] = [c, i, 0]
            elif c > best[0]:
                best[2], best[0], best[1] = best[0], c, i
            elif c > best[2]:
                best[2] = c
    lens = np.array([n for _, n in counted])
    scores = []
    for i, (grams, hyp_len) in enumerate(counted):
        others = np.delete(lens, i)
        diff = np.abs(others - hyp_len)
        ref_len = int(others[diff == diff.min()].min())  # sacrebleu: the closest, then the shortest
        correct = [0] * bleu.max_ngram_order
        total = [0] * bleu.max_ngram_order
        for gram, c in grams.items():
            n = len(gram) - 1
            total[n] += c
            best = top[gram]
            correct[n] += min(c, best[2] if best[1] == i else best[0])
        scores.append(bleu._compute_score_from_stats([hyp_len, ref_len, *correct, *total]).score)
    return float(np.mean(scores))


def summarize(texts: list[str] | None, embeddings: np.ndarray | None, *, seed: int, clusters: int,
              bleu_sample: int, distinct: bool = True) -> dict:
    """Every metric the inputs allow, as a JSON-able dict (distinct-n only with `distinct`: a
    caller may count it otherwise)."""
    out: dict = {}
    if texts is not None:
        out["rows_measured"] = len(texts)
        for n in (1, 2, 3, 4) if distinct else ():
            out[f"distinct_{n}"] = round(distinct_n(texts, n), 6)
        out["compression_ratio"] = round(compression_ratio(texts), 6)
        rng = np.random.default_rng(seed)
        pick = sorted(rng.choice(len(texts), min(bleu_sample, len(texts)), replace=False)) if texts else []
        out["self_bleu"] = round(self_bleu([texts[i] for i in pick]), 4)
        out["self_bleu_sample"] = len(pick)
    if embeddings is not None:
        out["embedding_rows"] = len(embeddings)
        out["mean_pairwise_distance"] = round(mean_pairwise_distance(embeddings), 6)
        out["vendi"] = round(vendi(embeddings), 4)
        ce = cluster_entropy(embeddings, clusters, seed)
        out["cluster_entropy"] = round(ce["entropy"], 6)
        out["cluster_entropy_normalized"] = round(ce["normalized"], 6)
        out["clusters"] = ce["k"]
    return out
