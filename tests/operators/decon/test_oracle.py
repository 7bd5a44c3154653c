"""decontaminate against a brute-force implementation of the same rules (oracle.py), on real text
(Python's own reference manual, pydoc_data) and real code (the standard library's textwrap module):
identical flagged sets and identical redacted texts for several ngram, min_overlap and margin."""

import random
import re
import textwrap
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import HealthCheck, example, given, settings
from pydoc_data.topics import topics

from tests.operators.decon import oracle
from tests.operators.decon.helpers import run

PROSE = [t for _, t in sorted(topics.items()) if t.isascii()][:30]
CODE = [Path(textwrap.__file__).read_text()]
CORPUS = PROSE + CODE
SPLIT = re.compile(r"(?<=\s)")  # keeps each word with the whitespace after it


def _snippet(rnd: random.Random, words: int) -> str:
    text = rnd.choice(CORPUS)
    pieces = SPLIT.split(text)
    start = rnd.randrange(max(1, len(pieces) - words))
    return "".join(pieces[start:start + words])


def _vary(rnd: random.Random, text: str) -> str:
    """What must not hide a match: case, whitespace (line breaks, indentation) and punctuation."""
    out = []
    for w in re.findall(r"\w+", text):
        w = w.upper() if rnd.random() < 0.2 else w
        out.append(w + rnd.choice([" ", "  ", "\n    ", ", ", " - ", "\t", "...\n"]))
    return "".join(out)


@st.composite
def cases(draw):
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    items = [_snippet(rnd, rnd.choice([2, 5, 9, 13, 20, 40])) for _ in range(rnd.randint(1, 4))]
    docs = []
    for _ in range(rnd.randint(1, 6)):
        parts = [_snippet(rnd, rnd.randint(0, 60)) for _ in range(rnd.randint(0, 2))]
        if rnd.random() < 0.5:  # plant all or part of an item
            item = rnd.choice(items)
            if rnd.random() < 0.5:
                cut = SPLIT.split(item)
                item = "".join(cut[rnd.randrange(len(cut)):])
            parts.insert(rnd.randint(0, len(parts)), _vary(rnd, item) if rnd.random() < 0.5 else item)
        docs.append(" ".join(parts))
    return items, docs


def _check(items, docs, n, min_overlap, margin, min_piece):
    dropped, _, _ = run(items, docs, ngram=n, min_overlap=min_overlap)
    marked, _, _ = run(items, docs, ngram=n, min_overlap=min_overlap, mode="mark")
    redacted, _, _ = run(items, docs, ngram=n, min_overlap=min_overlap, mode="redact", margin=margin,
                         min_piece=min_piece, max_pieces=3)
    for d, doc in enumerate(docs):
        expect = oracle.contaminated(items, doc, n, min_overlap)
        assert (dropped[d] is None) == bool(expect), (doc, expect)
        if expect:
            top = max(e[1] for e in expect)
            assert marked[d]["contamination_ngrams"] == top
            assert marked[d]["contamination_items"] == len(expect)
            first = min(a for e in expect if e[1] == top for a, _ in e[2])
            assert marked[d]["contamination_offset"] == first
            text, pieces, cuts = oracle.redacted(doc, [s for e in expect for s in e[2]], margin, min_piece)
            if pieces > 3 or not text:
                assert redacted[d] is None
            else:
                assert redacted[d]["text"] == text and redacted[d]["contamination_redactions"] == cuts
        else:
            assert marked[d]["contamination_item"] is None
            assert redacted[d]["text"] == doc and redacted[d]["contamination_redactions"] == 0


ITEM_13 = "one two three four five six seven eight nine ten eleven twelve thirteen"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), n=st.sampled_from([1, 3, 8, 13]), min_overlap=st.sampled_from([None, 0.3, 0.5, 1.0]),
       margin=st.sampled_from([0, 7, 200]), min_piece=st.sampled_from([0, 20, 200]))
@example(case=([ITEM_13], [ITEM_13, "x " + ITEM_13, ITEM_13 + " y", "a\n" + ITEM_13.replace("six ", "six\n") + "\nb"]),
         n=13, min_overlap=None, margin=0, min_piece=0)  # exactly n words: whole, first, last, across a line break
@example(case=(["Two words", "a b c"], ["say two words now", "two\nwords", "a b", "A, B: c!"]),
         n=13, min_overlap=None, margin=2, min_piece=0)  # items shorter than n match whole
@example(case=([ITEM_13 + " fourteen"], ["one two three four five six seven eight nine ten eleven twelve"]),
         n=13, min_overlap=None, margin=0, min_piece=0)  # n - 1 words shared: not contaminated
def test_same_as_brute_force(case, n, min_overlap, margin, min_piece):
    _check(*case, n, min_overlap, margin, min_piece)
