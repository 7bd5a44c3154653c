"""Listing a prefix by its subprefixes many at once (listing.find_all) finds what one flat listing
(fs.find) finds, whatever the layout: objects at every level, deep chains, wide levels."""

import fsspec
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.io import listing, store

NAMES = st.sampled_from(["a", "b", "k=1", "k=2", "part.jsonl", "x.parquet"])


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.lists(NAMES, min_size=1, max_size=5), min_size=1, max_size=30, unique_by=tuple),
       in_flight=st.integers(1, 4))
@example(keys=[["x.parquet"]], in_flight=1)  # one object, no subprefix
@example(keys=[["a", "b", "a", "b", "a", "x.parquet"]], in_flight=4)  # a chain deeper than SPLIT_LEVELS
@example(keys=[["a", "x.parquet"], ["b", "x.parquet"], ["x.parquet"]], in_flight=1)  # split at once
def test_listing_subprefixes_at_once_finds_what_one_listing_finds(keys, in_flight):
    fs = fsspec.filesystem("memory")
    paths = {"/root/" + "/".join(parts) for parts in keys}
    paths = {p for p in paths if not any(q.startswith(p + "/") for q in paths)}  # a name is a file or a prefix
    try:
        for p in paths:
            fs.pipe(p, b"x")
        real = store.REQUESTS_IN_FLIGHT
        store.REQUESTS_IN_FLIGHT = in_flight  # few: the prefix is split level by level
        try:
            found = listing.find_all(fs, "/root")
        finally:
            store.REQUESTS_IN_FLIGHT = real
        assert found == fs.find("/root", detail=True)
        assert set(found) == paths
    finally:
        fs.rm("/root", recursive=True)
