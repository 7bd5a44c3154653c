"""chunk: about max_tokens per chunk on sentence boundaries, nothing of the text lost."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.synth.chunk import Chunk, ChunkParams


def _chunker(**kw):
    op = Chunk(ChunkParams(**kw))
    op.setup()
    return op


SENTENCES = st.lists(st.builds(lambda words: " ".join(words).capitalize() + ".",
                               st.lists(st.sampled_from(["cat", "sat", "on", "the", "mat", "dog", "ran"]),
                                        min_size=1, max_size=12)), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(sentences=SENTENCES, max_tokens=st.integers(1, 40))
@example(sentences=["Mr. Smith went to Washington.", "He arrived at 3.5 p.m. on Monday."], max_tokens=6)
def test_chunks_hold_whole_sentences_up_to_max_tokens_and_lose_nothing(sentences, max_tokens):
    op = _chunker(max_tokens=max_tokens)
    text = " ".join(sentences)
    chunks = op.chunks(text)
    assert " ".join(chunks).split() == text.split()  # every word, in order
    for chunk in chunks:
        pieces = op.splitter.segment(chunk)
        assert len(chunk.split()) <= max_tokens or len(pieces) == 1  # only a lone long sentence is larger
    for a, b in zip(chunks, chunks[1:]):  # greedy: the next chunk's first sentence did not fit
        first = op.splitter.segment(b)[0]
        assert len(a.split()) + len(first.split()) > max_tokens


def test_abbreviations_and_decimals_do_not_end_sentences():
    op = _chunker(max_tokens=6)
    assert op.chunks("Mr. Smith went to Washington. He paid 3.5 dollars.") == [
        "Mr. Smith went to Washington.", "He paid 3.5 dollars."]


def test_rows_become_chunks_with_index_and_parent_and_empty_rows_get_a_verdict():
    batch = pa.RecordBatch.from_pydict({"_id": ["a", "b", "c"], "text": ["One two. Three four. Five six.", "", None],
                                        "url": ["u1", "u2", "u3"]})
    children, verdict = _chunker(max_tokens=4).process(batch)
    assert children.column("text").to_pylist() == ["One two. Three four.", "Five six."]
    assert children.column("chunk_index").to_pylist() == [0, 1]
    assert children.column("_parent_id").to_pylist() == ["a", "a"]
    assert children.column("url").to_pylist() == ["u1", "u1"]
    assert verdict.keep.tolist() == [True, False, False] and verdict.reason == "no_text"
