"""GPT-3's redaction (Brown et al. 2020, appendix C): each matched span and `margin` characters on
either side are cut out of the text; of the pieces left, those shorter than `min_piece` characters
are discarded and the rest joined by a line break. Offsets are in characters (code points), so
they are right for any Unicode text.

With several checked columns, spans are in the joined text (columns joined by one line break) and
each column is cut by the part of each widened span that falls inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

PIECE_JOIN = "\n"


@dataclass
class Redacted:
    values: list[str]  # the checked columns' new texts
    pieces: int  # pieces left by the cuts, before the short ones were discarded
    cuts: int  # merged intervals cut out


def redact(values: list[str], spans: list[tuple[int, int]], margin: int, min_piece: int) -> Redacted:
    out, pieces, cuts, base = [], 0, 0, 0
    for value in values:
        end = base + len(value)
        local = sorted((max(s - margin, base) - base, min(e + margin, end) - base)
                       for s, e in spans if s - margin < end and e + margin > base)
        if not local:
            out.append(value)
        else:
            merged = _merge(local)
            cuts += len(merged)
            bounds = [0, *(x for interval in merged for x in interval), len(value)]
            kept = [value[a:b] for a, b in zip(bounds[::2], bounds[1::2]) if b > a]
            pieces += len(kept)
            out.append(PIECE_JOIN.join(k for k in kept if len(k) >= min_piece))
        base = end + 1  # the joining line break
    return Redacted(out, pieces, cuts)


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged = [list(intervals[0])]
    for a, b in intervals[1:]:
        if a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]
