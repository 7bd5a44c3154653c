"""A slow, per-document, plain-Python statement of the metric definitions in gopher_metrics.

The bulk implementation must agree with it on every document; it exists only for tests.
"""

from __future__ import annotations

import re
from collections import Counter

BULLETS = tuple("•●○◦▪■□‣⁃-*")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n")]


def _frac(num: float, den: float) -> float:
    return num / den if den else 0.0


def _repeats(items: list[str]) -> list[str]:
    seen, repeated = set(), []
    for item in items:
        if item in seen:
            repeated.append(item)
        seen.add(item)
    return repeated


def reference_metrics(text: str, stop_words=("the", "be", "to", "of", "and", "that", "have", "with"),
                      top_ns=(2, 3, 4), dup_ns=(5, 6, 7, 8, 9, 10)) -> dict[str, float]:
    words = text.split()
    n = len(words)
    lines = [line for line in _lines(text) if line]
    paragraphs, current = [], []
    for line in _lines(text) + [""]:
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    word_chars = sum(len(w) for w in words)
    out = {
        "word_count": n,
        "mean_word_length": _frac(word_chars, n),
        "hash_word_ratio": _frac(text.count("#"), n),
        "ellipsis_word_ratio": _frac(text.count("...") + text.count("…"), n),
        "bullet_line_frac": _frac(sum(line.startswith(BULLETS) for line in lines), len(lines)),
        "ellipsis_line_frac": _frac(sum(line.endswith(("...", "…")) for line in lines), len(lines)),
        "alpha_word_frac": _frac(sum(any(c.isalpha() for c in w) for w in words), n),
        "stop_words": sum(bool(re.search(rf"(?i)(?:^|\W){re.escape(s)}(?:\W|$)", text)) for s in stop_words),
        "dup_line_frac": _frac(len(_repeats(lines)), len(lines)),
        "dup_para_frac": _frac(len(_repeats(paragraphs)), len(paragraphs)),
        "dup_line_char_frac": _frac(sum(len(x) for x in _repeats(lines)), len(text)),
        "dup_para_char_frac": _frac(sum(len(x) for x in _repeats(paragraphs)), len(text)),
    }
    for size in sorted(set(top_ns) | set(dup_ns)):
        grams = [tuple(words[i:i + size]) for i in range(n - size + 1)]
        counts = Counter(grams)
        if size in top_ns:
            best = max(((c, sum(map(len, g))) for g, c in counts.items() if c > 1), default=(0, 0))
            out[f"top_{size}gram_char_frac"] = _frac(best[0] * best[1], word_chars)
        if size in dup_ns:
            covered = set()
            for i, g in enumerate(grams):
                if counts[g] > 1:
                    covered.update(range(i, i + size))
            out[f"dup_{size}gram_char_frac"] = _frac(sum(len(words[i]) for i in covered), word_chars)
    return out
