"""exact_dedup keeps one row per key: the first, or the best by a `prefer` column."""

import pyarrow as pa

from curate_operators.dedup.exact import ExactDedup


def dedup(rows: dict, tmp_path, **params):
    batch = pa.record_batch({**rows, "_id": [f"id{i}" for i in range(len(rows["text"]))],
                             "_ord": list(range(len(rows["text"])))})
    tmp_path.mkdir(parents=True, exist_ok=True)
    op = ExactDedup(ExactDedup.Params(**params))
    prepared = [b for b in (batch.slice(0, 2), batch.slice(2))]  # split batches: order is by _ord
    for i, b in enumerate(prepared):
        for name, col in op.prepare(b).items():
            prepared[i] = prepared[i].append_column(name, col)
    state = op.fit(prepared, tmp_path)
    return op.apply(batch, state)


def test_keeps_the_first_of_whitespace_variants(tmp_path):
    v = dedup({"text": ["a b", "a  b\n", "c", "a b"]}, tmp_path)
    assert v.keep.tolist() == [True, False, True, False]
    assert v.reason == "exact_duplicate"
    assert v.detail.to_pylist() == [None, "duplicate of id0", None, "duplicate of id0"]


def test_case_counts_unless_lowercase(tmp_path):
    assert dedup({"text": ["Hello", "hello"]}, tmp_path).keep.tolist() == [True, True]
    assert dedup({"text": ["Hello", "hello"]}, tmp_path / "x", lowercase=True).keep.tolist() == [True, False]


def test_prefer_column_picks_the_keeper(tmp_path):
    v = dedup({"text": ["x", "x", "x"], "score": [0.1, 0.9, 0.5]}, tmp_path, prefer="score")
    assert v.keep.tolist() == [False, True, False]
    v = dedup({"text": ["x", "x", "x"], "score": [0.1, 0.9, 0.5]}, tmp_path / "asc", prefer="score", prefer_order="asc")
    assert v.keep.tolist() == [True, False, False]


def test_key_over_several_columns(tmp_path):
    v = dedup({"text": ["a", "a", "a"], "url": ["u1", "u2", "u1"]}, tmp_path, columns=["text", "url"])
    assert v.keep.tolist() == [True, True, False]


def test_requires_follow_params():
    assert ExactDedup(ExactDedup.Params(columns=["url"], prefer="q")).requires == ("url", "q")
    assert ExactDedup(text_column="body").requires == ("body",)
