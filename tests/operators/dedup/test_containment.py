"""containment_dedup against brute force, on planted cases, and for determinism."""

import random
import re

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic import ValidationError

from curate_operators.dedup import containment
from curate_operators.dedup.containment import ContainmentDedup
from tests.operators.dedup.helpers import brute_force_removed, run

VOCAB = [f"w{i}" for i in range(400)]


def doc(rnd: random.Random, n: int) -> list[str]:
    return [rnd.choice(VOCAB) for _ in range(n)]


def parse(detail: str) -> dict:
    """`contained in <id> (containment c)` as {"container": id, "containment": c}."""
    m = re.fullmatch(r"contained in (.*) \(containment ([0-9.e-]+)\)", detail)
    assert m, detail
    return {"container": m[1], "containment": float(m[2])}


def removed(verdict) -> dict[int, dict]:
    return {i: parse(d) for i, (k, d) in enumerate(zip(verdict.keep, verdict.detail.to_pylist())) if not k}


@st.composite
def corpora(draw):
    """Random documents plus excerpts, edited excerpts and near-copies of some of them."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    base = [doc(rnd, rnd.randint(3, 120)) for _ in range(draw(st.integers(2, 14)))]
    texts = [" ".join(d) for d in base]
    for _ in range(draw(st.integers(0, 10))):
        src = rnd.choice(base)
        k = max(1, int(len(src) * rnd.uniform(0.2, 1.0)))
        start = rnd.randint(0, len(src) - k)
        span = list(src[start : start + k])
        if rnd.random() < 0.5:
            span[rnd.randrange(len(span))] = rnd.choice(VOCAB)  # a light edit
        texts.append(" ".join(w.upper() if rnd.random() < 0.1 else w for w in span))
    rnd.shuffle(texts)
    return texts, draw(st.sampled_from([0.5, 0.8, 0.9]))


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpora())
def test_agrees_with_brute_force_containment(tmp_path_factory, case):
    texts, tau = case
    ids = [f"id{i:04d}" for i in range(len(texts))]
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(threshold=tau)), texts, tmp_path_factory.mktemp("c"), ids=ids)
    truth = brute_force_removed(texts, ids, tau)
    got = removed(verdict)
    assert set(got) <= set(truth)  # verification is exact on small documents: no false removal
    assert len(set(truth) - set(got)) <= len(truth) // 10  # LSH may miss a few near tau, not more
    for i, d in got.items():
        assert d["containment"] >= tau
        assert d["container"] in ids and d["container"] != ids[i]


BASE = " ".join(doc(random.Random(1), 300))
OTHER = " ".join(doc(random.Random(2), 250))


def test_planted_cases(tmp_path):
    words = BASE.split()
    excerpt = " ".join(words[100:160])  # 20% of the document, verbatim
    edited = "  ".join(w.upper() for w in words[30:240])  # 70%, case and whitespace changed
    licence = " ".join(doc(random.Random(3), 40))
    texts = [BASE, excerpt, edited, OTHER, licence + " " + " ".join(doc(random.Random(4), 200)),
             licence + " " + " ".join(doc(random.Random(5), 200)), ""]
    verdict, state = run(ContainmentDedup(), texts, tmp_path)
    got = removed(verdict)
    assert set(got) == {1, 2}  # boilerplate sharers, the unrelated doc and the empty doc stay
    assert got[1] == {"container": "id0000", "containment": 1.0}
    assert got[2]["container"] == "id0000" and got[2]["containment"] == 1.0
    assert verdict.reason == "contained" and state.removed == 2


def test_mutual_near_duplicates_keep_exactly_one(tmp_path):
    words = BASE.split()
    a = " ".join(words)
    b = " ".join(words[:150] + ["changed"] + words[151:])  # one word replaced: same size, C ~ 0.98 both ways
    verdict, _ = run(ContainmentDedup(), [b, a, a.upper()], tmp_path)
    assert verdict.keep.sum() == 1


def test_prefer_column_breaks_size_ties(tmp_path):
    texts = [BASE, BASE.upper(), BASE + " "]
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(prefer="q")), texts, tmp_path, extra={"q": [0.1, 0.9, 0.5]})
    assert verdict.keep.tolist() == [False, True, False]
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(prefer="q", prefer_order="asc")), texts, tmp_path / "asc",
                     extra={"q": [0.1, 0.9, 0.5]})
    assert verdict.keep.tolist() == [True, False, False]


def test_larger_document_wins_over_prefer(tmp_path):
    words = BASE.split()
    texts = [" ".join(words[:200]), BASE]
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(prefer="q")), texts, tmp_path, extra={"q": [1.0, 0.0]})
    assert verdict.keep.tolist() == [False, True]


def test_sampled_verification_of_long_documents(tmp_path):
    long = " ".join(doc(random.Random(9), 3000))
    part = " ".join(long.split()[500:1500])
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(verify_sample=256)), [part, long, OTHER], tmp_path)
    got = removed(verdict)
    assert set(got) == {0} and got[0]["containment"] == 1.0


def test_char_shingles(tmp_path):
    verdict, _ = run(ContainmentDedup(ContainmentDedup.Params(shingle="char", ngram=7)),
                     ["def add(a, b):\n    return a + b", "import os\n\ndef add(a, b):\n  return a + b\n\nprint(add(1, 2))"],
                     tmp_path)
    assert verdict.keep.tolist() == [False, True]


@pytest.mark.parametrize("batch_rows,workers,chunk,map_gb,join_rows", [(1, 1, 25_000, 2.0, None), (4, 2, 7, 0.0, None),
                                                                       (100, 2, 7, 2.0, None), (7, 1, 25_000, 2.0, 50)])
def test_deterministic_across_batching_threads_and_memory_settings(tmp_path, monkeypatch, batch_rows, workers, chunk,
                                                                   map_gb, join_rows):
    """Batches, threads, verification chunks, whether the sample file stays mapped and whether
    the band groups are joined whole or in parts of their keys change nothing."""
    rnd = random.Random(7)
    base = [doc(rnd, rnd.randint(20, 150)) for _ in range(30)]
    texts = [" ".join(d) for d in base] + [" ".join(d[: len(d) // 2]) for d in base[:10]] + [" ".join(d) for d in base[10:15]]
    reference, _ = run(ContainmentDedup(ContainmentDedup.Params(workers=1)), texts, tmp_path / "ref", batch_rows=9)
    if join_rows:  # 50 band rows a GB: every group of the 45 documents joined in many parts
        monkeypatch.setattr(containment, "JOIN_ROWS_PER_GB", join_rows)
    params = ContainmentDedup.Params(workers=workers, verify_chunk=chunk, sample_map_gb=map_gb)
    verdict, _ = run(ContainmentDedup(params), texts, tmp_path, batch_rows=batch_rows)
    assert verdict.keep.tolist() == reference.keep.tolist()
    assert verdict.detail.to_pylist() == reference.detail.to_pylist()
    assert (~verdict.keep).sum() == 15
    # the same candidate pairs, whole or in parts
    assert pq.read_table(tmp_path / "candidates.parquet").equals(pq.read_table(tmp_path / "ref" / "candidates.parquet"))
    if join_rows:
        assert len(list((tmp_path / "candidate_parts").glob("part-00000-*.parquet"))) > 1


def test_band_files_hold_their_rows_by_key_stretch_in_row_groups_a_part_of_the_key_range_can_skip(tmp_path):
    """A group joined in parts of its key range reads each file's row groups of that stretch only:
    the files hold their rows by stretch of the key range, in as many row groups, a quarter of
    the range in about a quarter of them; the keys (one-row bands' too, mixed) spread over the
    whole range."""
    rnd = random.Random(5)
    texts = [" ".join(doc(rnd, rnd.randint(20, 150))) for _ in range(200)]
    run(ContainmentDedup(), texts, tmp_path, batch_rows=100)
    files = list((tmp_path / "buckets").glob("*/part-*.parquet"))
    assert files
    for f in files:
        meta = pq.ParquetFile(f).metadata
        key = meta.schema.names.index("key")
        spans = [(meta.row_group(g).column(key).statistics.min, meta.row_group(g).column(key).statistics.max)
                 for g in range(meta.num_row_groups)]
        assert meta.num_row_groups > 4
        for q in range(4):  # each quarter of the key range, as a join in four parts reads it
            lo, hi = q * 2**62, (q + 1) * 2**62 - 1
            assert sum(a <= hi and b >= lo for a, b in spans) <= meta.num_row_groups // 4 + 2
    one_row = pq.read_table(next((tmp_path / "buckets").glob("r1-*"))).column("key").to_numpy()
    assert one_row.min() < 2**62 and one_row.max() > 3 * 2**62


def test_the_heads_the_screen_reads_are_each_samples_first_values(tmp_path):
    """The signature pass writes each row's first screen_sample sample values to a file of their
    own (read for every candidate pair); they are the samples' first values, row by row."""
    import numpy as np

    from curate_operators.dedup.store import RowStore
    from curate_operators.dedup.verify import SAMPLE_DTYPE

    rnd = random.Random(3)
    texts = [" ".join(doc(rnd, rnd.randint(1, 150))) for _ in range(40)] + [""]
    run(ContainmentDedup(ContainmentDedup.Params(screen_sample=16)), texts, tmp_path, batch_rows=7)
    samples, heads = RowStore(tmp_path / "samples.bin", SAMPLE_DTYPE), RowStore(tmp_path / "heads.bin", SAMPLE_DTYPE)
    ords = np.arange(len(texts))
    (sv, so), (hv, ho) = samples.gather(ords, 16), heads.gather(ords)
    assert np.array_equal(so, ho) and np.array_equal(sv, hv)
    assert (samples.lengths > 16).any() and (samples.lengths[: len(texts)] < 16).any()


def test_params_and_columns():
    op = ContainmentDedup(ContainmentDedup.Params(prefer="score"), text_column="body")
    assert op.requires == ("body", "score") and op.provides == ()
    with pytest.raises(ValidationError):
        ContainmentDedup.Params(threshold=1.5)
    with pytest.raises(ValidationError):
        ContainmentDedup.Params(shingle="token")


def test_corpus_without_shingles(tmp_path):
    verdict, state = run(ContainmentDedup(), ["", None, "   ", "!!"], tmp_path)
    assert verdict.keep.all() and state.removed == 0


def candidate_pairs(tmp_path, rows: list[tuple[int, int, int, int, int]], max_bucket: int = 1000) -> list[tuple[int, int]]:
    """containment's candidate pairs over hand-made band rows (r, band, key, ord, part)."""
    import pyarrow as pa

    from curate.ops import SERIAL
    from curate_operators.dedup.db import connect
    from curate_operators.dedup.lsh import ContainmentPlan
    from curate_operators.dedup.signature_pass import PassOutput

    groups = sorted({row[0] for row in rows})
    for group in groups:
        (tmp_path / "buckets" / f"r{group}-g0000").mkdir(parents=True, exist_ok=True)
        mine = [row for row in rows if row[0] == group]
        pq.write_table(pa.table({name: pa.array([row[i] for row in mine], kind) for i, (name, kind) in enumerate(
            [("r", pa.int16()), ("band", pa.int16()), ("key", pa.uint64()), ("ord", pa.int64()), ("part", pa.int16())])}),
            tmp_path / "buckets" / f"r{group}-g0000" / "part-000000.parquet")
    out = PassOutput("", tmp_path / "buckets", [f"r{g}-g0000" for g in groups], None, None, None, 5)
    con = connect(tmp_path, 1.0, 1)
    plan = ContainmentPlan(128, 0.8, 0.01, 1.41)
    pairs = pq.read_table(containment._candidate_pairs(con, out, plan, tmp_path, 1.0, 1, max_bucket, SERIAL)[0])
    return sorted(zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist()))


def test_a_single_shared_minimum_is_no_candidate_where_the_plan_asks_two(tmp_path):
    """Where the plan bands a partition pair one row a band, a pair must share two bands (one
    shared minimum is what any common phrase gives); a pair sharing two is a candidate, and so is
    one sharing a single band where the plan asks one (a pair of the same partition, r = 3)."""
    from curate_operators.dedup.lsh import ContainmentPlan

    plan = ContainmentPlan(128, 0.8, 0.01, 1.41)
    r, _, hits = plan.gap_banding[4]
    assert (r, hits) == (1, 2) and plan.gap_banding[0][2] == 1
    # ord 0 (partition 10) shares band 0 with ord 1 and bands 0 and 5 with ord 2 (partition 14);
    # ords 3 and 4 (partition 14) share one r = 3 band
    rows = [(1, 0, 7, 0, 10), (1, 0, 7, 1, 14), (1, 0, 7, 2, 14), (1, 5, 9, 0, 10), (1, 5, 9, 2, 14),
            (1, 3, 11, 1, 14), (3, 2, 13, 3, 14), (3, 2, 13, 4, 14)]
    assert candidate_pairs(tmp_path, rows) == [(0, 2), (3, 4)]


@pytest.mark.parametrize("max_bucket,found", [(4, [(0, 2)]), (3, [])])
def test_one_row_band_keys_of_more_than_max_bucket_documents_are_left_out(tmp_path, monkeypatch, max_bucket, found):
    """A one-row band key of 4 documents (a common shingle's hash) counts toward a pair's shared
    bands only while max_bucket allows 4; a key of several rows (a near-copy's band) always counts,
    however many documents share it. (Every document counted: no sample.)"""
    monkeypatch.setattr(containment, "KEY_COUNT_SAMPLE", 1)
    rows = [(1, 0, 7, 0, 10), (1, 0, 7, 1, 14), (1, 0, 7, 2, 14), (1, 0, 7, 3, 14), (1, 5, 9, 0, 10), (1, 5, 9, 2, 14),
            *[(3, 2, 13, ord_, 14) for ord_ in (4, 5, 6, 7)]]
    copies = [(a, b) for a in (4, 5, 6, 7) for b in (4, 5, 6, 7) if a < b]
    assert candidate_pairs(tmp_path, rows, max_bucket) == sorted(found + copies)


@pytest.mark.parametrize("ords,kept", [((0, 16, 32, 48), False), ((0, 1, 2, 3), True)])
def test_max_bucket_is_estimated_on_every_sampled_document(tmp_path, ords, kept):
    """The count is of the documents whose _ord is a multiple of KEY_COUNT_SAMPLE, scaled up: a key
    of 4 sampled documents stands for 64 (over max_bucket 50), one of 1 sampled for 16."""
    q, *c = ords
    rows = [(1, 0, 7, q, 10), *[(1, 0, 7, o, 14) for o in c], (1, 5, 9, q, 10), (1, 5, 9, c[0], 14)]
    assert candidate_pairs(tmp_path, rows, 50) == ([(q, c[0])] if kept else [])
