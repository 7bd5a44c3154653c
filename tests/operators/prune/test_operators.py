"""semantic_dedup and density_prune as Globals: fit over batches, apply per batch by _ord;
the kept set equals the reference on the operator's own k-means, the summary, errors, edges."""

import json

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from curate_operators.prune import kmeans
from curate_operators.prune.density_prune import DensityPrune
from curate_operators.prune.semantic_dedup import SemanticDedup, default_k
from tests.operators.prune import reference
from tests.operators.prune.data import batches, clustered


def run(op, x, tmp_path, size=700):
    """Fit on batches of `size`, apply to batches of another size; (kept rows, details by row, state, batches out)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    state = op.fit(batches(x, size=size), tmp_path)
    kept, details, outs = [], {}, []
    for b in batches(x, size=333):
        result = op.apply(b, state)
        out, v = result if isinstance(result, tuple) else (b, result)
        ords = b.column("_ord").to_numpy()
        kept += ords[v.keep].tolist()
        if v.detail is not None:
            details.update({int(o): d for o, d, k in zip(ords, v.detail.to_pylist(), v.keep) if not k})
        outs.append(out.filter(pa.array(v.keep)))
    return set(kept), details, state, outs


def same_kmeans(x, k, niter, seed, train_rows=None):
    c = kmeans.train(x, k, niter=niter, seed=seed, sample=kmeans.train_rows(len(x), k, train_rows))
    return c, kmeans.assign(x, c)


@pytest.fixture(scope="module")
def dupes():
    """3000 rows in 12 blobs, 400 of them near-copies (noise 1e-3) of others, float16."""
    rng = np.random.default_rng(0)
    x = clustered(0, 3000, 32, centers=12).astype(np.float64)
    src = rng.choice(2600, 400, replace=False)
    x[2600:] = x[src] + 1e-3 * rng.normal(size=(400, 32))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float16)


def test_semantic_dedup_equals_the_reference_on_its_own_kmeans(dupes, tmp_path):
    op = SemanticDedup(SemanticDedup.Params(eps=0.02, k=6, eps_report=[0.001, 0.1]), seed=3)
    kept, details, state, _ = run(op, dupes, tmp_path)
    c, labels = same_kmeans(dupes, 6, 20, 3)
    removed = reference.semdedup_removed(dupes, c, labels, 0.02)
    assert kept == set(range(3000)) - removed
    assert 390 <= len(removed) <= 600  # the planted copies (and some close neighbours in 32 dims)
    s = state.summary()
    assert s["rows"] == 3000 and s["kept"] == len(kept) and s["k"] == 6
    assert s["kept_by_eps"]["0.02"] == len(kept)
    for eps in (0.001, 0.1):
        assert s["kept_by_eps"][str(eps)] == 3000 - len(reference.semdedup_removed(dupes, c, labels, eps))
    assert json.loads((tmp_path / "summary.json").read_text()) == s
    row = min(removed)
    words = details[row].split()  # similarity S to ID (cluster C)
    assert words[0] == "similarity" and 0.98 < float(words[1]) <= 1 and words[3].startswith("r")
    assert words[-1] == f"{labels[row]})"
    assert state.decisions.reason == "semantic_duplicate"


def test_density_prune_equals_the_reference_and_keeps_exactly_n(dupes, tmp_path):
    op = DensityPrune(DensityPrune.Params(fraction=0.3, k=8, niter=30, temperature=0.1), seed=5)
    kept, details, state, _ = run(op, dupes, tmp_path)
    assert len(kept) == 900
    c, labels = same_kmeans(dupes, 8, 30, 5)
    ref, q = reference.dbp_kept(dupes, c, labels, 900, temperature=0.1)
    assert kept == ref
    table = state.summary()["clusters"]
    assert table["quota"] == q == table["kept"] and sum(q) == 900
    assert table["size"] == np.bincount(labels, minlength=8).tolist()
    j = labels[min(set(range(3000)) - kept)]
    assert details[min(set(range(3000)) - kept)] == (
        f"cluster {j}: complexity {round(table['complexity'][j], 6)}, quota {q[j]} of {table['size'][j]}")


@pytest.mark.parametrize("op", [
    SemanticDedup(SemanticDedup.Params(k=5, order="random")),
    DensityPrune(DensityPrune.Params(count=777, k=7, mode="random")),
])
def test_same_input_and_seed_same_kept_set_whatever_the_batches(op, dupes, tmp_path):
    a = run(op, dupes, tmp_path / "a", size=1000)[0]
    b = run(op, dupes, tmp_path / "b", size=128)[0]
    assert a == b
    other = type(op)(op.params, seed=1)
    assert run(other, dupes, tmp_path / "c")[0] != a  # the seed matters (k-means and "random")


def test_count_above_the_rows_keeps_all_and_says_so(dupes, tmp_path):
    op = DensityPrune(DensityPrune.Params(count=10_000, k=4))
    kept, _, state, _ = run(op, dupes, tmp_path)
    assert kept == set(range(3000))
    assert state.summary()["target"] == 10_000 and state.summary()["kept"] == 3000


def test_columns_are_added_to_kept_rows(dupes, tmp_path):
    op = DensityPrune(DensityPrune.Params(fraction=0.5, k=4, columns=True))
    assert op.provides == ("_cluster", "prune_dist_to_centroid")
    _, _, _, outs = run(op, dupes, tmp_path)
    out = pa.Table.from_batches(outs)
    assert out.num_rows == 1500
    assert set(out.column("_cluster").to_pylist()) <= set(range(4))
    dist = out.column("prune_dist_to_centroid").to_numpy()
    assert ((dist >= 0) & (dist <= 2)).all()


def test_empty_input_and_fewer_rows_than_clusters(tmp_path):
    for op in (SemanticDedup(), DensityPrune(DensityPrune.Params(fraction=0.5))):
        (tmp_path / op.name).mkdir()
        state = op.fit(iter([]), tmp_path / op.name)
        assert state.summary() == {"rows": 0}
    x = clustered(0, 7, 8, centers=2)
    kept, _, state, _ = run(DensityPrune(DensityPrune.Params(count=3, k=100)), x, tmp_path / "small")
    assert len(kept) == 3 and state.summary()["k"] == 7


def test_params_are_checked():
    with pytest.raises(ValidationError, match="exactly one of fraction or count"):
        DensityPrune.Params()
    with pytest.raises(ValidationError, match="exactly one of fraction or count"):
        DensityPrune.Params(fraction=0.5, count=10)
    for bad in ({"eps": 0}, {"eps": 1}, {"eps_report": [0.5, 1.5]}, {"k": 0}, {"order": "hardest"}):
        with pytest.raises(ValidationError):
            SemanticDedup.Params(**bad)
    for bad in ({"fraction": 1.5}, {"count": 0}, {"fraction": 0.5, "temperature": 0},
                {"fraction": 0.5, "balance": 1.5}, {"fraction": 0.5, "complexity": "dbp"}):
        with pytest.raises(ValidationError):
            DensityPrune.Params(**bad)


def test_default_k_is_rows_over_1000_capped():
    assert [default_k(n) for n in (1, 999, 5000, 1_000_000, 10**9)] == [1, 1, 5, 1000, 50_000]
