"""A brute-force decontamination with the same rules, written independently of the operator: every
n-gram of every item (as a tuple of words) against every window of every document, Python sets,
and redaction by a character mask. Words: NFKC, lower case, runs of \\w (Python's `re`, which agrees
with the operator's tokeniser on the texts the tests give it)."""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"\w+")


def words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) with offsets in `text`, for texts whose normalisation keeps every
    character's length (the tests' texts)."""
    norm = unicodedata.normalize("NFKC", text).lower()
    assert len(norm) == len(text), "oracle texts keep their length under NFKC + lower()"
    return [(m.group(), m.start(), m.end()) for m in WORD.finditer(norm)]


def grams(item: str, n: int) -> set[tuple[str, ...]]:
    w = [x for x, _, _ in words(item)]
    if len(w) >= n:
        return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}
    return {tuple(w)} if w else set()


def contaminated(items: list[str], doc: str, n: int, min_overlap: float | None) -> list[tuple[int, int, list]]:
    """(item, matched n-grams, [(start char, end char) of each matching window]) for each item the rule accepts."""
    w = words(doc)
    out = []
    for i, item in enumerate(items):
        g = grams(item, n)
        if not g:
            continue
        k = len(next(iter(g)))
        windows = [(tuple(x for x, _, _ in w[s:s + k]), w[s][1], w[s + k - 1][2]) for s in range(len(w) - k + 1)]
        found = {t for t, _, _ in windows if t in g}
        ok = len(found) >= 1 if min_overlap is None else len(found) / len(g) >= min_overlap
        if ok:
            out.append((i, len(found), [(a, b) for t, a, b in windows if t in g]))
    return out


def redacted(doc: str, spans: list[tuple[int, int]], margin: int, min_piece: int) -> tuple[str, int, int]:
    """(text, pieces, cuts) by a mask of removed characters."""
    gone = [False] * len(doc)
    for a, b in spans:
        for c in range(max(0, a - margin), min(len(doc), b + margin)):
            gone[c] = True
    pieces, cuts, current, prev = [], 0, [], None
    for ch, g in zip(doc, gone):
        if g and prev is not True:
            cuts += 1
        if not g:
            current.append(ch)
        elif current:
            pieces.append("".join(current))
            current = []
        prev = g
    if current:
        pieces.append("".join(current))
    return "\n".join(p for p in pieces if len(p) >= min_piece), len(pieces), cuts
