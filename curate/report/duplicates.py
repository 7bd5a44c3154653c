"""Duplicate clusters of every dedup step: how many clusters of each size, and the largest ones
with two members side by side (the row kept and one it removed).

A dedup step's trace detail names the row each removed one duplicates (operators/dedup and
operators/prune): `duplicate of <id>` (exact_dedup), `{"duplicate_of": <id>, ...}`
(minhash_dedup), `contained in <id> (containment c)` (containment_dedup; `{"container": <id>,
...}` in runs before it), `similarity s to <id> (cluster k)` (semantic_dedup). A cluster is that
row and all naming it; a step is a dedup step when its details name rows. Counted by DuckDB (it
spills a large step's cluster table), drawn bounded: the size distribution and the LARGEST
clusters. A near-dedup step whose details carry a score (containment, MinHash's Jaccard
estimate, SemDeDup's similarity) also gets that score's distribution over the rows it removed
and the LARGEST pairs nearest its threshold (the lowest scores removed): the largest clusters
are mostly exact copies (containment 1.0), the pairs near the threshold are where the step
decided.
"""

from __future__ import annotations

import html

from curate.report.parts import clip, figure, section, table
from curate.report.scan import Run, files, ident, quote

LARGEST = 5
PROBE = 200  # trace rows read to tell a dedup step from a filter

NAMED = r"""CASE
    WHEN _detail LIKE 'duplicate of %' THEN substr(_detail, 14)
    WHEN regexp_matches(_detail, '^contained in .* \(containment [0-9.e-]+\)$')
        THEN regexp_extract(_detail, '^contained in (.*) \(containment [0-9.e-]+\)$', 1)
    WHEN _detail LIKE '{%' AND json_valid(_detail)
        THEN coalesce(json_extract_string(_detail, '$.duplicate_of'), json_extract_string(_detail, '$.container'))
    WHEN regexp_matches(_detail, '^similarity \S+ to .* \(cluster \d+\)$')
        THEN regexp_extract(_detail, '^similarity \S+ to (.*) \(cluster \d+\)$', 1)
    END"""


SCORE = r"""TRY_CAST(CASE
    WHEN regexp_matches(_detail, '^contained in .* \(containment [0-9.e-]+\)$')
        THEN regexp_extract(_detail, '\(containment ([0-9.e-]+)\)$', 1)
    WHEN _detail LIKE '{%' AND json_valid(_detail)
        THEN coalesce(json_extract_string(_detail, '$.jaccard_estimate'), json_extract_string(_detail, '$.containment'),
                      json_extract_string(_detail, '$.similarity'))
    WHEN regexp_matches(_detail, '^similarity \S+ to .* \(cluster \d+\)$')
        THEN regexp_extract(_detail, '^similarity (\S+) to ', 1)
    END AS DOUBLE)"""
BINS = 20


def score_bins(run: Run, step: str) -> list[tuple[float, int]]:
    """(lower edge, removed rows) of the step's scores in BINS equal bins from the lowest score to
    the highest; [] where its details carry no score (exact_dedup)."""
    found = run.trace_sql(step, "min(s), max(s)", where=f", LATERAL (SELECT {SCORE} AS s) WHERE s IS NOT NULL")
    low, high = found[0] if found else (None, None)
    if low is None:
        return []
    width = (high - low) / BINS or 1.0
    counted = dict(
        run.trace_sql(
            step,
            f"least(floor((s - {low!r}) / {width!r}), {BINS - 1})::INT AS b, count(*)",
            where=f", LATERAL (SELECT {SCORE} AS s) WHERE s IS NOT NULL",
            tail="GROUP BY b",
        )
    )
    edges = range(BINS) if high > low else range(1)
    return [(round(low + b * width, 6), int(counted.get(b, 0))) for b in edges]


def nearest_threshold(run: Run, step: str) -> list[dict]:
    """The LARGEST removed rows of the lowest scores (nearest the step's threshold), each beside
    the row it was removed as a duplicate of."""
    text = run.text_column
    member = ident(text) if text in run.trace_columns[step] else "NULL"
    found = run.trace_sql(
        step,
        f"k, s, _trace_id, _detail, {member}",
        where=f", LATERAL (SELECT {NAMED} AS k, {SCORE} AS s) WHERE k IS NOT NULL AND s IS NOT NULL",
        tail=f"ORDER BY s, _trace_id LIMIT {LARGEST}",
    )
    kept = texts(run, [f[0] for f in found])
    return [
        {"score": s, "kept_id": k, "kept_text": kept.get(k), "member_id": mid, "detail": detail, "member_text": mtext}
        for k, s, mid, detail, mtext in found
    ]


def dedup_steps(run: Run) -> list[str]:
    """The steps whose trace details name the row a removed one duplicates."""
    return [
        step
        for step in run.traces
        if run.sql(
            f"SELECT count(*) FROM (SELECT {NAMED} AS k FROM (SELECT detail AS _detail FROM "
            f"read_parquet({quote(run.traces[step])}) LIMIT {PROBE})) WHERE k IS NOT NULL"
        )[0][0]
    ]


def sizes(run: Run, step: str) -> list[tuple[int, int]]:
    """(cluster size, clusters of that size): a cluster is its kept row and those naming it."""
    return run.sql(f"""SELECT size, count(*) FROM (
        SELECT count(*) + 1 AS size FROM (SELECT {NAMED} AS k FROM (SELECT detail AS _detail
            FROM read_parquet({quote(run.traces[step])}))) WHERE k IS NOT NULL GROUP BY k)
        GROUP BY size ORDER BY size""")


def largest(run: Run, step: str) -> list[dict]:
    """The LARGEST clusters: size, the named row's id and one removed member's id, detail and text."""
    text = run.text_column
    member = f"arg_min({ident(text)}, _trace_id)" if text in run.trace_columns[step] else "NULL"
    found = run.trace_sql(
        step,
        f"k, count(*) + 1 AS size, min(_trace_id), arg_min(_detail, _trace_id), {member}",
        where=f", LATERAL (SELECT {NAMED} AS k) WHERE k IS NOT NULL",
        tail=f"GROUP BY k ORDER BY size DESC, k LIMIT {LARGEST}",
    )
    kept = texts(run, [f[0] for f in found])
    return [
        {"size": size, "kept_id": k, "kept_text": kept.get(k), "member_id": mid, "detail": detail, "member_text": mtext}
        for k, size, mid, detail, mtext in found
    ]


def texts(run: Run, ids: list[str]) -> dict[str, str]:
    """The text of each of `ids`: from the output, or from the trace of the step that removed it
    later (a row kept by one dedup can fall to the next step)."""
    text = run.text_column
    wanted = ", ".join(quote(i) for i in ids)
    found: dict[str, str] = {}
    if not ids:
        return found
    if run.data and text in run.data_columns:
        found |= dict(run.sql(f"SELECT _id, {ident(text)} FROM {files(run.data)} WHERE _id IN ({wanted})"))
    for step, columns in run.trace_columns.items():
        if len(found) == len(ids):
            break
        if text in columns:
            found |= dict(run.trace_sql(step, f"_trace_id, {ident(text)}", where=f"WHERE _trace_id IN ({wanted})"))
    return found


def _side_by_side(clusters: list[dict], first: str = "rows") -> str:
    rows = "".join(
        f'<tr><td class="num">{format(c["size"], ",") if "size" in c else format(c["score"], "g")}</td>'
        f'<td class="sample"><b>{html.escape(c["kept_id"])}</b>\n{html.escape(clip(c["kept_text"]))}</td>'
        f'<td class="sample"><b>{html.escape(c["member_id"])}</b> — {html.escape(c["detail"] or "")}\n'
        f"{html.escape(clip(c['member_text']))}</td></tr>"
        for c in clusters
    )
    return (
        f'<table class="clusters"><tr><th>{first}</th><th>the row the others duplicate</th>'
        f"<th>one row removed as its duplicate</th></tr>{rows}</table>"
    )


def _figure(go, step: str, n: int, counts: list[tuple[int, int]]) -> str:
    fig = go.Figure(go.Bar(x=[str(s) for s, _ in counts], y=[c for _, c in counts], marker_color="#1f77b4"))
    fig.update_layout(
        title=f"{step}: clusters by size",
        xaxis=dict(title="rows in the cluster", type="category"),
        yaxis_title="clusters",
    )
    return f'<div class="hist">{figure(fig, f"dup-sizes-{n}", 280)}</div>'


def _score_figure(go, step: str, n: int, bins: list[tuple[float, int]]) -> str:
    fig = go.Figure(go.Bar(x=[f"{edge:g}" for edge, _ in bins], y=[c for _, c in bins], marker_color="#ff7f0e"))
    fig.update_layout(
        title=f"{step}: score of the rows removed",
        xaxis=dict(title="score (from)", type="category"),
        yaxis_title="rows removed",
    )
    return f'<div class="hist">{figure(fig, f"dup-scores-{n}", 280)}</div>'


def _near(go, step: str, n: int, run: Run) -> str:
    bins = score_bins(run, step)
    if not bins:
        return ""
    return (
        f"{_score_figure(go, step, n, bins)}<h4>the {LARGEST} rows removed nearest the threshold "
        f"(lowest score)</h4>{_side_by_side(nearest_threshold(run, step), 'score')}"
    )


def render(go, run: Run) -> str:
    parts = []
    for n, step in enumerate(dedup_steps(run)):
        counts = sizes(run, step)
        clusters = sum(c for _, c in counts)
        removed = sum((s - 1) * c for s, c in counts)
        summary = table(["cluster size", "clusters"], counts[:40], numeric={0, 1}) if len(counts) <= 40 else ""
        parts.append(
            f"<h3>{html.escape(step)}</h3><p>{clusters:,} clusters; {removed:,} rows removed as duplicates "
            f"of another row.</p>{summary}{_figure(go, step, n, counts) if len(counts) > 1 else ''}"
            f"<h4>the {LARGEST} largest clusters</h4>{_side_by_side(largest(run, step))}"
            f"{_near(go, step, n, run)}"
        )
    if not parts:
        return ""
    return section("duplicates", "Duplicate clusters", "".join(parts))
