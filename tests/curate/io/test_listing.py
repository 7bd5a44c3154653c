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


# names as fsspec gives them, and the odd ones pathlib puts in its normal form (doubled or trailing
# separators, "." parts, a root)
PARTS = st.lists(st.sampled_from(["a", "k=1", "x.jsonl", ".", "..", "", ".hidden"]), max_size=5)


@settings(max_examples=300, deadline=None)
@given(parts=PARTS, absolute=st.booleans(), base=PARTS, base_absolute=st.booleans())
@example(parts=["a", "x.jsonl"], absolute=True, base=[], base_absolute=False)  # a root below no base
@example(parts=["a", "x.jsonl"], absolute=False, base=["a", "x.jsonl"], base_absolute=False)  # the base itself
def test_names_taken_apart_and_made_relative_as_pathlib_does(parts, absolute, base, base_absolute):
    from pathlib import PurePosixPath

    name = ("/" if absolute else "") + "/".join(parts)
    base_name = ("/" if base_absolute else "") + "/".join(base)
    path, base_path = PurePosixPath(name), PurePosixPath(base_name)
    assert listing.path_parts(name) == path.parts
    expected = path.relative_to(base_path) if path.is_relative_to(base_path) else PurePosixPath(path.name)
    assert listing.relative_name(listing.path_parts(name), base_path.parts) == expected.as_posix()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["s3:", "a", "x.JSONL.gz", "x.tar", ".", "..", "", ".h.jsonl", "b.", "c..d"]),
                min_size=1, max_size=4))
@example(["s3:", "", "b", "x.jsonl", ""])  # a trailing separator
def test_the_suffixes_that_tell_a_format_are_pathlibs(parts):
    from pathlib import Path

    from curate.io.sources import _suffixes

    assert _suffixes("/".join(parts)) == Path("/".join(parts)).suffixes
